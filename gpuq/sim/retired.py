"""What each ended job leaves for a replay's measures, gathered as it ends (`Simulator.retired`).

Compiled with the event loop (a replay ends every job of its trace; an interpreted call per job
cost as much as the rest of retiring it): each job is recorded once, its wait into two lists of
floats (overall and its class's), and nothing else of it is kept. Lists, not `array('d')`:
compiled, an array's `append` is looked up by name and parses its argument at every call, a
list's is one C call. `gpuq.replay.metrics` turns them into the replay's figures.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpuq.model import DAY_S, JobClass
from gpuq.sim.jobs import CANCELLED, RUNNING, SimJob

__all__ = ["Retired", "most_in_a_day"]


def most_in_a_day(times: Sequence[float]) -> int:
    """The most of `times` (ascending) within any 24 h window (t − 24 h, t]."""
    best = 0
    low = 0
    for high, t in enumerate(times):
        while times[low] <= t - DAY_S:
            low += 1
        if high - low + 1 > best:
            best = high - low + 1
    return best


class Retired:
    """Each ended job's numbers (`add`, as the simulator retires it)."""

    __slots__ = ("waits", "by_class", "totals", "run_s", "most_per_day", "cancelled", "last_end")

    def __init__(self, classes: Sequence[JobClass]) -> None:
        self.waits: list[float] = []
        self.by_class: dict[str, list[float]] = {c.name: [] for c in classes}
        self.totals: dict[str, float] = dict.fromkeys(self.by_class, 0.0)
        self.run_s = 0.0  # seconds the jobs ran (each job counted once, whatever its GPUs)
        self.most_per_day = 0
        self.cancelled = 0
        self.last_end = 0.0  # when the last job ended

    def add(self, job: SimJob) -> None:
        start = job.first_start
        if start is not None:
            wait = start - job.submit
            if wait < 0:  # (never: a job starts at or after its submission; rounding aside)
                wait = 0.0
            self.waits.append(wait)
            self.by_class[job.cls].append(wait)
            totals = self.totals
            totals[job.cls] = totals[job.cls] + wait
        self.run_s += job.gpu_s / job.gpus
        times = job.preempt_times
        if times and len(times) > self.most_per_day:
            self.most_per_day = max(self.most_per_day, most_in_a_day(times))
        if job.state == CANCELLED:
            self.cancelled += 1
        self.last_end = job.end  # type: ignore[assignment]  # (jobs end in time order)

    def unfinished(self, jobs: Sequence[SimJob], now: float) -> None:
        """Jobs still in the simulator at the horizon: their running time and preemptions count
        (their waits only when they started)."""
        for job in jobs:
            ran = job.gpu_s / job.gpus
            if job.run_start is not None and job.state == RUNNING:
                ran += now - job.run_start
            self.run_s += ran
            if job.preempt_times:
                self.most_per_day = max(self.most_per_day, most_in_a_day(job.preempt_times))
            if job.first_start is not None:
                wait = max(0.0, job.first_start - job.submit)
                self.waits.append(wait)
                self.by_class[job.cls].append(wait)
                totals = self.totals
                totals[job.cls] = totals[job.cls] + wait
