"""The replay's correctness list (issue 12): waits with unlimited GPUs, the schedule without
preemption, GPU-time and GPU-hours conserved, no GPU double-booked, lost work as the policy
model defines it, the strategies' order, recorded start times, determinism."""

from __future__ import annotations

import heapq
import math
from collections import Counter
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuq.policy.config import UNGUARDED_POLICY, Mode
from gpuq.replay.model import CheckpointModel, ReplayConfig
from gpuq.replay.run import replay
from gpuq.sim.workload import DEFAULT_CLASSES
from gpuq.trace.record import TraceJob
from tests.properties import examples

from .helpers import ORIGIN, Log, Run, comparable, job, replay_logged, stops_at_signal, traces

#: static priorities (no aging), so every run ends: a job is only ever preempted by a higher one
STILL = replace(UNGUARDED_POLICY, default_aging_rate=0.0)
modes = st.sampled_from(list(Mode))
shapes = st.tuples(st.integers(1, 3), st.sampled_from([4, 8]))
SETTINGS = settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
PRIORITY = {c.name: c.priority for c in DEFAULT_CLASSES}


def _fits(jobs: list[TraceJob], nodes: int, per_node: int) -> list[TraceJob]:
    return [j for j in jobs if j.gpus <= nodes * per_node]


@SETTINGS
@given(jobs=traces(max_gpus=16))
def test_with_unlimited_gpus_nobody_waits(jobs: list[TraceJob]) -> None:
    # Every job can have nodes of its own: a multi-node job spans at most two.
    config = ReplayConfig(policy=UNGUARDED_POLICY, nodes=2 * len(jobs) + 2, gpus_per_node=8)
    result = replay(jobs, config)
    assert result.wait.count == len(jobs)
    assert result.wait.max_s == 0.0
    assert result.preemptions == 0
    assert all(c.wait.max_s == 0.0 for c in result.classes.values())


def _priority_fifo(jobs: list[TraceJob], gpus: int) -> list[tuple[str, float]]:
    """The oracle: one-GPU jobs started in plain priority order (then submit time, then id)."""
    arrivals = sorted((j.submit_time - ORIGIN, int(j.id), j) for j in jobs)
    queue: list[tuple[int, float, int, TraceJob]] = []
    ends: list[float] = []
    started: list[tuple[str, float]] = []
    free, i = gpus, 0
    while i < len(arrivals) or queue or ends:
        t = min(arrivals[i][0] if i < len(arrivals) else math.inf, ends[0] if ends else math.inf)
        while ends and ends[0] == t:
            heapq.heappop(ends)
            free += 1
        while i < len(arrivals) and arrivals[i][0] == t:
            submit, number, j = arrivals[i]
            priority = PRIORITY[j.job_class or "normal"] if j.priority is None else j.priority
            heapq.heappush(queue, (-priority, submit, number, j))
            i += 1
        while free and queue:
            j = heapq.heappop(queue)[3]
            started.append((j.id, t))
            heapq.heappush(ends, t + j.duration_s)
            free -= 1
    return started


@SETTINGS
@given(jobs=traces(max_gpus=1, interval=False), gpus=st.integers(1, 4), mode=modes)
def test_without_preemption_the_schedule_is_plain_priority_order(jobs: list[TraceJob], gpus: int, mode: Mode) -> None:
    config = ReplayConfig(policy=STILL, nodes=gpus, gpus_per_node=1, strategy=mode, preemption=False)
    result, log = replay_logged(jobs, config)
    assert result.preemptions == 0 and result.strategy == "none"
    assert not [e for e in log.events if e.event in ("preempt", "drain", "cancel")]
    starts = [(e.job, e.time_s) for e in log.events if e.event == "start"]
    assert starts == _priority_fifo(jobs, gpus)


