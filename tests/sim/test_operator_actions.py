"""An operator's suspend holds the job's GPUs until resume; a bump carries out the plan its
preview showed while that plan is still valid, and says whom it really preempted."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuq.errors import Refused
from gpuq.model import JobClass, JobState
from gpuq.policy.config import UNGUARDED_POLICY, Mode, Policy
from gpuq.policy.rules import standing_protection
from gpuq.sim import ClusterSpec, JobSpec, Simulator, actions, convert, generate_jobs
from gpuq.sim.jobs import RUNNING
from gpuq.sim.state import dump, load
from gpuq.sla import sla_report
from tests.properties import examples

from .helpers import check_invariants, step_all

CLASSES = (JobClass("batch"),)


def _sim(policy: Policy, nodes: int, gpus: int) -> Simulator:
    sim = Simulator(policy=policy, cluster=ClusterSpec(nodes=nodes, gpus_per_node=gpus), classes=CLASSES,
                    trace=True, history_limit=1000)  # fmt: skip
    sim.check_fast_path = True
    return sim


def _job(job_id: str, at: float, duration: float, priority: int, gpus: int = 1) -> JobSpec:
    return JobSpec(job_id, at, duration, gpus=gpus, priority=priority, job_class="batch")


def _starts(sim: Simulator, job_id: str) -> list[float]:
    return [t for t, kind, job, _ in sim.trace or [] if kind == "start" and job == job_id]


def test_an_operators_suspend_holds_the_gpus_until_resume() -> None:
    # (a Δ no gap reaches: only the operator's suspend is at work, never a policy preemption)
    sim = _sim(replace(UNGUARDED_POLICY, delta=1000), nodes=1, gpus=2)
    sim.submit([_job("S", 0, 1000, 10, gpus=2), _job("W", 50, 100, 50, gpus=1)])
    sim.run_until(100)  # S runs on both GPUs; W waits: nothing is free
    before, after = actions.preempt(sim, "S", mode=Mode.SUSPEND)
    assert (before["state"], after["state"]) == ("running", "suspended")
    assert after["allocation"] == before["allocation"] == {"gpu-001": [0, 1]}
    sim.run_until(400)
    snap = sim.snapshot()
    held = snap.job("S")
    assert held is not None and held.state is JobState.SUSPENDED
    assert dict(held.allocation) == {"gpu-001": (0, 1)}
    assert held.reason is not None and "holds its GPUs" in held.reason
    assert snap.job("W").state is JobState.PENDING  # type: ignore[union-attr]
    assert snap.used_gpus() == {"gpu-001": 2} and sim.gpus.total_free == 0
    check_invariants(sim)
    # A held job is not in the queue: a bump re-sorts nothing and starts nothing.
    actions.bump(sim, "S", priority=99)
    assert sim.snapshot().job("S").state is JobState.SUSPENDED  # type: ignore[union-attr]
    actions.resume(sim, "S")
    assert sim.snapshot().job("S").state is JobState.RUNNING  # type: ignore[union-attr]
    assert _starts(sim, "S") == [0.0, 400.0]
    sim.run()
    check_invariants(sim)
    done = {j.id: j for j in sim.history}
    assert done["S"].end == 400 + (1000 - 100)  # all progress kept: 900 s of work left at the resume
    assert done["S"].lost_s == 0
    assert done["W"].run_start == done["S"].end  # W never got the held GPUs


def test_resume_refuses_what_an_operator_did_not_suspend() -> None:
    sim = _sim(replace(UNGUARDED_POLICY, mode=Mode.SUSPEND), nodes=1, gpus=1)
    sim.submit([_job("L", 0, 2000, 10), _job("H", 1000, 100, 100)])
    sim.run_until(1050)  # the scheduler suspended L for H: L lent its GPU out and waits
    with pytest.raises(Refused, match="suspended by the scheduler and waits in the queue"):
        actions.resume(sim, "L")
    with pytest.raises(Refused, match="is running, not suspended"):
        actions.resume(sim, "H")
    assert sim.snapshot().job("L").state is JobState.PENDING  # type: ignore[union-attr]


def test_a_held_job_survives_save_and_restore() -> None:
    sim = _sim(UNGUARDED_POLICY, nodes=1, gpus=2)
    sim.submit([_job("S", 0, 1000, 10, gpus=2), _job("W", 50, 100, 5, gpus=1)])
    sim.run_until(100)
    actions.preempt(sim, "S", mode=Mode.SUSPEND)
    sim.run_until(200)
    restored = load(json.loads(json.dumps(dump(sim))), policy=sim.policy)
    assert restored.held == {"S": 100.0}
    assert restored.snapshot() == sim.snapshot()
    check_invariants(restored)
    for one in (sim, restored):
        one.run_until(300)
        actions.resume(one, "S")
        one.run()
    assert json.dumps(dump(sim)) == json.dumps(dump(restored))


@settings(max_examples=examples(12), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), pick=st.integers(0, 10**6), hold_s=st.sampled_from([60.0, 1800.0, 7200.0]))
def test_held_gpus_stay_with_the_suspended_job(seed: int, pick: int, hold_s: float) -> None:
    cluster = ClusterSpec(nodes=2, gpus_per_node=4)
    # (min_runtime: a resumed job is not preempted again the same instant, so the test sees it run)
    policy = replace(UNGUARDED_POLICY, min_runtime_s=600.0)
    sim = Simulator(policy=policy, cluster=cluster, history_limit=10**6, event_limit=10**6, trace=True)
    sim.check_fast_path = True
    sim.submit(generate_jobs(seed, 40, cluster=cluster, load=1.5, median_duration_s=1200.0))
    sim.run_until(3600.0)
    running = sorted(j.id for j in sim.live_jobs() if j.state == RUNNING)
    if not running:
        return
    target = running[pick % len(running)]
    gpus = {n: list(i) for n, i in sim.jobs[target].alloc.items()}
    actions.preempt(sim, target, mode=Mode.SUSPEND)
    until = sim.now + hold_s
    while (when := sim.next_event_time()) is not None and when <= until:
        sim.run_until(when)
        check_invariants(sim)  # (no GPU double-booked: nobody else was given the held ones)
        assert sim.jobs[target].alloc == gpus
    sim.run_until(until)
    # (exempt for a while: a resumed job that has run its minimum runtime may be preempted again
    # the same instant, and the test is to see it run on the GPUs it kept)
    actions.exempt(sim, target, until=sim.now + 600.0)
    actions.resume(sim, target)
    assert sim.jobs[target].alloc == gpus and sim.jobs[target].state == RUNNING
    step_all(sim, limit=until + 30 * 86400.0)


def test_a_bump_carries_out_the_plan_its_preview_showed() -> None:
    # Two nodes, each with one 2-GPU job: O started first (more work to lose), N later. The
    # engine would now take N; the operator was shown O (say, a moment earlier): O goes.
    sim = _sim(UNGUARDED_POLICY, nodes=2, gpus=2)
    sim.submit([_job("O", 0, 5000, 10, gpus=2), _job("N", 100, 5000, 10, gpus=2), _job("H", 200, 100, 5, gpus=2)])
    sim.run_until(300)
    _, after, preempted = actions.bump_reported(sim, "H", priority=100, planned=({"O": ("gpu-001",)}, ("gpu-001",)))
    assert after["priority"] == 100
    assert preempted == {"O": ("gpu-001",)}
    assert [(e.victim, e.preemptor) for e in convert.preemption_events(sim)] == [("O", "H")]
    assert dict(sim.snapshot().job("H").allocation) == {"gpu-001": (0, 1)}  # type: ignore[union-attr]
    check_invariants(sim)


def test_a_plan_no_longer_valid_is_left_to_the_scheduler_and_the_report_says_so() -> None:
    sim = _sim(UNGUARDED_POLICY, nodes=2, gpus=2)
    sim.submit([_job("O", 0, 5000, 10, gpus=2), _job("N", 100, 5000, 10, gpus=2), _job("H", 200, 100, 5, gpus=2)])
    sim.run_until(300)
    actions.exempt(sim, "O", until=10_000.0)  # protected since the preview was shown
    _, _, preempted = actions.bump_reported(sim, "H", priority=100, planned=({"O": ("gpu-001",)}, ("gpu-001",)))
    assert preempted == {"N": ("gpu-002",)}  # what really happened, for the operator to see
    assert sim.snapshot().job("O").state is JobState.RUNNING  # type: ignore[union-attr]


def test_a_planned_bump_waits_its_turn_behind_a_higher_job() -> None:
    sim = _sim(UNGUARDED_POLICY, nodes=2, gpus=2)
    sim.submit([_job("R1", 0, 5000, 10, gpus=2), _job("R2", 0, 5000, 90, gpus=2), _job("Q", 10, 100, 60, gpus=4),
                _job("H", 20, 100, 5, gpus=2)])  # fmt: skip
    sim.run_until(100)  # Q heads the queue, stuck: it would need R2 (90) as well as R1
    assert sim.snapshot().job("Q").state is JobState.PENDING  # type: ignore[union-attr]
    node = tuple(sim.jobs["R1"].alloc)
    # H bumped to 59 may preempt R1, but Q still goes first: H's plan is not carried out.
    _, _, preempted = actions.bump_reported(sim, "H", priority=59, planned=({"R1": node}, node))
    assert preempted == {}
    assert sim.snapshot().job("R1").state is JobState.RUNNING  # type: ignore[union-attr]
    # Above Q, the same plan is carried out.
    _, _, preempted = actions.bump_reported(sim, "H", priority=61, planned=({"R1": node}, node))
    assert preempted == {"R1": node}


def test_suspend_and_resume_keep_the_start_the_wait_and_the_run_time() -> None:
    # B holds both GPUs until 1000, so S waits 1000 s; S runs 500 s, is suspended 2500 s, resumed.
    policy = Policy(min_runtime_s=3600.0, mode=Mode.REQUEUE)
    sim = _sim(policy, nodes=1, gpus=2)
    sim.submit([_job("B", 0, 1000, 50, gpus=2), _job("S", 0, 10_000, 10, gpus=2)])
    sim.run_until(1500)
    actions.preempt(sim, "S", mode=Mode.SUSPEND)
    sim.run_until(3000)
    held = sim.snapshot().job("S")
    assert held is not None and held.state is JobState.SUSPENDED
    assert held.start_time is not None and held.start_time.timestamp() == 1000
    assert held.suspended_s == 1500 and held.wait_s(3000) == 1000
    sim.run_until(4000)
    actions.resume(sim, "S")
    snap = sim.snapshot()
    job = snap.job("S")
    assert job is not None and job.state is JobState.RUNNING
    assert job.start_time is not None and job.start_time.timestamp() == 1000  # the first start, kept
    assert job.wait_s(4000) == 1000  # the suspension is not queue wait
    assert job.suspended_s == 2500 and job.resumed_time is not None and job.resumed_time.timestamp() == 4000
    assert job.run_origin() == 3500  # it has run 500 s, not 3000 s nor 0 s
    sla = sla_report(snap, policy, 4000)
    assert sla.classes["batch"].max_s == 1000
    # Too young by its run time: 1500 s at 5000 (not 4000 s, and not 1000 s since the resume).
    protected = standing_protection(job, CLASSES[0], policy, 5000)
    assert protected is not None and protected[1].startswith("too young: ran 25m")
    # H outranks S: it waits until S has run its hour (3500 + 3600), not an hour past the resume.
    sim.submit([_job("H", 5000, 100, 100, gpus=2)])
    sim.run_until(8000)
    assert _starts(sim, "H") == [7100.0]
    lost = [entry[4] for entry in sim.preemption_log if entry[1] == "S" and entry[2] == "H"]
    assert lost == [2 * (7100 - 4000)]  # lost since the resume: the suspended time is not lost work
