"""The checkpoint model of a replay: which interval each job saves at, what saving and restoring
cost, and the interval Young and Daly's rule suggests for the preemptions a replay saw.

The costs themselves are applied by the simulator (`Simulator(checkpoint_cost_s=…,
restore_cost_s=…)`): every save takes the save cost after each interval of work, a restart
from saved progress first restores; both lengthen the run and count as overhead, not as work.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from gpuq.errors import BadInput
from gpuq.replay.model import CheckpointModel

__all__ = ["check_model", "interval_for", "recorded_interval", "young_daly"]


def _finite(value: float, what: str) -> None:
    if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
        raise BadInput(f"{what}: expected a duration of 0 s or more, got {value!r}")


def check_model(model: CheckpointModel) -> None:
    """BadInput for a cost or an interval that is negative or not finite."""
    if model.save_cost_s is not None:
        _finite(model.save_cost_s, "checkpoint cost")
    if model.restore_cost_s is not None:
        _finite(model.restore_cost_s, "restore cost")
    if model.interval_s is not None:
        _finite(model.interval_s, "checkpoint interval")
    for name, interval in model.class_intervals.items():
        _finite(interval, f"checkpoint interval of class {name!r}")


def recorded_interval(interval_s: float | None, checkpoints: Sequence[float], start: float | None) -> float | None:
    """The interval a trace recorded for a job: its own, else the mean spacing of the checkpoint
    times it recorded (counted from its recorded start when known), else None."""
    if interval_s is not None:
        return interval_s if math.isfinite(interval_s) and interval_s > 0 else None
    times = sorted(t for t in checkpoints if math.isfinite(t))
    if start is not None and math.isfinite(start):
        times = [start, *(t for t in times if t > start)]
    if len(times) < 2 or times[-1] <= times[0]:
        return None
    return (times[-1] - times[0]) / (len(times) - 1)


def interval_for(model: CheckpointModel, job_class: str, recorded: float | None, policy_default: float) -> float | None:
    """The interval a job saves at in the replay: its class's (`class_intervals`), else the
    model's (`interval_s`), else the one the trace recorded for it, else the policy's default;
    the first of these that is given decides, and 0 there means the job saves nothing (None)."""
    chosen: float | None = model.class_intervals.get(job_class)
    if chosen is None:
        chosen = model.interval_s
    if chosen is None:
        chosen = recorded
    if chosen is None:
        chosen = policy_default
    return chosen if chosen > 0 else None


def young_daly(save_cost_s: float, mean_time_between_preemptions_s: float | None) -> float | None:
    """Young/Daly's first-order optimum interval, sqrt(2 × save cost × mean time between
    preemptions); None without a save cost or without preemptions."""
    if save_cost_s <= 0 or mean_time_between_preemptions_s is None or mean_time_between_preemptions_s <= 0:
        return None
    return math.sqrt(2.0 * save_cost_s * mean_time_between_preemptions_s)