@SETTINGS
@given(jobs=traces(), shape=shapes, mode=modes, grace=st.sampled_from([0.0, 120.0]))
def test_gpu_time_is_conserved_and_no_gpu_is_double_booked(
    jobs: list[TraceJob], shape: tuple[int, int], mode: Mode, grace: float
) -> None:
    nodes, per_node = shape
    jobs = _fits(jobs, nodes, per_node)
    config = ReplayConfig(policy=replace(STILL, grace_period_s=grace), nodes=nodes, gpus_per_node=per_node,
                          strategy=mode)  # fmt: skip
    result, log = replay_logged(jobs, config)
    # At every event of the log: the GPUs held are distinct, on real nodes, as many as asked.
    held: dict[tuple[str, int], str] = {}
    owned: dict[str, list[tuple[str, int]]] = {}
    stop_now = stops_at_signal(config)
    for e in log.events:
        if e.event == "start":
            gpus = [(node, i) for node, idx in e.allocation for i in idx]
            assert len(gpus) == e.gpus
            for node, i in gpus:
                assert node.startswith("gpu-") and 0 <= i < per_node
                assert (node, i) not in held, f"GPU {node}:{i} double-booked: {held[(node, i)]} and {e.job}"
                held[(node, i)] = e.job
            owned[e.job] = gpus
        elif e.event in ("finish", "drain") or (e.event == "preempt" and stop_now):
            for gpu in owned.pop(e.job):
                del held[gpu]
        assert len(held) <= nodes * per_node
    # busy + idle = capacity × makespan, and busy is what the runs held.
    capacity = nodes * per_node
    total = (result.busy_gpu_hours + result.idle_gpu_hours) * 3600
    assert math.isclose(total, capacity * result.makespan_s, rel_tol=1e-9, abs_tol=1e-6)
    busy = sum(r.gpus * (r.end - r.start) for r in log.runs(stop_now) if r.end is not None)
    assert math.isclose(busy, result.busy_gpu_hours * 3600, rel_tol=1e-9, abs_tol=1e-6)
    if result.makespan_s > 0:
        assert math.isclose(result.utilisation, busy / (capacity * result.makespan_s), rel_tol=1e-9)
    # Waits: first start − submit, a requeued job's later waits not counted again.
    submitted = {e.job: e.time_s for e in log.events if e.event == "submit"}
    first: dict[str, float] = {}
    for e in log.events:
        if e.event == "start":
            first.setdefault(e.job, e.time_s)
    waits = sorted(first[j] - submitted[j] for j in first)
    assert result.wait.count == len(waits) == len(jobs)
    if waits:
        assert result.wait.max_s == waits[-1]
        assert result.wait.p95_s == waits[math.ceil(0.95 * len(waits)) - 1]
        assert math.isclose(result.wait.mean_s, sum(waits) / len(waits), rel_tol=1e-9, abs_tol=1e-9)


def _checkpoint_model(runs: list[Run], jobs: dict[str, TraceJob], save: float, restore: float,
                      default: float) -> tuple[float, float, list[tuple[str, float, float]]]:  # fmt: skip
    """The policy model's lost work and checkpoint overhead, recomputed from the runs of a
    requeue replay: a run restores first (after a requeue, with progress saved), then saves
    `save` seconds after every interval of work; preempted, it loses everything since its last
    completed checkpoint (or the end of its restore). Also each finished run's expected length."""
    done: Counter[str] = Counter()
    lost = overhead = 0.0
    lengths = []
    for run in sorted(runs, key=lambda r: (r.start, r.end)):
        j = jobs[run.job]
        interval = j.checkpoint_interval_s or default or None
        g, s, e = run.gpus, run.start, run.end
        r = restore if interval and done[run.job] > 0 else 0.0
        c = save if interval else 0.0
        base = s + r
        if run.how == "finish":
            remaining = j.duration_s - done[run.job]
            saves = max(0, math.ceil(remaining / interval) - 1) if interval and remaining > 0 else 0
            lengths.append((run.job, e - s, r + remaining + saves * c))
            overhead += g * (r + saves * c)
        elif e < base:
            lost += g * (e - s)
        else:
            cycles = math.floor((e - base) / (interval + c)) if interval else 0
            lost += g * (e - base - cycles * ((interval or 0) + c))
            overhead += g * (r + cycles * c)
            done[run.job] += cycles * (interval or 0.0)
    return lost, overhead, lengths


@SETTINGS
@given(jobs=traces(), shape=shapes, save=st.sampled_from([0.0, 30.0]), restore=st.sampled_from([0.0, 60.0]),
       default=st.sampled_from([0.0, 600.0]))  # fmt: skip
def test_lost_work_is_the_time_since_the_last_checkpoint(
    jobs: list[TraceJob], shape: tuple[int, int], save: float, restore: float, default: float
) -> None:
    nodes, per_node = shape
    jobs = _fits(jobs, nodes, per_node)
    config = ReplayConfig(policy=replace(STILL, default_checkpoint_interval_s=default), nodes=nodes,
                          gpus_per_node=per_node, strategy=Mode.REQUEUE,
                          checkpoint=CheckpointModel(save_cost_s=save, restore_cost_s=restore))  # fmt: skip
    result, log = replay_logged(jobs, config)
    lost, overhead, lengths = _checkpoint_model(log.runs(True), {j.id: j for j in jobs}, save, restore, default)
    assert math.isclose(result.lost_gpu_hours * 3600, lost, rel_tol=1e-6, abs_tol=1e-3)
    assert math.isclose(result.checkpoint_overhead_gpu_hours * 3600, overhead, rel_tol=1e-6, abs_tol=1e-3)
    for job_id, ran, expected in lengths:
        assert abs(ran - expected) < 1e-5, (job_id, ran, expected)


