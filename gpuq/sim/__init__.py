"""The embedded simulated cluster: a pure discrete-event simulator scheduling with the policy engine.

No I/O, no clock: the demo backend (`gpuq.backends.demo`) persists its state and maps wall time
to simulated time.
"""

from gpuq.sim.planner import Decision, Planner, engine_planner
from gpuq.sim.simulator import STATE_VERSION, Simulator
from gpuq.sim.workload import DEFAULT_CLASSES, ClusterSpec, JobSpec, WorkloadStream, generate_jobs, one_gpu_jobs

__all__ = [
    "DEFAULT_CLASSES",
    "STATE_VERSION",
    "ClusterSpec",
    "Decision",
    "JobSpec",
    "Planner",
    "Simulator",
    "WorkloadStream",
    "engine_planner",
    "generate_jobs",
    "one_gpu_jobs",
]
