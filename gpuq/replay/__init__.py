"""Replay: a trace's jobs run through the policy on the simulated cluster, measured.

`run.replay(jobs, config)` and `run.compare(jobs, config, strategies)`; what a replay is asked
(`model.ReplayConfig`, `model.CheckpointModel`) and what it reports (`model.ReplayResult`);
the trace's conversion (`prepare`), the measurements (`metrics`), the checkpoint model
(`checkpoint`). Core: no front-end library, no I/O.
"""

from gpuq.replay.model import CheckpointModel, ClassStats, ReplayConfig, ReplayResult, WaitStats

__all__ = ["CheckpointModel", "ClassStats", "ReplayConfig", "ReplayResult", "WaitStats"]