def _one_victim(mode: Mode) -> tuple[float, float, int]:
    """A long low-priority job (checkpoints every 10 min) on the only GPU, preempted at 1000 s by
    a short urgent one: (lost GPU-seconds, checkpoint overhead, cancelled)."""
    jobs = [job("1", 0, 3600, cls="low", interval=600.0), job("2", 1000, 100, cls="urgent")]
    config = ReplayConfig(
        policy=replace(UNGUARDED_POLICY, grace_period_s=60.0), nodes=1, gpus_per_node=1, strategy=mode
    )
    result = replay(jobs, config)
    assert result.preemptions == 1
    return result.lost_gpu_hours * 3600, result.checkpoint_overhead_gpu_hours * 3600, result.cancelled


def test_the_strategies_lose_work_as_the_policy_model_says() -> None:
    cancel, requeue, graceful, suspend = (_one_victim(m) for m in (Mode.CANCEL, Mode.REQUEUE, Mode.GRACEFUL,
                                                                   Mode.SUSPEND))  # fmt: skip
    assert cancel == (1000.0, 0.0, 1)  # killed: all of its progress
    assert requeue == (400.0, 0.0, 0)  # back to its checkpoint at 600 s
    assert graceful == (0.0, 0.0, 0) and suspend == (0.0, 0.0, 0)  # saved / paused: nothing lost
    assert cancel[0] > requeue[0] > graceful[0]


def test_a_graceful_victim_keeps_its_gpus_through_the_grace_period() -> None:
    jobs = [job("1", 0, 3600, cls="low"), job("2", 1000, 100, cls="urgent")]
    config = ReplayConfig(
        policy=replace(UNGUARDED_POLICY, grace_period_s=60.0), nodes=1, gpus_per_node=1, strategy=Mode.GRACEFUL
    )
    _, log = replay_logged(jobs, config)
    steps = [(e.time_s, e.event, e.job) for e in log.events if e.event != "submit"]
    assert steps == [(0.0, "start", "1"), (1000.0, "preempt", "1"), (1060.0, "drain", "1"),
                     (1060.0, "start", "2"), (1160.0, "finish", "2"), (1160.0, "start", "1"),
                     (3700.0, "finish", "1")]  # fmt: skip


@settings(max_examples=examples(30), deadline=None)
@given(jobs=traces(), shape=shapes)
def test_graceful_and_suspend_lose_nothing_and_cancel_kills_every_victim(
    jobs: list[TraceJob], shape: tuple[int, int]
) -> None:
    nodes, per_node = shape
    jobs = _fits(jobs, nodes, per_node)
    results = {m: replay_logged(jobs, ReplayConfig(policy=STILL, nodes=nodes, gpus_per_node=per_node, strategy=m))
               for m in Mode}  # fmt: skip
    assert results[Mode.GRACEFUL][0].lost_gpu_hours == 0.0
    assert results[Mode.SUSPEND][0].lost_gpu_hours == 0.0
    cancel, log = results[Mode.CANCEL]
    assert cancel.cancelled == cancel.preemptions  # every victim is killed, once
    killed = {e.job for e in log.events if e.event == "cancel"}
    # ... losing everything it had run
    lost = sum(r.gpus * (r.end - r.start) for r in log.runs(True) if r.job in killed and r.end is not None)
    assert math.isclose(cancel.lost_gpu_hours * 3600, lost, rel_tol=1e-9, abs_tol=1e-6)


@SETTINGS
@given(jobs=traces(), shape=shapes, mode=modes)
def test_job_count_and_gpu_hours_are_conserved(jobs: list[TraceJob], shape: tuple[int, int], mode: Mode) -> None:
    nodes, per_node = shape
    jobs = _fits(jobs, nodes, per_node)
    config = ReplayConfig(policy=STILL, nodes=nodes, gpus_per_node=per_node, strategy=mode)
    result, log = replay_logged(jobs, config)
    assert result.jobs == len(jobs) == sum(c.jobs for c in result.classes.values())
    assert result.unfinished == 0
    assert math.isclose(result.gpu_hours, sum(j.gpus * j.duration_s for j in jobs) / 3600, rel_tol=1e-12)
    finished = Counter(e.job for e in log.events if e.event == "finish")
    cancelled = {e.job for e in log.events if e.event == "cancel"}
    assert set(finished) | cancelled == {j.id for j in jobs} and max(finished.values(), default=1) == 1
    # What the jobs held = the work of the finished ones + lost work + checkpoint overhead.
    work = sum(j.gpus * j.duration_s for j in jobs if j.id in finished)
    held = result.busy_gpu_hours * 3600
    accounted = work + (result.lost_gpu_hours + result.checkpoint_overhead_gpu_hours) * 3600
    assert math.isclose(held, accounted, rel_tol=1e-6, abs_tol=1e-3)
    useful = result.useful_utilisation * (nodes * per_node) * result.makespan_s
    assert math.isclose(useful, work, rel_tol=1e-6, abs_tol=1e-3)


