"""Property tests over random seeds, workloads and policies: the simulator's invariants."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuq.model import DAY_S
from gpuq.policy.config import Mode, Policy
from gpuq.sim import ClusterSpec, Simulator, actions, convert, generate_jobs
from gpuq.sim.jobs import CANCELLED, COMPLETED, PENDING, RUNNING, SUSPENDED
from gpuq.sim.state import dump, load
from tests.properties import examples

from .helpers import check_invariants, step_all

policies = st.builds(
    Policy,
    delta=st.sampled_from([0.0, 5.0, 50.0]),
    mode=st.sampled_from(list(Mode)),
    grace_period_s=st.sampled_from([0.0, 120.0]),
    min_runtime_s=st.sampled_from([0.0, 600.0]),
    max_preemptions_per_day=st.sampled_from([0, 1, 2]),
    default_checkpoint_interval_s=st.sampled_from([0.0, 900.0]),
    priority_weight=st.sampled_from([0.0, 1.0]),
    default_aging_rate=st.sampled_from([0.0, 10.0, 600.0]),
)
HORIZON = 30 * DAY_S  # far beyond the last arrival of these workloads
clusters = st.builds(ClusterSpec, nodes=st.integers(1, 4), gpus_per_node=st.sampled_from([4, 8]))


def _sim(seed: int, count: int, cluster: ClusterSpec, policy: Policy, load: float = 1.3) -> Simulator:
    sim = Simulator(policy=policy, cluster=cluster, history_limit=10**6, event_limit=10**6, trace=True)
    sim.check_fast_path = True  # every shortcut decision is compared with the engine on the whole cluster
    sim.submit(generate_jobs(seed, count, cluster=cluster, load=load, median_duration_s=1200.0))
    return sim


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), count=st.integers(1, 60), cluster=clusters, policy=policies)
def test_invariants_hold_at_every_event(seed: int, count: int, cluster: ClusterSpec, policy: Policy) -> None:
    sim = _sim(seed, count, cluster, policy)
    # No double booking, GPU-time conserved, after every event time. The run is bounded in time:
    # with aging and no min_runtime, an aged job and the job it displaced can take turns forever.
    step_all(sim, limit=HORIZON)
    # Every job ends or stays queued (or runs), and nothing is lost on the way.
    live = sim.live_jobs()
    assert len(sim.history) + len(live) == count
    assert {j.state for j in sim.history} <= {COMPLETED, CANCELLED}
    assert {j.state for j in live} <= {PENDING, SUSPENDED, RUNNING}
    if policy.default_aging_rate == 0:
        assert not live  # nothing more arrives and priorities stand still, so the queue drains
    for job in sim.history:
        if job.state == COMPLETED:
            # Checkpoints restore progress: GPU-time held = useful work + work lost to preemptions.
            assert abs(job.gpu_s - (job.gpus * job.duration + job.lost_s)) < 1e-6 * max(1.0, job.gpu_s)
    assert abs(sim.closed_gpu_s - sum(j.gpu_s for j in sim.history)) < 1e-6 * max(1.0, sim.closed_gpu_s)


@settings(max_examples=examples(15), deadline=None)
@given(seed=st.integers(0, 10**6), cluster=clusters, policy=policies)
def test_protections_hold_for_automatic_preemptions(seed: int, cluster: ClusterSpec, policy: Policy) -> None:
    sim = _sim(seed, 50, cluster, policy)
    sim.run(HORIZON)
    assert sim.trace is not None
    started: dict[str, float] = {}
    times: dict[str, list[float]] = {}
    classes = {c.name: c for c in sim.classes}
    jobs = {j.id: j for j in [*sim.history, *sim.live_jobs()]}
    for t, kind, job_id, _ in sim.trace:
        if kind == "start":
            started[job_id] = t
        elif kind == "preempt":
            # min runtime, class preemptibility, 24 h cap
            assert t - started[job_id] >= policy.min_runtime_s - 1e-6
            assert classes[jobs[job_id].cls].preemptible
            times.setdefault(job_id, []).append(t)
            if policy.max_preemptions_per_day:
                recent = [x for x in times[job_id] if t - DAY_S < x <= t]
                assert len(recent) <= policy.max_preemptions_per_day


@settings(max_examples=examples(10), deadline=None)
@given(seed=st.integers(0, 10**6), policy=policies, cut=st.floats(0.1, 0.9))
def test_reproducible_and_resumable(seed: int, policy: Policy, cut: float) -> None:
    cluster = ClusterSpec(nodes=2, gpus_per_node=8)
    whole = _sim(seed, 40, cluster, policy)
    whole.run(HORIZON)
    again = _sim(seed, 40, cluster, policy)
    again.run(HORIZON)
    assert json.dumps(dump(whole)) == json.dumps(dump(again))
    # Saving mid-run and continuing from the JSON gives the very same run.
    assert whole.trace is not None
    first = _sim(seed, 40, cluster, policy)
    first.run_until(whole.trace[-1][0] * cut)
    saved = json.loads(json.dumps(dump(first)))
    resumed = load(saved, policy=policy)
    check_invariants(resumed)
    resumed.run(HORIZON)
    end, other = dump(whole), dump(resumed)
    for state in (end, other):
        state["counters"].pop("plans")  # a resumed run may ask the engine a different number of times
    assert json.dumps(end) == json.dumps(other)


@settings(max_examples=examples(10), deadline=None)
@given(seed=st.integers(0, 10**6), policy=policies, picks=st.lists(st.integers(0, 10**6), min_size=1, max_size=4))
def test_exempt_jobs_are_never_preempted_automatically(seed: int, policy: Policy, picks: list[int]) -> None:
    cluster = ClusterSpec(nodes=2, gpus_per_node=8)
    sim = _sim(seed, 50, cluster, policy)
    sim.run_until(3600.0)
    running = sorted(j.id for j in sim.live_jobs() if j.state == RUNNING)
    if not running:
        return
    since = sim.now
    until = since + 6 * 3600.0
    exempt = {running[p % len(running)] for p in picks}
    for job_id in exempt:
        actions.exempt(sim, job_id, until=until)
    sim.run(HORIZON)
    for event in convert.preemption_events(sim):
        if event.victim in exempt and event.time.timestamp() >= since:
            assert event.time.timestamp() >= until


@settings(max_examples=examples(6), deadline=None)
@given(seed=st.integers(0, 10**6), policy=policies, cluster=clusters)
def test_shortcuts_give_the_same_run_as_the_engine_alone(seed: int, policy: Policy, cluster: ClusterSpec) -> None:
    fast = _sim(seed, 40, cluster, policy)
    fast.run(HORIZON)
    slow = _sim(seed, 40, cluster, policy)
    slow.fast_path = False  # every decision through gpuq.policy.engine.plan_preemption
    slow.check_fast_path = False
    slow.run(HORIZON)
    a, b = dump(fast), dump(slow)
    for state in (a, b):
        state["counters"].pop("plans")
    assert json.dumps(a) == json.dumps(b)
