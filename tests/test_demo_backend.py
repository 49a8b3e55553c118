"""The demo backend: persistence between calls, its own clock, actions, locking, bad input."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from gpuq.backends.base import ActionResult
from gpuq.backends.demo import DEFAULT_SPEED, MAX_CATCHUP_S, DemoBackend
from gpuq.errors import BadInput, NotFound, Refused
from gpuq.model import JobState, Snapshot
from gpuq.policy.config import Mode

T0 = 1_800_000_000.0


class FakeClock:
    def __init__(self, now: float = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _backend(tmp_path: Path, clock: FakeClock, **kwargs: object) -> DemoBackend:
    return DemoBackend(state_dir=tmp_path, clock=clock, **kwargs)  # type: ignore[arg-type]


def _jobs(snap: Snapshot, state: JobState) -> list[str]:
    return [j.id for j in snap.jobs if j.state is state]


def test_first_call_creates_a_busy_cluster_and_persists_it(tmp_path: Path) -> None:
    clock = FakeClock()
    backend = _backend(tmp_path, clock)
    assert backend.name == "demo" and backend.can_bump and backend.can_exempt and backend.can_preempt
    assert backend.knows_gpu_indexes and backend.has_history and not backend.has_native_preview
    snap = backend.snapshot()
    assert (snap.backend, snap.cluster, snap.taken_at) == ("demo", "demo", T0)
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
    clock = FakeClock()
    _backend(tmp_path, clock).snapshot()
    clock.now += 10
    assert _backend(tmp_path, clock).snapshot().taken_at == T0 + 10 * DEFAULT_SPEED
    clock.now += 10
    assert _backend(tmp_path, clock, speed=1.0).snapshot().taken_at == T0 + 20 * DEFAULT_SPEED  # anchor kept
    clock.now += 10
    assert _backend(tmp_path, clock).snapshot().taken_at == T0 + 20 * DEFAULT_SPEED + 10  # new speed stored
    clock.now -= 1000  # the wall clock stepping back never runs the cluster backwards
    assert _backend(tmp_path, clock).snapshot().taken_at == T0 + 20 * DEFAULT_SPEED + 10


def test_long_absence_replays_at_most_the_catch_up_window(tmp_path: Path) -> None:
    clock = FakeClock()
    _backend(tmp_path, clock).snapshot()
    clock.now += 365 * 86400
    assert _backend(tmp_path, clock).snapshot().taken_at == T0 + MAX_CATCHUP_S


def test_same_seed_same_cluster_other_seed_starts_afresh(tmp_path: Path) -> None:
    clock = FakeClock()
    a = _backend(tmp_path / "a", clock, seed=7).snapshot()
    b = _backend(tmp_path / "b", clock, seed=7).snapshot()
    assert a == b
    backend = _backend(tmp_path / "a", clock, seed=8)
    c = backend.snapshot()
    assert c != a
    assert json.loads((tmp_path / "a" / "demo-demo.json").read_text())["seed"] == 8
    assert _backend(tmp_path / "a", clock).snapshot() == c  # no --seed: keep whatever is there


def test_bump_persists_and_takes_effect(tmp_path: Path) -> None:
    clock = FakeClock()
    snap = _backend(tmp_path, clock).snapshot()
    target = max(snap.jobs, key=lambda j: (j.state is JobState.RUNNING, j.start_time or 0)).id
    result = _backend(tmp_path, clock).bump(target, priority=4242, urgent=False, reason="test", dry_run=False)
    assert isinstance(result, ActionResult) and not result.dry_run
    assert result.after["priority"] == 4242 and result.before["priority"] != 4242
    job = _backend(tmp_path, clock).snapshot().job(target)
    assert job is not None and job.priority == 4242


def test_urgent_bump_of_a_pending_job_preempts(tmp_path: Path) -> None:
    clock = FakeClock()
    backend = _backend(tmp_path, clock)
    for _ in range(40):  # find a moment with a job waiting for GPUs
        pending = [j for j in backend.snapshot().jobs if j.state is JobState.PENDING]
        if pending:
            break
        clock.now += 60
    assert pending, "the demo cluster never queued a job"
    job = pending[-1]
    before = len(backend.snapshot().preemption_events)
    backend.bump(job.id, priority=None, urgent=True, reason="", dry_run=False)
    after = backend.snapshot()
    bumped = after.job(job.id)
    assert bumped is not None and bumped.urgent
    assert bumped.state is JobState.RUNNING
    if len(after.preemption_events) > before:  # (victims requeued may in turn preempt lower jobs)
        assert any(e.preemptor == job.id for e in after.preemption_events[before:])


def test_dry_runs_change_nothing(tmp_path: Path) -> None:
    clock = FakeClock()
    backend = _backend(tmp_path, clock)
    snap = backend.snapshot()
    running = _jobs(snap, JobState.RUNNING)[0]
    path = tmp_path / "demo-demo.json"
    saved = path.read_bytes()
    assert backend.bump(running, priority=1, urgent=False, reason="", dry_run=True).after["priority"] == 1
    assert backend.exempt(running, until=T0 + 3600, reason="", dry_run=True).after == {"exempt_until": T0 + 3600}
    result = backend.preempt(running, mode=Mode.REQUEUE, reason="", dry_run=True)
    assert result.dry_run and result.after["state"] == "pending"
    assert path.read_bytes() == saved
    assert backend.snapshot() == snap


def test_exempt_and_preempt(tmp_path: Path) -> None:
    clock = FakeClock()
    backend = _backend(tmp_path, clock)
    running = _jobs(backend.snapshot(), JobState.RUNNING)
    backend.exempt(running[0], until=T0 + 7200, reason="", dry_run=False)
    assert backend.snapshot().job(running[0]).exempt_until == T0 + 7200  # type: ignore[union-attr]
    with pytest.raises(Refused, match="exempt from preemption"):
        backend.preempt(running[0], mode=Mode.CANCEL, reason="", dry_run=False)
    backend.exempt(running[0], until=None, reason="", dry_run=False)
    assert backend.snapshot().job(running[0]).exempt_until is None  # type: ignore[union-attr]
    result = backend.preempt(running[1], mode=Mode.CANCEL, reason="", dry_run=False)
    assert result.before["state"] == "running" and result.after["state"] == "cancelled"
    snap = backend.snapshot()
    assert snap.job(running[1]).state is JobState.CANCELLED  # type: ignore[union-attr]
    assert snap.preemption_events[-1].victim == running[1] and snap.preemption_events[-1].preemptor is None


def test_bad_targets(tmp_path: Path) -> None:
    clock = FakeClock()
    backend = _backend(tmp_path, clock)
    snap = backend.snapshot()
    with pytest.raises(NotFound, match="^no job 123 on cluster demo$"):
        backend.bump("123", priority=5, urgent=False, reason="", dry_run=False)
    finished = _jobs(snap, JobState.COMPLETED)[0]
    with pytest.raises(Refused, match=f"job {finished} has already ended"):
        backend.bump(finished, priority=5, urgent=False, reason="", dry_run=False)
    with pytest.raises(Refused, match="already ended"):
        backend.exempt(finished, until=T0 + 60, reason="", dry_run=False)
    with pytest.raises(Refused, match="not running"):
        backend.preempt(finished, mode=Mode.REQUEUE, reason="", dry_run=False)
    with pytest.raises(BadInput):
        backend.bump(_jobs(snap, JobState.RUNNING)[0], priority=-5, urgent=False, reason="", dry_run=False)
    with pytest.raises(BadInput):
        DemoBackend(state_dir=tmp_path, speed=0)


def test_named_clusters_are_separate(tmp_path: Path) -> None:
    clock = FakeClock()
    lab = _backend(tmp_path, clock, cluster="lab").snapshot()
    assert lab.cluster == "lab" and (tmp_path / "demo-lab.json").exists()
    with pytest.raises(NotFound, match="no job 1 on cluster lab"):
        _backend(tmp_path, clock, cluster="lab").bump("1", priority=1, urgent=False, reason="", dry_run=False)


def test_reset_and_corrupt_state_start_a_fresh_cluster(tmp_path: Path) -> None:
    clock = FakeClock()
    backend = _backend(tmp_path, clock)
    fresh = backend.snapshot()
    running = _jobs(fresh, JobState.RUNNING)[0]
    backend.bump(running, priority=999, urgent=False, reason="", dry_run=False)
    backend.reset()
    assert backend.snapshot() == fresh
    (tmp_path / "demo-demo.json").write_text("{not json")
    assert backend.snapshot() == fresh
    # The unreadable file is kept aside, not silently lost.
    assert (tmp_path / "demo-demo.json.unreadable").read_text() == "{not json"


def test_concurrent_calls_do_not_lose_actions(tmp_path: Path) -> None:
    clock = FakeClock()
    running = _jobs(_backend(tmp_path, clock).snapshot(), JobState.RUNNING)[:6]
    errors: list[BaseException] = []

    def bump(job_id: str, priority: int) -> None:
        try:
            _backend(tmp_path, clock).bump(job_id, priority=priority, urgent=False, reason="", dry_run=False)
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