def test_recorded_start_times_replay_exactly_without_contention() -> None:
    # A quiet cluster's history: every job started as it was submitted.
    jobs = [job(str(i), 97.0 * i, 600.0 + 13 * i, 1 + i % 8, start=97.0 * i) for i in range(60)]
    result, log = replay_logged(jobs, ReplayConfig(policy=UNGUARDED_POLICY, nodes=16, gpus_per_node=8))
    assert result.origin_s == ORIGIN
    starts = {e.job: result.origin_s + e.time_s for e in log.events if e.event == "start"}
    for j in jobs:
        assert j.start_time is not None
        assert abs(starts[j.id] - j.start_time) < 1e-6
    assert result.wait.max_s == 0.0


@settings(max_examples=examples(15), deadline=None)
@given(jobs=traces(), shape=shapes, mode=modes)
def test_a_replay_is_deterministic(jobs: list[TraceJob], shape: tuple[int, int], mode: Mode) -> None:
    nodes, per_node = shape
    jobs = _fits(jobs, nodes, per_node)
    config = ReplayConfig(
        policy=UNGUARDED_POLICY, nodes=nodes, gpus_per_node=per_node, strategy=mode, event_log=True, seed=3
    )
    first, again = replay(jobs, config), replay(list(jobs), config)
    assert comparable(first) == comparable(again)
    assert first.log == again.log and len(first.log) >= 2 * len(jobs)


def test_an_unsorted_trace_counts_time_from_its_earliest_submit() -> None:
    jobs = [job("1", 500, 100), job("2", 0, 100), job("3", 250, 100)]
    result, log = replay_logged(jobs, ReplayConfig(policy=UNGUARDED_POLICY, nodes=1, gpus_per_node=8))
    assert result.origin_s == ORIGIN
    assert {e.job: e.time_s for e in log.events if e.event == "submit"} == {"1": 500.0, "2": 0.0, "3": 250.0}
    assert result.makespan_s == 600.0


def test_the_event_log_is_kept_when_asked() -> None:
    jobs = [job("1", 0, 3600, cls="low"), job("2", 1000, 100, cls="urgent")]
    config = ReplayConfig(policy=UNGUARDED_POLICY, nodes=1, gpus_per_node=1, strategy=Mode.REQUEUE, event_log=True)
    result = replay(jobs, config)
    # (the preemption loses job 1's 1000 s on its one GPU: no checkpoints)
    assert result.log == ((0.0, "submit", "1", None, 0.0), (0.0, "start", "1", None, 0.0),
                          (1000.0, "submit", "2", None, 0.0), (1000.0, "preempt", "1", "2", 1000.0),
                          (1000.0, "start", "2", None, 0.0), (1100.0, "finish", "2", None, 0.0),
                          (1100.0, "start", "1", None, 0.0), (4700.0, "finish", "1", None, 0.0))  # fmt: skip
    assert replay(jobs, replace(config, event_log=False)).log == ()


def test_log_is_the_event_sink_without_allocations() -> None:
    jobs = [job(str(i), 10.0 * i, 300.0, 2, cls=("low", "high")[i % 2]) for i in range(20)]
    config = ReplayConfig(policy=UNGUARDED_POLICY, nodes=1, gpus_per_node=4, event_log=True)
    result, log = replay_logged(jobs, config)
    assert result.log == tuple((e.time_s, e.event, e.job, e.other, e.lost_gpu_s) for e in log.events)
    assert isinstance(log, Log)


@pytest.mark.parametrize("duration", [1e8, 1e11])
def test_a_replay_steps_by_its_events_not_by_simulated_time(duration: float, monkeypatch: pytest.MonkeyPatch) -> None:
    """A replay steps from bucket to bucket of its utilisation series; a job of years (1e8 s),
    or of millennia, used to take a step per second of it (minutes and gigabytes). Buckets now
    grow as the run outgrows the series: steps grow with the logarithm of its length."""
    from gpuq.replay import metrics

    steps = 0
    add = metrics.Series.add

    def counted(self: metrics.Series, busy: float) -> None:
        nonlocal steps
        steps += 1
        assert steps < 200_000, "a step per second of simulated time"
        add(self, busy)

    monkeypatch.setattr(metrics.Series, "add", counted)
    jobs = [job("1", 0, duration), job("2", 10, 60)]
    result = replay(jobs, ReplayConfig(policy=UNGUARDED_POLICY, nodes=1, gpus_per_node=8))
    assert result.makespan_s == duration and result.unfinished == 0
    assert 0 < len(result.utilisation_series) <= metrics.SERIES_POINTS
    assert all(share == pytest.approx(1 / 8, rel=1e-3) for _, share in result.utilisation_series[2:-2])
