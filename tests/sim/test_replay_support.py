"""What the simulator gives trace replay: every ended job once (`on_retire`), each step of every
job (`observer`), checkpoint costs (saves lengthen a run, a restart restores first) that a
saved state carries, and a remembered "no" that is always the engine's."""

from __future__ import annotations

import json
from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuq.model import DAY_S, JobClass
from gpuq.policy.config import UNGUARDED_POLICY, Mode, Policy
from gpuq.sim import ClusterSpec, JobSpec, Simulator, generate_jobs
from gpuq.sim.jobs import CANCELLED, COMPLETED, SimJob
from gpuq.sim.state import dump, load
from tests.properties import examples

from .helpers import check_invariants

CLASSES = (JobClass("low", 10), JobClass("top", 1000, preemptible=False))
costs = st.tuples(st.sampled_from([0.0, 30.0]), st.sampled_from([0.0, 45.0]))
policies = st.builds(Policy, delta=st.sampled_from([0.0, 50.0]), mode=st.sampled_from(list(Mode)),
                     grace_period_s=st.sampled_from([0.0, 120.0]), min_runtime_s=st.sampled_from([0.0, 600.0]),
                     default_aging_rate=st.sampled_from([0.0, 10.0]))  # fmt: skip


def _pair(mode: Mode, save: float = 0.0, restore: float = 0.0) -> tuple[Simulator, list[tuple[str, str, str]]]:
    sim = Simulator(policy=replace(UNGUARDED_POLICY, mode=mode, grace_period_s=60.0),
                    cluster=ClusterSpec(nodes=1, gpus_per_node=1), classes=CLASSES, checkpoint_cost_s=save,
                    restore_cost_s=restore)  # fmt: skip
    steps: list[tuple[str, str, str]] = []
    sim.observer = lambda kind, job, by: steps.append((f"{sim.now:g}", kind, job.id + (f"<{by.id}" if by else "")))
    sim.submit(
        [
            JobSpec("a", 0.0, 3000.0, priority=10, job_class="low", checkpoint_interval_s=600.0),
            JobSpec("b", 1000.0, 100.0, priority=1000, job_class="top"),
        ]
    )
    return sim, steps


def test_every_ended_job_is_handed_over_once_with_its_first_start() -> None:
    for mode, state in ((Mode.REQUEUE, COMPLETED), (Mode.CANCEL, CANCELLED)):
        sim, _ = _pair(mode)
        ended: list[SimJob] = []
        sim.on_retire = ended.append
        sim.run()
        assert sorted(j.id for j in ended) == ["a", "b"]
        victim = next(j for j in ended if j.id == "a")
        assert victim.state == state and victim.first_start == 0.0 and victim.preempt_times == (1000.0,)


def test_the_observer_sees_each_step_in_order() -> None:
    sim, steps = _pair(Mode.GRACEFUL)
    sim.run()
    assert steps == [("0", "arrive", "a"), ("0", "start", "a"), ("1000", "arrive", "b"), ("1000", "preempt", "a<b"),
                     ("1060", "drain", "a"), ("1060", "start", "b"), ("1160", "finish", "b"), ("1160", "start", "a"),
                     ("3100", "finish", "a")]  # fmt: skip
    sim, steps = _pair(Mode.CANCEL)
    sim.run()
    assert ("1000", "cancel", "a<b") in steps and ("1000", "preempt", "a<b") in steps


def test_saves_and_a_restore_lengthen_the_run_and_count_as_overhead() -> None:
    sim, steps = _pair(Mode.REQUEUE, save=30.0, restore=45.0)
    sim.run()
    # a: saves at 600+30 = 630 (the first checkpoint), preempted at 1000: 370 s lost; it restarts
    # at 1100, restores for 45 s, then does the 2400 s left with 3 saves on the way.
    assert ("3635", "finish", "a") in steps  # 1100 + 45 + 2400 + 3 × 30
    assert sim.lost_gpu_s == 370.0
    assert sim.overhead_gpu_s == 30.0 + 45.0 + 3 * 30.0
    assert sim.closed_gpu_s == 3000.0 + 100.0 + sim.lost_gpu_s + sim.overhead_gpu_s


def _sim(seed: int, policy: Policy, save: float, restore: float) -> Simulator:
    cluster = ClusterSpec(nodes=2, gpus_per_node=8)
    sim = Simulator(policy=policy, cluster=cluster, history_limit=10**6, event_limit=10**6, trace=True,
                    checkpoint_cost_s=save, restore_cost_s=restore)  # fmt: skip
    sim.check_fast_path = True  # every decision, and every remembered "no", is the engine's
    sim.submit(generate_jobs(seed, 40, cluster=cluster, load=1.3, median_duration_s=1200.0))
    return sim


@settings(max_examples=examples(12), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), policy=policies, cost=costs, cut=st.floats(0.1, 0.9))
def test_checkpoint_costs_replay_the_same_when_resumed(seed: int, policy: Policy, cost: tuple[float, float],
                                                        cut: float) -> None:  # fmt: skip
    whole = _sim(seed, policy, *cost)
    whole.run(30 * DAY_S)
    assert whole.trace is not None
    first = _sim(seed, policy, *cost)
    first.run_until(whole.trace[-1][0] * cut)
    resumed = load(json.loads(json.dumps(dump(first))), policy=policy)
    check_invariants(resumed)
    resumed.run(30 * DAY_S)
    a, b = dump(whole), dump(resumed)
    for state in (a, b):
        state["counters"].pop("plans")
    assert json.dumps(a) == json.dumps(b)
    # GPU-time held = the work of the finished jobs + lost work + checkpoint overhead
    done = sum(j.gpus * j.duration for j in whole.history if j.state == COMPLETED)
    assert abs(whole.closed_gpu_s - (done + whole.lost_gpu_s + whole.overhead_gpu_s)) < 1e-6 * max(1.0, done)
