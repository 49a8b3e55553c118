"""The demo backend: persistence between calls, its own clock, actions, locking, bad input."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from gpuq.backends.base import ActionResult, PriorityChange
from gpuq.backends.demo import DEFAULT_SPEED, INCIDENT_STEP_S, INCIDENT_STEPS, MAX_CATCHUP_S, DemoBackend
from gpuq.errors import BadInput, JobChanged, NotFound, Refused
from gpuq.model import JobState, Snapshot, from_epoch
from gpuq.policy.config import Mode
from tests.clock import FixedClock

T0 = 1_800_000_000.0


def _backend(tmp_path: Path, clock: FixedClock, **kwargs: object) -> DemoBackend:
    return DemoBackend(state_dir=tmp_path, clock=clock, **kwargs)  # type: ignore[arg-type]


def do_bump(backend: DemoBackend, job_id: str, priority: int | None = None, urgent: bool = False) -> ActionResult:
    return backend.apply(backend.prepare_bump(job_id, PriorityChange(to=priority, urgent=urgent), reason="test"))


def do_exempt(backend: DemoBackend, job_id: str, until: float | None) -> ActionResult:
    return backend.apply(backend.prepare_exempt(job_id, until, reason="test"))


def do_preempt(backend: DemoBackend, job_id: str, mode: Mode) -> ActionResult:
    return backend.apply(backend.prepare_preempt(job_id, mode, reason="test"))


def _jobs(snap: Snapshot, state: JobState) -> list[str]:
    return [j.id for j in snap.jobs if j.state is state]


def test_first_call_creates_a_busy_cluster_and_persists_it(tmp_path: Path) -> None:
    clock = FixedClock(T0)
    backend = _backend(tmp_path, clock)
    caps = backend.capabilities
    assert backend.name == "demo" and not caps.native_preview
    assert caps.actions == {"bump", "exempt", "preempt", "resume"}
    assert set(DemoBackend.options) == {"cluster", "seed", "speed"}  # clock, policy, state_dir: the service's
    snap = backend.snapshot()
    assert (snap.backend, snap.cluster) == ("demo", "demo")
    # Opened on an incident: the first moment from the wall clock on that shows one.
    assert T0 <= snap.now <= T0 + INCIDENT_STEPS * INCIDENT_STEP_S
    assert len(snap.nodes) == 16 and snap.total_gpus == 128
    assert _jobs(snap, JobState.RUNNING) and _jobs(snap, JobState.COMPLETED)  # warmed up: history for SLA
    assert {c.name for c in snap.classes} == {"urgent", "high", "normal", "low", "batch"}
    assert any(not c.preemptible for c in snap.classes)
    state = json.loads((tmp_path / "demo-demo.json").read_text())
    assert state["seed"] == 1 and state["speed"] == DEFAULT_SPEED
    assert not list(tmp_path.glob("*.tmp"))  # written atomically, nothing left behind
    # A second call with the clock unchanged sees exactly the same cluster.
    assert _backend(tmp_path, clock).snapshot() == snap


def test_simulated_clock_runs_at_speed(tmp_path: Path) -> None:
    clock = FixedClock(T0)
    t1 = _backend(tmp_path, clock).snapshot().now  # the first look
    clock.now += 10
    assert _backend(tmp_path, clock).snapshot().now == t1 + 10 * DEFAULT_SPEED
    clock.now += 10
    assert _backend(tmp_path, clock, speed=1.0).snapshot().now == t1 + 20 * DEFAULT_SPEED  # anchor kept
    clock.now += 10
    assert _backend(tmp_path, clock).snapshot().now == t1 + 20 * DEFAULT_SPEED + 10  # new speed stored
    clock.now -= 1000  # the wall clock stepping back never runs the cluster backwards
    assert _backend(tmp_path, clock).snapshot().now == t1 + 20 * DEFAULT_SPEED + 10


def test_long_absence_replays_at_most_the_catch_up_window(tmp_path: Path) -> None:
    clock = FixedClock(T0)
    t1 = _backend(tmp_path, clock).snapshot().now
    clock.now += 365 * 86400
    assert _backend(tmp_path, clock).snapshot().now == t1 + MAX_CATCHUP_S


def test_same_seed_same_cluster_other_seed_starts_afresh(tmp_path: Path) -> None:
    clock = FixedClock(T0)
    a = _backend(tmp_path / "a", clock, seed=7).snapshot()
    b = _backend(tmp_path / "b", clock, seed=7).snapshot()
    assert a == b
    backend = _backend(tmp_path / "a", clock, seed=8)
    c = backend.snapshot()
    assert c != a
    assert json.loads((tmp_path / "a" / "demo-demo.json").read_text())["seed"] == 8
    assert _backend(tmp_path / "a", clock).snapshot() == c  # no --seed: keep whatever is there


def test_bump_persists_and_takes_effect(tmp_path: Path) -> None:
    clock = FixedClock(T0)
    snap = _backend(tmp_path, clock).snapshot()
    target = max(snap.jobs, key=lambda j: (j.state is JobState.RUNNING, j.start_time or 0)).id
    result = do_bump(_backend(tmp_path, clock), target, 4242)
    assert isinstance(result, ActionResult)
    assert result.after["priority"] == 4242 and result.before["priority"] != 4242
    job = _backend(tmp_path, clock).snapshot().job(target)
    assert job is not None and job.priority == 4242


def test_urgent_bump_of_a_pending_job_preempts(tmp_path: Path) -> None:
    clock = FixedClock(T0)
    backend = _backend(tmp_path, clock)
    for _ in range(40):  # find a moment with a job waiting for GPUs
        pending = [j for j in backend.snapshot().jobs if j.state is JobState.PENDING]
        if pending:
            break
        clock.now += 60
    assert pending, "the demo cluster never queued a job"
    job = pending[-1]
    before = len(backend.snapshot().preemption_events)
    do_bump(backend, job.id, urgent=True)
    after = backend.snapshot()
    bumped = after.job(job.id)
    assert bumped is not None and bumped.urgent
    assert bumped.state is JobState.RUNNING
    if len(after.preemption_events) > before:  # (victims requeued may in turn preempt lower jobs)
        assert any(e.preemptor == job.id for e in after.preemption_events[before:])


def test_dry_runs_change_nothing(tmp_path: Path) -> None:
    clock = FixedClock(T0)
    backend = _backend(tmp_path, clock)
    snap = backend.snapshot()
    running = _jobs(snap, JobState.RUNNING)[0]
    path = tmp_path / "demo-demo.json"
    saved = path.read_bytes()
    # Preparing an action changes nothing: a dry run is a plan never applied.
    assert backend.prepare_bump(running, PriorityChange(to=1), reason="").after["priority"] == 1
    later = snap.now + 3600
    assert backend.prepare_exempt(running, later, reason="").after == {"exempt_until": later}
    plan = backend.prepare_preempt(running, Mode.REQUEUE, reason="")
    assert plan.after["state"] == "pending"
    assert path.read_bytes() == saved
    assert backend.snapshot() == snap


def test_a_job_changed_since_the_plan_is_refused_and_nothing_is_done(tmp_path: Path) -> None:
    clock = FixedClock(T0)
    backend = _backend(tmp_path, clock)
    running = _jobs(backend.snapshot(), JobState.RUNNING)[0]
    plan = backend.prepare_bump(running, PriorityChange(to=4321), reason="")
    do_preempt(backend, running, Mode.REQUEUE)  # the job is requeued before the bump is confirmed
    with pytest.raises(JobChanged, match=f"job {running} changed since the bump was prepared .*run started at"):
        backend.apply(plan)
    job = backend.snapshot().job(running)
    assert job is not None and job.priority != 4321


def test_a_relative_bump_is_computed_when_applied(tmp_path: Path) -> None:
    clock = FixedClock(T0)
    backend = _backend(tmp_path, clock)
    running = _jobs(backend.snapshot(), JobState.RUNNING)[0]
    first = backend.prepare_bump(running, PriorityChange(by=10), reason="")
    second = backend.prepare_bump(running, PriorityChange(by=10), reason="")
    start = first.before["priority"]
    assert backend.apply(first).after["priority"] == start + 10
    done = backend.apply(second)  # prepared on the old priority, applied to the new one
    assert (done.before["priority"], done.after["priority"]) == (start + 10, start + 20)


def test_exempt_and_preempt(tmp_path: Path) -> None:
    clock = FixedClock(T0)
    backend = _backend(tmp_path, clock)
    snap = backend.snapshot()
    running = _jobs(snap, JobState.RUNNING)
    do_exempt(backend, running[0], snap.now + 7200)
    assert backend.snapshot().job(running[0]).exempt_until == from_epoch(snap.now + 7200)  # type: ignore[union-attr]
    with pytest.raises(Refused, match="exempt from preemption"):
        do_preempt(backend, running[0], Mode.CANCEL)
    do_exempt(backend, running[0], None)
    assert backend.snapshot().job(running[0]).exempt_until is None  # type: ignore[union-attr]
    result = do_preempt(backend, running[1], Mode.CANCEL)
    assert result.before["state"] == "running" and result.after["state"] == "cancelled"
    snap = backend.snapshot()
    assert snap.job(running[1]).state is JobState.CANCELLED  # type: ignore[union-attr]
    assert snap.preemption_events[-1].victim == running[1] and snap.preemption_events[-1].preemptor is None


def test_bad_targets(tmp_path: Path) -> None:
    clock = FixedClock(T0)
    backend = _backend(tmp_path, clock)
    snap = backend.snapshot()
    with pytest.raises(NotFound, match="^no job 123 on cluster demo$"):
        do_bump(backend, "123", 5)
    finished = _jobs(snap, JobState.COMPLETED)[0]
    with pytest.raises(Refused, match=f"job {finished} has already ended"):
        do_bump(backend, finished, 5)
    with pytest.raises(Refused, match="already ended"):
        do_exempt(backend, finished, snap.now + 60)
    with pytest.raises(Refused, match="not running"):
        do_preempt(backend, finished, Mode.REQUEUE)
    with pytest.raises(BadInput):
        DemoBackend(state_dir=tmp_path, speed=0)


def test_named_clusters_are_separate(tmp_path: Path) -> None:
    clock = FixedClock(T0)
    lab = _backend(tmp_path, clock, cluster="lab").snapshot()
    assert lab.cluster == "lab" and (tmp_path / "demo-lab.json").exists()
    with pytest.raises(NotFound, match="no job 1 on cluster lab"):
        do_bump(_backend(tmp_path, clock, cluster="lab"), "1", 1)


def test_reset_starts_a_fresh_cluster(tmp_path: Path) -> None:
    clock = FixedClock(T0)
    backend = _backend(tmp_path, clock)
    fresh = backend.snapshot()
    running = _jobs(fresh, JobState.RUNNING)[0]
    do_bump(backend, running, 999)
    backend.reset()
    assert backend.snapshot() == fresh


def test_concurrent_calls_do_not_lose_actions(tmp_path: Path) -> None:
    clock = FixedClock(T0)
    running = _jobs(_backend(tmp_path, clock).snapshot(), JobState.RUNNING)[:6]
    errors: list[BaseException] = []

    def bump(job_id: str, priority: int) -> None:
        try:
            do_bump(_backend(tmp_path, clock), job_id, priority)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=bump, args=(job_id, 5000 + i)) for i, job_id in enumerate(running)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    snap = _backend(tmp_path, clock).snapshot()
    assert [snap.job(j).priority for j in running] == [5000 + i for i in range(len(running))]  # type: ignore[union-attr]
