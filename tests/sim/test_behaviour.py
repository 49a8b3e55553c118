"""Policy behaviour in the simulator: protections, aging, checkpoints, modes, actions, snapshots."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from gpuq.errors import NotFound, Refused
from gpuq.model import Job, JobClass, JobState, from_epoch
from gpuq.policy.config import UNGUARDED_POLICY, ClassPolicy, Mode, Policy
from gpuq.sim import ClusterSpec, JobSpec, Simulator, WorkloadStream, actions, convert
from gpuq.sim.events import AGE, AGES, Event
from gpuq.sim.jobs import SimJob
from gpuq.sim.state import dump, load

from .helpers import check_invariants, step_all

CLASSES = (JobClass("batch"), JobClass("vip", priority=500, preemptible=False))


def _sim(policy: Policy, nodes: int = 1, gpus: int = 1, classes: tuple[JobClass, ...] = CLASSES) -> Simulator:
    sim = Simulator(policy=policy, cluster=ClusterSpec(nodes=nodes, gpus_per_node=gpus), classes=classes,
                    trace=True, history_limit=1000)
    sim.check_fast_path = True
    return sim


def _job(job_id: str, at: float, duration: float, priority: int, gpus: int = 1, cls: str = "batch",
         ckpt: float | None = None) -> JobSpec:
    return JobSpec(job_id, at, duration, gpus=gpus, priority=priority, job_class=cls, checkpoint_interval_s=ckpt)


def _preemptions(sim: Simulator) -> list[tuple[float, str, str | None]]:
    return [(e.time.timestamp(), e.victim, e.preemptor) for e in convert.preemption_events(sim)]


def _model_job(sim: Simulator, job_id: str) -> Job:
    """One visible job as the model shows it, as the demo backend reads it."""
    return convert.model_job(actions.visible(sim, job_id), sim.now)


def test_exemption_is_honoured_and_ends_exactly_on_time() -> None:
    sim = _sim(UNGUARDED_POLICY)
    sim.submit(_job("L", 0, 1000, 10))
    sim.run_until(50)
    actions.exempt(sim, "L", until=500.0)
    sim.submit(_job("H", 100, 10, 100))
    sim.run_until(499)
    assert _preemptions(sim) == []
    assert sim.snapshot().job("H").reason == "Resources"  # type: ignore[union-attr]
    sim.run()
    assert _preemptions(sim) == [(500.0, "L", "H")]


def test_min_runtime_protects_young_jobs() -> None:
    sim = _sim(replace(UNGUARDED_POLICY, min_runtime_s=600))
    sim.submit([_job("L", 0, 1000, 10), _job("H", 100, 10, 100)])
    sim.run()
    assert _preemptions(sim) == [(600.0, "L", "H")]


def test_daily_cap_stops_further_preemptions() -> None:
    sim = _sim(replace(UNGUARDED_POLICY, max_preemptions_per_day=1, mode=Mode.GRACEFUL, grace_period_s=0))
    sim.submit([_job("L", 0, 1000, 10), _job("H1", 100, 50, 100), _job("H2", 200, 50, 100)])
    sim.run()
    assert _preemptions(sim) == [(100.0, "L", "H1")]
    trace = [(t, kind, job) for t, kind, job, _ in sim.trace or []]
    # L resumes at 150 with 100 s done, is not preempted again, ends at 1050; then H2 runs.
    assert (1050.0, "finish", "L") in trace and (1050.0, "start", "H2") in trace


def test_non_preemptible_class_is_never_a_victim() -> None:
    sim = _sim(UNGUARDED_POLICY)
    sim.submit([_job("V", 0, 100, 1, cls="vip"), _job("H", 10, 10, 10**5)])
    sim.run()
    assert _preemptions(sim) == []


def test_aging_promotes_a_waiting_job_at_the_exact_moment() -> None:
    # max_wait 100 s, then 60 points a minute: priority 0 passes the running job's 50 at t = 150.
    # (min_runtime keeps R from taking the GPU straight back: once running, P counts at its base
    # priority again, as the policy model defines aging for waiting jobs only.)
    classes = (JobClass("old", priority=0, max_wait_s=100.0), JobClass("batch"))
    sim = _sim(replace(UNGUARDED_POLICY, default_aging_rate=60.0, min_runtime_s=60.0), classes=classes)
    sim.submit([_job("R", 0, 10_000, 50), _job("P", 0.5, 10, 0, cls="old")])
    sim.run_until(149.9)
    assert _preemptions(sim) == []
    assert sim.effective_priority("P") == pytest.approx((149.9 - 100.5) * 1.0)
    sim.run()
    (when, victim, by), = _preemptions(sim)
    assert (victim, by) == ("R", "P")
    assert when == pytest.approx(150.5, abs=1e-6)
    assert next(j for j in sim.history if j.id == "P").end == pytest.approx(160.5)


def test_waiting_jobs_start_to_age_on_time_from_one_wake_up() -> None:
    # 200 jobs wait behind one that outranks them all, each starting to age 100 s after it was
    # queued. Lined up per class (gpuq.sim.aging), they take one wake-up in the event heap, not
    # an event each; a job queued again out of that order (an operator's change keeps its
    # queueing time) gets an event of its own. Each ages at its very moment either way.
    classes = (JobClass("old", priority=0, max_wait_s=100.0), JobClass("batch"))
    sim = _sim(replace(UNGUARDED_POLICY, default_aging_rate=60.0), classes=classes)
    sim.submit([_job("R", 0, 10_000, 10**6), *(_job(f"P{i}", 1 + i, 10, 0, cls="old") for i in range(200))])
    sim.submit(_job("Q", 10, 10, 0, cls="old"))  # (with P9: two jobs start to age at 110)

    def aging() -> set[str]:
        return {job.id for job in sim.queue.jobs.values() if job.aging}

    def age_events() -> list[Event]:
        return [event for event in sim.events if event[2] in (AGE, AGES)]

    sim.run_until(50.5)
    assert len(age_events()) == 1 and aging() == set()
    before = sim.events_processed
    sim.run_until(150.5)
    assert aging() == {"Q", *(f"P{i}" for i in range(50))}  # P{i} queued at 1 + i: aging from 101 + i
    arrivals = 100  # (P50 ... P149, at 51 ... 150)
    assert sim.events_processed - before == arrivals + 51  # (each job that starts to age counts)
    sim.run_until(250.5)
    sim.changed(sim.jobs["P150"])  # queued at 151, so aging from 251: before P199's 300
    assert [e[3] for e in age_events() if e[2] == AGE] == [sim.jobs["P150"]]
    sim.run_until(250.99)
    assert "P150" not in aging() and "P149" in aging()
    sim.run_until(251.0)
    assert "P150" in aging() and "P151" not in aging()
    sim.run_until(400)
    assert aging() == {"Q", *(f"P{i}" for i in range(200))}
    assert age_events() == []
    check_invariants(sim)


def test_a_job_that_ages_past_a_head_waiting_for_graceful_victims_goes_first_at_that_moment() -> None:
    # H preempts R1 and R2 gracefully and waits 1000 s for them to save. Meanwhile A ages to
    # H's priority at 155 (aging from 105 at a point a second) and, queued earlier, goes before
    # it from that tick; nothing else happens then, yet that is the moment A is the head, and it
    # preempts R3 at once, not when H's victims stop.
    classes = (JobClass("old", priority=0, max_wait_s=100.0), JobClass("batch"))
    policy = replace(UNGUARDED_POLICY, mode=Mode.GRACEFUL, grace_period_s=1000.0, default_aging_rate=60.0)
    sim = _sim(policy, gpus=3, classes=classes)
    sim.submit([_job("R1", 0, 10_000, 10), _job("R2", 0, 10_000, 10), _job("R3", 0, 10_000, 10),
                _job("A", 5, 100, 0, cls="old"), _job("H", 10, 100, 50, gpus=2)])  # fmt: skip
    sim.run_until(1000)
    assert _preemptions(sim) == [(10.0, "R1", "H"), (10.0, "R2", "H"), (155.0, "R3", "A")]


def test_an_aging_head_preempts_a_job_started_beside_it_the_moment_it_outranks_it() -> None:
    # H (2 GPUs) waits; X starts on the free GPU while H does not outrank it by Δ = 50 yet; Y
    # stops at 120 (one GPU free: not enough). H ages one point a second from 101, so at 131 it
    # outranks X, whose GPU and the free one hold it: it preempts X at that very moment.
    classes = (JobClass("old", priority=0, max_wait_s=100.0), JobClass("batch"))
    sim = _sim(replace(UNGUARDED_POLICY, delta=50.0, default_aging_rate=60.0), gpus=3, classes=classes)
    sim.submit([_job("R1", 0, 10_000, 200), _job("Y", 0, 120, 200), _job("H", 1, 100, 100, gpus=2, cls="old"),
                _job("X", 110, 10_000, 80)])  # fmt: skip
    sim.run_until(300)
    assert _preemptions(sim) == [(131.000001, "X", "H")]
    # With X a victim from its start (Δ = 10), nothing waits for that moment.
    sim = _sim(replace(UNGUARDED_POLICY, delta=10.0, default_aging_rate=60.0), gpus=3, classes=classes)
    sim.submit([_job("R1", 0, 10_000, 200), _job("Y", 0, 120, 200), _job("H", 1, 100, 100, gpus=2, cls="old"),
                _job("X", 110, 10_000, 80)])  # fmt: skip
    sim.run_until(300)
    assert _preemptions(sim) == [(120.0, "X", "H")]


def test_requeue_restarts_from_the_last_reported_checkpoint() -> None:
    sim = _sim(replace(UNGUARDED_POLICY, mode=Mode.REQUEUE), gpus=2)
    sim.submit([_job("L", 0, 2000, 10, gpus=2, ckpt=300), _job("H", 1000, 100, 100, gpus=2)])
    sim.run_until(1000)
    event = convert.preemption_events(sim)[0]
    assert event.gpu_seconds_lost == 2 * 100  # ran 1000 s, last checkpoint at 900
    sim.run()
    done = {j.id: j for j in sim.history}
    assert done["L"].end == 1100 + 1100  # resumes at 1100 with 900 s done
    assert done["L"].lost_s == 200 and done["L"].gpu_s == 2 * 2000 + 200


def test_requeue_without_reports_uses_the_policy_interval_or_loses_everything() -> None:
    for interval, lost in ((0.0, 1000.0), (400.0, 200.0)):
        sim = _sim(replace(UNGUARDED_POLICY, mode=Mode.REQUEUE, default_checkpoint_interval_s=interval))
        sim.submit([_job("L", 0, 2000, 10), _job("H", 1000, 100, 100)])
        sim.run()
        assert [e.gpu_seconds_lost for e in convert.preemption_events(sim)] == [lost]


def test_cancel_ends_the_victim() -> None:
    sim = _sim(replace(UNGUARDED_POLICY, mode=Mode.CANCEL))
    sim.submit([_job("L", 0, 2000, 10), _job("H", 1000, 100, 100)])
    sim.run()
    victim = next(j for j in sim.history if j.id == "L")
    assert victim.state == "cancelled" and convert.preemption_events(sim)[0].gpu_seconds_lost == 1000.0
    assert next(j for j in sim.snapshot().jobs if j.id == "L").state is JobState.CANCELLED


def test_graceful_keeps_gpus_for_the_grace_period_then_loses_nothing() -> None:
    sim = _sim(replace(UNGUARDED_POLICY, mode=Mode.GRACEFUL, grace_period_s=60))
    sim.submit([_job("L", 0, 2000, 10), _job("H", 1000, 100, 100)])
    sim.run_until(1030)
    snap = sim.snapshot()
    assert snap.job("L").state is JobState.RUNNING  # type: ignore[union-attr]
    assert snap.job("H").reason.startswith("Preempting")  # type: ignore[union-attr]
    sim.run()
    trace = [(t, kind, job) for t, kind, job, _ in sim.trace or []]
    assert (1060.0, "start", "H") in trace and (1160.0, "start", "L") in trace
    assert next(j for j in sim.history if j.id == "L").end == 1160 + 940


def test_suspend_keeps_progress_and_shows_the_job_as_waiting() -> None:
    sim = _sim(replace(UNGUARDED_POLICY, mode=Mode.SUSPEND))
    sim.submit([_job("L", 0, 2000, 10), _job("H", 1000, 100, 100)])
    sim.run_until(1050)
    job = sim.snapshot().job("L")
    assert job is not None and job.state is JobState.PENDING and not job.allocation
    assert job.reason is not None and job.reason.startswith("Suspended")
    sim.run()
    assert next(j for j in sim.history if j.id == "L").end == 1100 + 1000


def test_multi_node_job_preempts_across_nodes() -> None:
    sim = _sim(UNGUARDED_POLICY, nodes=2, gpus=8)
    sim.submit([_job(f"s{i}", 0, 5000, 10, gpus=4) for i in range(4)])
    sim.submit(_job("big", 10, 100, 100, gpus=16))
    sim.run_until(10)
    check_invariants(sim)
    big = sim.snapshot().job("big")
    assert big is not None and big.state is JobState.RUNNING
    assert {n: len(i) for n, i in big.allocation.items()} == {"gpu-001": 8, "gpu-002": 8}
    assert len(convert.preemption_events(sim)) == 4


def test_single_node_victims_follow_the_engine_minimum_cost() -> None:
    # Two nodes; the 4-GPU request takes the node whose jobs lost least work (started last).
    sim = _sim(UNGUARDED_POLICY, nodes=2, gpus=4)
    sim.submit([_job("old", 0, 5000, 10, gpus=4), _job("new1", 100, 5000, 10, gpus=2),
                _job("new2", 100, 5000, 10, gpus=2), _job("H", 200, 10, 100, gpus=4)])
    sim.run_until(200)
    assert sorted(v for _, v, _ in _preemptions(sim)) == ["new1", "new2"]  # 2×2×100 = 400 < 4×200


def test_actions_validate_and_dry_runs_change_nothing() -> None:
    sim = _sim(UNGUARDED_POLICY, gpus=1)
    sim.submit([_job("R", 0, 100, 10), _job("P", 0, 100, 5), _job("D", 0, 1, 50)])
    sim.run_until(50)
    with pytest.raises(NotFound, match="no job nope on cluster demo"):
        actions.bump(sim, "nope", priority=3)
    with pytest.raises(NotFound, match=r"^no job ' D' on cluster demo: did you mean D\? "):  # (D ended: still known)
        actions.bump(sim, " D", priority=3)
    with pytest.raises(Refused, match="already ended"):
        actions.bump(sim, "D", priority=3)
    with pytest.raises(Refused, match="not running"):
        actions.preempt(sim, "P", mode=Mode.REQUEUE)
    before = json.dumps(dump(sim))
    assert actions.bump(sim, "P", urgent=True, dry_run=True) == ({"priority": 5, "urgent": False},
                                                        {"priority": 5, "urgent": True})
    actions.exempt(sim, "R", until=999.0, dry_run=True)
    actions.preempt(sim, "R", mode=Mode.CANCEL, dry_run=True)
    assert json.dumps(dump(sim)) == before
    # The bump takes effect at once: P becomes urgent and preempts R.
    actions.bump(sim, "P", urgent=True)
    assert _preemptions(sim) == [(50.0, "R", "P")]
    assert sim.snapshot().job("P").urgent  # type: ignore[union-attr]


def test_operator_preempt_and_bump_priority() -> None:
    sim = _sim(replace(UNGUARDED_POLICY, mode=Mode.REQUEUE))
    sim.submit([_job("R", 0, 100, 10), _job("P", 0, 100, 5)])
    sim.run_until(10)
    before, after = actions.preempt(sim, "R", mode=Mode.REQUEUE)
    assert before["state"] == "running" and after["state"] == "pending"
    assert _preemptions(sim) == [(10.0, "R", None)]
    # Requeued, R is still the best job waiting, so it starts again at once (from scratch).
    snap = sim.snapshot()
    assert snap.job("R").state is JobState.RUNNING and snap.job("R").start_time == from_epoch(10.0)  # type: ignore[union-attr]
    assert snap.job("R").preemption_times == (from_epoch(10.0),)  # type: ignore[union-attr]
    actions.bump(sim, "P", priority=20)  # now P outranks R and takes the GPU
    assert sim.snapshot().job("P").state is JobState.RUNNING  # type: ignore[union-attr]
    assert _preemptions(sim)[-1] == (10.0, "R", "P")


def test_snapshot_fields() -> None:
    sim = _sim(UNGUARDED_POLICY, nodes=2, gpus=4)
    sim.submit([_job("a", 0, 1000, 10, gpus=3, ckpt=100), _job("b", 0, 1000, 5, gpus=4),
                _job("c", 0, 1000, 5, gpus=4), _job("d", 1, 1000, 1, gpus=2)])
    sim.run_until(250)
    snap = sim.snapshot()
    assert (snap.cluster, snap.backend, snap.now) == ("demo", "demo", 250.0)
    a = snap.job("a")
    assert a is not None and a.allocation == {"gpu-001": (0, 1, 2)} and a.last_checkpoint_time == from_epoch(200.0)
    assert [n.state.value for n in snap.nodes] == ["mixed", "allocated"]
    reasons = {j.id: j.reason for j in snap.jobs if j.state is JobState.PENDING}
    assert reasons == {"c": "Resources", "d": "Priority"}


def test_policy_class_override_changes_preemptibility() -> None:
    policy = replace(UNGUARDED_POLICY, classes={"vip": ClassPolicy(preemptible=True)})
    sim = _sim(policy)
    sim.submit([_job("V", 0, 100, 1, cls="vip"), _job("H", 10, 10, 10**5)])
    sim.run()
    assert [v for _, v, _ in _preemptions(sim)] == ["V"]


def test_stream_is_reproducible_and_persistable() -> None:
    spec = ClusterSpec()
    a = WorkloadStream(5, spec)
    first = [a.next_batch(0.0) for _ in range(3)]
    b = WorkloadStream.from_dict(json.loads(json.dumps(a.to_dict())), spec, a.classes)
    assert [a.next_batch(100.0) for _ in range(5)] == [b.next_batch(100.0) for _ in range(5)]
    assert first == [WorkloadStream(5, spec).next_batch(0.0) for _ in range(1)] + first[1:]


def test_demo_workload_runs_with_invariants() -> None:
    sim = Simulator(stream=WorkloadStream(3, ClusterSpec()), start=1_800_000_000.0, max_pending=300)
    sim.check_fast_path = True
    step_all(sim, limit=1_800_000_000.0 + 8 * 3600)
    snap = sim.snapshot()
    assert {c.name for c in snap.classes} >= {"urgent", "normal"}
    assert any(j.gpus > 8 for j in snap.jobs)  # multi-node jobs
    assert any(j.checkpoint_interval_s for j in snap.jobs)
    assert sim.preemptions > 0


@pytest.mark.parametrize(
    "batch",
    [
        pytest.param([_job("N1", 10, 5, 1), _job("A", 20, 5, 1)], id="id of a known job"),
        pytest.param([_job("N1", 10, 5, 1), _job("N2", 20, 5, 1), _job("N1", 30, 5, 1)], id="id twice in the batch"),
    ],
)
def test_a_batch_with_a_duplicate_id_is_refused_whole(batch: list[JobSpec]) -> None:
    sim = _sim(UNGUARDED_POLICY)
    sim.submit([_job("A", 0, 100, 1)])
    sim.run_until(1)
    before = json.dumps(dump(sim))
    with pytest.raises(ValueError, match="duplicate job id"):
        sim.submit(batch)
    assert json.dumps(dump(sim)) == before  # none of the batch got in
    sim.submit([_job("N1", 10, 5, 1)])  # the same job alone is fine
    sim.run()
    assert [j.id for j in sim.history] == ["A", "N1"]  # (equal priorities: N1 waits for A)


@pytest.mark.parametrize("restore_at", [None, 12.0, 20.0])
def test_jobs_arrive_in_time_then_submission_order_however_they_were_submitted(restore_at: float | None) -> None:
    """Batches in time order wait in the arrival line, a batch out of order goes to the event
    heap: either way jobs arrive by time, then in the order they were submitted; also when
    the simulator is saved and restored in between (the line's events are saved too)."""
    arrived: list[tuple[float, str]] = []

    def watch(sim: Simulator) -> None:
        def seen(step: str, job: SimJob, by: SimJob | None) -> None:
            if step == "arrive":
                arrived.append((sim.now, job.id))

        sim.observer = seen

    sim = _sim(UNGUARDED_POLICY, gpus=8)
    watch(sim)
    sim.submit([_job("a", 10, 5, 1), _job("b", 20, 5, 1), _job("c", 20, 5, 1)])  # in time order
    sim.submit([_job("d", 15, 5, 1), _job("e", 5, 5, 1)])  # not
    sim.submit([_job("f", 20, 5, 1), _job("g", 30, 5, 1)])  # continues the first
    assert (len(sim.arrivals), len(sim.events)) == (5, 2)
    if restore_at is not None:
        sim.run_until(restore_at)
        sim = load(json.loads(json.dumps(dump(sim))))
        watch(sim)
    sim.run()
    assert arrived == [(5, "e"), (10, "a"), (15, "d"), (20, "b"), (20, "c"), (20, "f"), (30, "g")]
    assert [j.id for j in sim.history][-1] == "g"


def test_a_new_policy_recounts_the_running_jobs_as_victims() -> None:
    """set_policy re-arms every running job: a class made non-preemptible stops offering victims,
    made preemptible again offers them, and a new Δ applies to the jobs already running."""
    sim = _sim(replace(UNGUARDED_POLICY, classes={"batch": ClassPolicy(preemptible=False)}), nodes=1, gpus=2)
    sim.submit([_job("A", 0, 1000, 1), _job("B", 0, 1000, 2), _job("H", 10, 100, 50)])
    sim.run_until(20)
    assert sim.preemptions == 0 and _model_job(sim, "H").state is JobState.PENDING
    sim.set_policy(replace(UNGUARDED_POLICY, delta=60.0))  # preemptible now, but a gap of 49 or 48 is not > 60
    sim.run_until(30)
    assert sim.preemptions == 0 and _model_job(sim, "H").state is JobState.PENDING
    sim.set_policy(replace(UNGUARDED_POLICY, delta=48.5))  # only A (priority 1) is far enough below H
    sim.run_until(40)
    assert [(e.victim, e.preemptor) for e in convert.preemption_events(sim)] == [("A", "H")]
    assert _model_job(sim, "H").state is JobState.RUNNING
