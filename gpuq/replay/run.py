"""Replaying a trace through the policy on the event-driven simulator (`gpuq.sim.Simulator`).

`replay` converts the trace (`prepare`), runs it on a simulated cluster of the configured
shape under the policy — the strategy, if given, in place of the policy's mode; with
`preemption=False` every class is made non-preemptible, so the schedule is plain priority
order with backfill — and measures it (`metrics`). `compare` runs several strategies on the
same converted trace.

Deterministic: nothing in a replay is random, so the same trace and configuration give the same
result (apart from `sim_wall_s`); `ReplayConfig.seed` is the seed of the trace's class rules
(`open_trace`), recorded with the configuration.

A replay stops at a horizon far past the last submit (`horizon`): with aging and no minimum
runtime, two jobs can take turns preempting each other for ever. Jobs still queued or
running then are counted as `unfinished`.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from types import MappingProxyType
from typing import Final, NamedTuple

from gpuq.errors import BadInput
from gpuq.model import DAY_S
from gpuq.policy.config import ClassPolicy, Mode, Policy
from gpuq.policy.thrash import detect, limits_for
from gpuq.replay import metrics
from gpuq.replay.checkpoint import check_model, young_daly
from gpuq.replay.model import LogEntry, ReplayConfig, ReplayResult
from gpuq.replay.prepare import Prepared, prepare
from gpuq.sim.gcpause import gc_paused
from gpuq.sim.jobs import SimJob, on_grid
from gpuq.sim.retired import Retired
from gpuq.sim.simulator import Simulator
from gpuq.sim.workload import ClusterSpec
from gpuq.trace.record import TraceJob

__all__ = ["EVENTS", "NO_PREEMPTION", "ReplayEvent", "compare", "horizon", "replay", "replay_prepared"]

#: `ReplayResult.strategy` of a replay without preemption
NO_PREEMPTION: Final = "none"
#: the steps of a job the event log names: submitted, started (again), preempted (for another
#: job: `other`), stopped after a graceful preemption's grace period, finished, cancelled
EVENTS: Final = ("submit", "start", "preempt", "drain", "finish", "cancel")
_NAMES: Final = {"arrive": "submit"}
#: the series' buckets: about this many over the submit span (coarsened afterwards)
_BUCKETS: Final = 200
_MAX_NODES, _MAX_GPUS_PER_NODE = 1_000_000, 1024
#: the latest preemptions a replay keeps for its thrash guard (`gpuq.policy.thrash`): a few MiB
#: at most, however much a policy churns
KEPT_PREEMPTIONS: Final = 200_000


class ReplayEvent(NamedTuple):
    """One step of a job's life, for the event log (`replay(on_event=…)`). `time_s`: seconds
    since the first submit; `gpus`: the job's GPUs; `allocation` (starts only): the GPUs it
    was given, as (node, GPU indexes) pairs."""

    time_s: float
    event: str
    job: str
    other: str | None
    gpus: int
    allocation: tuple[tuple[str, tuple[int, ...]], ...] = ()
    #: GPU-seconds of work this step lost (a preemption, a cancel, a drain whose restore was cut short)
    lost_gpu_s: float = 0.0


def _check(config: ReplayConfig) -> None:
    if not (1 <= config.nodes <= _MAX_NODES and 1 <= config.gpus_per_node <= _MAX_GPUS_PER_NODE):
        raise BadInput(f"cluster shape {config.nodes}x{config.gpus_per_node}: 1 to {_MAX_NODES:,} nodes "
                       f"of 1 to {_MAX_GPUS_PER_NODE} GPUs")  # fmt: skip
    check_model(config.checkpoint)


def _policy(config: ReplayConfig, class_names: Iterable[str]) -> tuple[Policy, str]:
    """The policy the simulator runs, and the strategy's name."""
    policy = config.policy
    if config.strategy is not None:
        policy = replace(policy, mode=config.strategy)
    if not config.preemption:
        classes = dict(policy.classes)
        for name in class_names:
            classes[name] = replace(classes.get(name, ClassPolicy()), preemptible=False)
        return replace(policy, classes=MappingProxyType(classes)), NO_PREEMPTION
    return policy, policy.mode.value


def horizon(prepared: Prepared, capacity: int) -> float:
    """When a replay stops at the latest (seconds since the first submit): ten times as long
    after the last submit as the whole trace's work would keep the cluster busy, plus ten of
    its longest jobs and a week."""
    return prepared.last_submit + 10 * (prepared.gpu_seconds / capacity + prepared.longest_s) + 7 * DAY_S


def _logger(sim: Simulator, entries: list[LogEntry] | None,
            sink: Callable[[ReplayEvent], None] | None) -> Callable[[str, SimJob, SimJob | None], None]:  # fmt: skip
    index = sim.gpus.index
    #: per job still in the replay, the GPU-seconds it had lost by its last step (the simulator
    #: books a step's loss before it tells of the step: the difference is the step's loss)
    booked: dict[str, float] = {}

    def observe(kind: str, job: SimJob, other: SimJob | None) -> None:
        event = _NAMES.get(kind, kind)
        by = None if other is None else other.id
        lost = job.lost_s - booked.get(job.id, 0.0)
        if kind == "finish" or kind == "cancel":
            booked.pop(job.id, None)
        elif lost:
            booked[job.id] = job.lost_s
        if entries is not None:
            entries.append((sim.now, event, job.id, by, lost))
        if sink is not None:
            allocation: tuple[tuple[str, tuple[int, ...]], ...] = ()
            if kind == "start":  # (in node order)
                nodes = sorted(job.alloc, key=index.__getitem__)
                allocation = tuple((node, tuple(job.alloc[node])) for node in nodes)
            sink(ReplayEvent(sim.now, event, job.id, by, job.gpus, allocation, lost))

    return observe


