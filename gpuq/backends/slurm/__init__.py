"""The Slurm backend: `SlurmBackend` reads squeue/scontrol/sinfo/sacct and acts via scontrol."""

from gpuq.backends.slurm.backend import SlurmBackend

__all__ = ["SlurmBackend"]
