"""What a replay measures, gathered as it runs: each job is recorded once, as it ends
(`gpuq.sim.retired`, compiled with the event loop), into plain float arrays; nothing else of it
is kept.

Definitions (README, "gpuq replay"):
- *wait*: first start − submit (a requeued job's later waits are not counted again); jobs that
  never started before the replay's horizon are left out and counted as `unfinished`;
  percentiles are nearest-rank (`gpuq.sla.nearest_rank`);
- *SLA breaches*: jobs of a class whose wait exceeded the class's `target_p95`;
- *utilisation*: GPU-time held by jobs / (GPUs × makespan), *useful utilisation* the same
  without lost work and checkpoint overhead; *makespan*: first submit to last event;
- *preemptions*: per job and per GPU-hour the trace asked for; the most in any 24 h of one job;
- *mean time between preemptions* (for Young/Daly): the jobs' running time / preemptions.
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Final

from gpuq.model import JobClass
from gpuq.policy.config import Policy
from gpuq.policy.thrash import Thrash
from gpuq.replay.model import ClassStats, LogEntry, ReplayResult, WaitStats
from gpuq.sim.retired import Retired, most_in_a_day
from gpuq.sla import nearest_rank

__all__ = ["ALL", "Series", "class_stats", "most_in_a_day", "percentiles", "wait_stats"]

#: the key of every job together in `ReplayResult.wait_percentiles`
ALL: Final = "all"
#: the most points of `ReplayResult.utilisation_series`
SERIES_POINTS: Final = 400


def wait_stats(ordered: Sequence[float], total: float) -> WaitStats:
    """Statistics of ascending waits whose sum is `total`."""
    n = len(ordered)
    if n == 0:
        return WaitStats()
    return WaitStats(n, total / n, nearest_rank(ordered, 0.50) or 0.0, nearest_rank(ordered, 0.95) or 0.0,
                     nearest_rank(ordered, 0.99) or 0.0, ordered[-1])  # fmt: skip


def percentiles(ordered: Sequence[float]) -> tuple[float, ...]:
    """The wait at each percentile 0, 1, …, 100 (nearest-rank; 0 is the shortest)."""
    if not ordered:
        return ()
    return tuple(nearest_rank(ordered, q / 100) or 0.0 for q in range(101))


def class_stats(retired: Retired, classes: Mapping[str, JobClass], jobs_per_class: Mapping[str, int],
                policy: Policy) -> tuple[dict[str, ClassStats], dict[str, tuple[float, ...]]]:  # fmt: skip
    """Per class with jobs (by name): its wait statistics and SLA breaches; and its wait
    percentiles."""
    stats: dict[str, ClassStats] = {}
    curves: dict[str, tuple[float, ...]] = {}
    for name in sorted(n for n, count in jobs_per_class.items() if count):
        ordered = sorted(retired.by_class[name])
        target = policy.resolve_class(classes.get(name), name).target_p95_s
        breaches = len(ordered) - bisect.bisect_right(ordered, target) if target is not None else 0
        stats[name] = ClassStats(wait_stats(ordered, retired.totals[name]), jobs_per_class[name], breaches, target)
        curves[name] = percentiles(ordered)
    return stats, curves


#: buckets a `Series` holds at most: past it, neighbours merge and buckets grow twice as wide
SERIES_CAP: Final = 16 * SERIES_POINTS


class Series:
    """Busy GPU-time per time bucket, from the simulator's idle-time integral read at each
    bucket's end; coarsened (whole buckets merged) to at most `SERIES_POINTS` at the end.

    A replay steps from bucket to bucket, so a run far longer than its submits (a job of years,
    a backlog of months) would take a step, and a bucket, per `width` of simulated time. Past
    `SERIES_CAP` buckets neighbours merge and `width` doubles: the steps grow with the run and
    their number with its logarithm (the replay's cost follows its events, not simulated time)."""

    __slots__ = ("width", "busy")

    def __init__(self, width: float) -> None:
        self.width = width
        self.busy = array("d")

    def add(self, busy_gpu_s: float) -> None:
        """The busy GPU-time of the bucket just ended (`width` wide); the next one is `width`
        wide too, twice what it was when this one filled the series."""
        busy = self.busy
        busy.append(busy_gpu_s)
        if len(busy) >= SERIES_CAP:  # (an even count: the pairs cover the same span)
            self.busy = array("d", (busy[i] + busy[i + 1] for i in range(0, len(busy), 2)))
            self.width *= 2

    def points(self, capacity: int, end: float) -> tuple[tuple[float, float], ...]:
        """(bucket start in seconds since the first submit, busy share of the capacity)."""
        busy = list(self.busy)
        width = self.width
        factor = -(-len(busy) // SERIES_POINTS) if busy else 1
        if factor > 1:
            busy = [sum(busy[i : i + factor]) for i in range(0, len(busy), factor)]
            width *= factor
        out = []
        for i, held in enumerate(busy):
            span = min(width, end - i * width)
            if span <= 0:
                break
            out.append((i * width, min(1.0, held / (capacity * span))))
        return tuple(out)


def result(
    *,
    strategy: str,
    retired: Retired,
    series: Series,
    classes: Sequence[JobClass],
    jobs_per_class: Mapping[str, int],
    policy: Policy,
    capacity: int,
    makespan: float,
    busy_gpu_s: float,
    idle_gpu_s: float,
    lost_gpu_s: float,
    overhead_gpu_s: float,
    gpu_seconds: float,
    preemptions: int,
    events: int,
    sim_wall_s: float,
    suggested: float | None,
    unfinished: int,
    skipped: int,
    never_started: int,
    origin: float,
    nodes: int,
    gpus_per_node: int,
    log: tuple[LogEntry, ...],
    thrash: Thrash | None = None,
) -> ReplayResult:
    """The `ReplayResult` of a finished run."""
    jobs = sum(jobs_per_class.values())
    ordered = sorted(retired.waits)
    stats, curves = class_stats(retired, {c.name: c for c in classes}, jobs_per_class, policy)
    curves[ALL] = percentiles(ordered)
    area = capacity * makespan
    return ReplayResult(
        strategy=strategy,
        jobs=jobs,
        gpu_hours=gpu_seconds / 3600.0,
        utilisation=busy_gpu_s / area if area > 0 else 0.0,
        useful_utilisation=max(0.0, busy_gpu_s - lost_gpu_s - overhead_gpu_s) / area if area > 0 else 0.0,
        wait=wait_stats(ordered, sum(retired.totals.values())),
        classes=MappingProxyType(stats),
        preemptions=preemptions,
        preemptions_per_job=preemptions / jobs if jobs else 0.0,
        preemptions_per_gpu_hour=preemptions / (gpu_seconds / 3600.0) if gpu_seconds > 0 else 0.0,
        max_preemptions_per_job_day=retired.most_per_day,
        busy_gpu_hours=busy_gpu_s / 3600.0,
        idle_gpu_hours=idle_gpu_s / 3600.0,
        lost_gpu_hours=lost_gpu_s / 3600.0,
        checkpoint_overhead_gpu_hours=overhead_gpu_s / 3600.0,
        makespan_s=makespan,
        events=events,
        sim_wall_s=sim_wall_s,
        suggested_checkpoint_interval_s=suggested,
        log=log,
        utilisation_series=series.points(capacity, makespan),
        wait_percentiles=MappingProxyType(curves),
        cancelled=retired.cancelled,
        unfinished=unfinished,
        skipped=skipped,
        never_started=never_started,
        origin_s=origin,
        nodes=nodes,
        gpus_per_node=gpus_per_node,
        thrash=thrash,
    )