def replay_prepared(
    prepared: Prepared, config: ReplayConfig, *, on_event: Callable[[ReplayEvent], None] | None = None
) -> ReplayResult:
    """Run a converted trace (`prepare`) under `config`; see `replay`."""
    _check(config)
    with gc_paused():  # (between the loop's stretches too: a collection would walk every job)
        return _run(prepared, config, on_event)


def _run(prepared: Prepared, config: ReplayConfig, on_event: Callable[[ReplayEvent], None] | None) -> ReplayResult:
    policy, strategy = _policy(config, (c.name for c in prepared.classes))
    cluster = ClusterSpec(nodes=config.nodes, gpus_per_node=config.gpus_per_node)
    save, restore = config.checkpoint.costs(policy)
    sim = Simulator(policy=policy, cluster=cluster, classes=prepared.classes, name="replay", history_limit=0,
                    event_limit=KEPT_PREEMPTIONS, checkpoint_cost_s=save, restore_cost_s=restore)  # fmt: skip
    retired = Retired(prepared.classes)
    sim.retired = retired
    log: list[LogEntry] | None = [] if config.event_log else None
    if log is not None or on_event is not None:
        sim.observer = _logger(sim, log, on_event)
    jobs_per_class = dict.fromkeys((c.name for c in prepared.classes), 0)
    for spec in prepared.specs:
        jobs_per_class[spec.job_class] += 1
    capacity = cluster.total_gpus
    stop = horizon(prepared, capacity)
    width = max(1.0, prepared.last_submit / _BUCKETS)
    series = metrics.Series(width)
    specs = prepared.specs
    submits = [on_grid(s.submit_time) for s in specs]  # (in order: `prepare` sorts them)
    fed = 0
    began = time.perf_counter()
    idle = 0.0
    bucket_end = width
    while (sim.has_events() or fed < len(specs)) and sim.now < stop:
        width = series.width  # (doubles as the run outgrows the series: `metrics.Series`)
        until = min(bucket_end, stop)
        # The jobs submitted by the end of this stretch, and only those: the event heap holds
        # what is in flight, not the whole trace (the same run as submitting all at once).
        upto = bisect.bisect_right(submits, on_grid(until), fed)
        if upto > fed:
            sim.submit(specs[fed:upto])
            fed = upto
        sim.run_until(until)
        elapsed = sim.now - (bucket_end - width)
        series.add(capacity * elapsed - (sim.idle_gpu_s - idle))
        idle = sim.idle_gpu_s
        bucket_end += series.width
    wall = time.perf_counter() - began
    left = sim.live_jobs()
    # The last job's end (the loop stands at the end of the bucket it ended in), or the horizon.
    makespan = sim.now if left else retired.last_end
    if left:
        retired.unfinished(left, sim.now)
    idle = sim.idle_gpu_s - capacity * (sim.now - makespan)  # (after the last end every GPU is idle)
    mtbp = retired.run_s / sim.preemptions if sim.preemptions else None
    busy = sim.busy_gpu_s()
    thrash = detect(((t, victim, by, lost) for t, victim, by, _, lost, _, _ in sim.preemption_log), limits_for(policy),
                    work_gpu_s=busy - sim.overhead_gpu_s, lost_gpu_s=sim.lost_gpu_s,
                    partial=sim.preemptions > len(sim.preemption_log))  # fmt: skip
    return metrics.result(
        strategy=strategy, retired=retired, series=series, classes=prepared.classes,
        jobs_per_class=jobs_per_class, policy=policy, capacity=capacity, makespan=makespan,
        busy_gpu_s=busy, idle_gpu_s=idle, lost_gpu_s=sim.lost_gpu_s, overhead_gpu_s=sim.overhead_gpu_s,
        gpu_seconds=prepared.gpu_seconds, preemptions=sim.preemptions, events=sim.events_processed,
        sim_wall_s=wall, suggested=young_daly(save, mtbp), unfinished=len(left),
        skipped=prepared.skipped, never_started=prepared.never_started,
        origin=prepared.origin, nodes=config.nodes, gpus_per_node=config.gpus_per_node,
        log=() if log is None else tuple(log), thrash=thrash,
    )  # fmt: skip


def replay(
    jobs: Iterable[TraceJob], config: ReplayConfig, *, on_event: Callable[[ReplayEvent], None] | None = None
) -> ReplayResult:
    """Replay the trace's jobs under `config` (the trace is read once, as it streams).
    `on_event`: told of every step of every job as it happens (a per-job event log that is
    written as it goes rather than kept, as `ReplayConfig.event_log` keeps it)."""
    _check(config)
    with gc_paused():
        prepared = prepare(jobs, config)
    return replay_prepared(prepared, config, on_event=on_event)


def compare(jobs: Sequence[TraceJob], config: ReplayConfig, strategies: Sequence[Mode]) -> list[ReplayResult]:
    """The same trace replayed under each strategy (in the order given), converted once."""
    _check(config)
    with gc_paused():
        prepared = prepare(jobs, config)
    return [replay_prepared(prepared, replace(config, strategy=s)) for s in strategies]
