"""Victim choice: triggers, protections, tie-breaks, gang and multi-node plans, brute-force optimum."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from msgspec.structs import replace

from gpuq.model import Job, JobClass, JobState, Node, NodeState, Snapshot, job_id_key
from gpuq.model import PreviewRequest as Request
from gpuq.policy.config import UNGUARDED_POLICY, ClassPolicy, Policy
from gpuq.policy.engine import Reason, free_gpus, plan_preemption, request_for_job
from gpuq.policy.rules import effective_priority, gpu_seconds_lost
from tests.factories import make_job, make_snapshot
from tests.properties import examples

NOW = 1_800_000_000.0
CLASSES = (
    JobClass("low", 10, True, 3600, 7200),
    JobClass("normal", 100, True, 1800, 3600),
    JobClass("vip", 500, False, 600, 1200),
)


def policy_with(**changes: Any) -> Policy:
    """No protections (`UNGUARDED_POLICY`) but `changes`: each test names the mechanism it checks."""
    return dataclasses.replace(UNGUARDED_POLICY, **changes)


def running(
    job_id: str,
    alloc: dict[str, Sequence[int]],
    *,
    age: float = 3600,
    priority: int = 10,
    cls: str = "low",
    tenant: str = "t",
    **extra: object,
) -> Job:
    return make_job(
        id=job_id, name=job_id, user="u", tenant=tenant, job_class=cls, priority=priority,
        state=JobState.RUNNING, submit_time=NOW - age - 60, start_time=NOW - age,
        gpus=sum(len(v) for v in alloc.values()), allocation={n: tuple(i) for n, i in alloc.items()},
        **extra,  # type: ignore[arg-type]
    )


def snap(jobs: Sequence[Job], nodes: Sequence[Node] | None = None) -> Snapshot:
    return make_snapshot("test", "test", NOW, CLASSES, tuple(nodes or (Node("n1", 8), Node("n2", 8))), tuple(jobs))


def victims(plan: object) -> list[str]:
    return sorted(v.job_id for v in plan.victims)  # type: ignore[attr-defined]


def reasons(plan: object) -> dict[str, str]:
    return {c.job_id: c.reason.value for c in plan.spared}  # type: ignore[attr-defined]


def test_fits_without_preemption_uses_best_fit_node() -> None:
    s = snap([running("a", {"n1": range(6)}), running("b", {"n2": range(2)})])
    plan = plan_preemption(s, UNGUARDED_POLICY, Request(gpus=2, priority=100), NOW)
    assert plan.fits_without_preemption and not plan.would_preempt
    assert plan.nodes == ("n1",)  # 2 free on n1 is the tighter fit than 6 on n2


def test_cheapest_victim_is_the_youngest_without_checkpoints() -> None:
    s = snap([
        running("old", {"n1": range(4)}, age=7200),
        running("young", {"n1": range(4, 8)}, age=600),
        running("mid", {"n2": range(8)}, age=3600),
    ])
    plan = plan_preemption(s, UNGUARDED_POLICY, Request(gpus=4, priority=100), NOW)
    assert victims(plan) == ["young"]
    assert plan.nodes == ("n1",)
    assert plan.victims[0].gpu_seconds_lost == pytest.approx(4 * 600)
    assert plan.freed_gpus == 4
    assert plan.victims[0].reason is Reason.CHOSEN


def test_checkpoint_makes_an_old_job_cheap() -> None:
    s = snap([
        running("old", {"n1": range(4)}, age=7200, last_checkpoint_time=NOW - 30),
        running("young", {"n1": range(4, 8)}, age=600),
    ], nodes=[Node("n1", 8)])
    plan = plan_preemption(s, UNGUARDED_POLICY, Request(gpus=4, priority=100), NOW)
    assert victims(plan) == ["old"]
    assert plan.total_cost == pytest.approx(4 * 30)


def test_default_checkpoint_interval_bounds_loss() -> None:
    job = running("a", {"n1": range(2)}, age=1000)
    assert gpu_seconds_lost(job, policy_with(default_checkpoint_interval_s=300), NOW) == pytest.approx(2 * 100)
    assert gpu_seconds_lost(job, UNGUARDED_POLICY, NOW) == pytest.approx(2 * 1000)


def test_delta_threshold_blocks_small_gaps() -> None:
    s = snap([running("a", {"n1": range(8)}, priority=10), running("b", {"n2": range(8)}, priority=10)])
    plan = plan_preemption(s, policy_with(delta=100), Request(gpus=8, priority=110), NOW)
    assert not plan.would_preempt
    assert reasons(plan) == {"a": "delta", "b": "delta"}
    assert plan.blocked is not None
    plan = plan_preemption(s, policy_with(delta=100), Request(gpus=8, priority=111), NOW)
    assert plan.would_preempt


def test_equal_priority_never_preempts_with_zero_delta() -> None:
    s = snap([running("a", {"n1": range(8)}, priority=100), running("b", {"n2": range(8)}, priority=100)])
    plan = plan_preemption(s, UNGUARDED_POLICY, Request(gpus=1, priority=100), NOW)
    assert not plan.would_preempt
    assert set(reasons(plan).values()) == {"delta"}


def test_exemption_protects_until_it_expires() -> None:
    s = snap([running("a", {"n1": range(8)}, exempt_until=NOW + 60)], nodes=[Node("n1", 8)])
    plan = plan_preemption(s, UNGUARDED_POLICY, Request(gpus=8, priority=100), NOW)
    assert reasons(plan) == {"a": "exempt"}
    plan = plan_preemption(s, UNGUARDED_POLICY, Request(gpus=8, priority=100), NOW + 61)
    assert victims(plan) == ["a"]


def test_class_not_preemptible() -> None:
    s = snap([running("v", {"n1": range(8)}, cls="vip", priority=1)], nodes=[Node("n1", 8)])
    plan = plan_preemption(s, UNGUARDED_POLICY, Request(gpus=1, priority=100), NOW)
    assert reasons(plan) == {"v": "class"}
    override = policy_with(classes={"vip": ClassPolicy(preemptible=True)})
    assert victims(plan_preemption(s, override, Request(gpus=1, priority=100), NOW)) == ["v"]


def test_min_runtime_spares_young_jobs() -> None:
    s = snap([running("young", {"n1": range(4)}, age=120), running("old", {"n1": range(4, 8)}, age=7200)],
             nodes=[Node("n1", 8)])
    plan = plan_preemption(s, policy_with(min_runtime_s=600), Request(gpus=4, priority=100), NOW)
    assert victims(plan) == ["old"]
    assert reasons(plan) == {"young": "min_runtime"}
    assert "2m" in next(c.detail for c in plan.spared if c.job_id == "young")


def test_daily_cap_counts_only_last_24h() -> None:
    times = (NOW - 86400 - 1, NOW - 3600, NOW - 60)
    s = snap([running("a", {"n1": range(8)}, preemption_times=times)], nodes=[Node("n1", 8)])
    assert reasons(plan_preemption(s, policy_with(max_preemptions_per_day=2), Request(gpus=8, priority=99), NOW)) == {
        "a": "cap"
    }
    request = Request(gpus=8, priority=99)
    assert victims(plan_preemption(s, policy_with(max_preemptions_per_day=3), request, NOW)) == ["a"]
    request = Request(gpus=8, priority=99)
    assert victims(plan_preemption(s, policy_with(max_preemptions_per_day=0), request, NOW)) == ["a"]


def test_aging_lifts_a_long_waiting_job_over_delta() -> None:
    pending = make_job(id="p", name="p", user="u", tenant="t", job_class="low", priority=10, state=JobState.PENDING,
                  submit_time=NOW - 7200 - 600, gpus=8)
    s = snap([running("r", {"n1": range(8)}, priority=50), pending], nodes=[Node("n1", 8)])
    policy = policy_with(classes={"low": ClassPolicy(aging_rate=10)})
    # 10 minutes past max_wait 2h at 10 points/minute: 10 + 100 = 110 > 50.
    assert effective_priority(pending, CLASSES[0], policy, NOW) == pytest.approx(110)
    assert victims(plan_preemption(s, policy, request_for_job(pending), NOW)) == ["r"]
    assert not plan_preemption(s, policy, request_for_job(pending), NOW - 600).would_preempt


def test_manual_urgency_and_tenant_quota() -> None:
    s = snap([
        running("r", {"n1": range(8)}, priority=500, cls="normal"),
        running("u1", {"n2": range(6)}, priority=5, tenant="nlp", urgent=True),
    ])
    req = Request(gpus=8, priority=1, tenant="nlp", urgent=True)
    assert victims(plan_preemption(s, UNGUARDED_POLICY, req, NOW)) == ["r"]
    capped = policy_with(urgent_quota={"nlp": 10})
    plan = plan_preemption(s, capped, req, NOW)
    assert not plan.would_preempt
    assert any("urgent quota of 10" in n for n in plan.notes)
    assert plan.effective_priority == 1


def test_gang_victim_frees_all_its_nodes_and_counts_whole_cost() -> None:
    s = snap([
        running("gang", {"n1": range(4), "n2": range(4)}, age=100),
        running("a", {"n1": range(4, 8)}, age=1000),
        running("b", {"n2": range(4, 8)}, age=1000),
    ])
    plan = plan_preemption(s, UNGUARDED_POLICY, Request(gpus=4, priority=100), NOW)
    # gang costs 8 GPUs x 100 s = 800 < a/b at 4 x 1000 s.
    assert victims(plan) == ["gang"]
    assert plan.victims[0].nodes == ("n1", "n2")
    assert plan.victims[0].gpu_seconds_lost == pytest.approx(800)


def test_tie_breaks_fewer_victims_then_most_recent() -> None:
    # Two 2-GPU jobs (total cost 800) versus one 4-GPU job (cost 800): fewer victims wins.
    s = snap([
        running("x1", {"n1": range(2)}, age=200), running("x2", {"n1": range(2, 4)}, age=200),
        running("fill1", {"n1": range(4, 8)}, age=5000),
        running("y", {"n2": range(4)}, age=200), running("fill2", {"n2": range(4, 8)}, age=5000),
    ])
    assert victims(plan_preemption(s, UNGUARDED_POLICY, Request(gpus=4, priority=100), NOW)) == ["y"]


def test_tie_break_lower_priority_then_ids_then_node() -> None:
    s = snap([
        running("b", {"n1": range(8)}, age=100, priority=20),
        running("a", {"n2": range(8)}, age=100, priority=30),
    ])
    assert victims(plan_preemption(s, UNGUARDED_POLICY, Request(gpus=8, priority=100), NOW)) == ["b"]
    s = snap([running("b", {"n1": range(8)}, age=100), running("a", {"n2": range(8)}, age=100)])
    assert victims(plan_preemption(s, UNGUARDED_POLICY, Request(gpus=8, priority=100), NOW)) == ["a"]


def test_down_and_drained_nodes_take_no_work() -> None:
    nodes = [Node("n1", 8, state=NodeState.DOWN), Node("n2", 8, state=NodeState.DRAIN), Node("n3", 8)]
    s = snap([running("a", {"n3": range(8)})], nodes=nodes)
    plan = plan_preemption(s, UNGUARDED_POLICY, Request(gpus=8, priority=100), NOW)
    assert plan.nodes == ("n3",) and victims(plan) == ["a"]
    assert free_gpus(s) == {"n3": 0}


def test_suspended_jobs_hold_gpus_but_are_never_victims() -> None:
    s = snap([running("s", {"n1": range(8)})], nodes=[Node("n1", 8)])
    suspended = make_snapshot(s.cluster, s.backend, NOW, CLASSES, s.nodes,
                         (replace(s.jobs[0], state=JobState.SUSPENDED),))
    plan = plan_preemption(suspended, UNGUARDED_POLICY, Request(gpus=1, priority=100), NOW)
    assert not plan.would_preempt and not plan.fits_without_preemption


def test_multi_node_request_is_valid_and_cost_greedy() -> None:
    nodes = [Node(f"n{i}", 8) for i in range(1, 4)]
    s = snap([
        running("a", {"n1": range(8)}, age=100),
        running("b", {"n2": range(8)}, age=5000),
        running("c", {"n3": range(4)}, age=50),
    ], nodes=nodes)
    plan = plan_preemption(s, UNGUARDED_POLICY, Request(gpus=16, priority=100), NOW)
    assert plan.would_preempt
    assert victims(plan) == ["a", "c"]  # 4 free + 8 + 4 = 16, leaving the expensive b alone
    assert plan.freed_gpus == 12
    assert reasons(plan) == {"b": "not_needed"}


def test_request_larger_than_cluster_is_infeasible() -> None:
    plan = plan_preemption(snap([]), UNGUARDED_POLICY, Request(gpus=17, priority=100), NOW)
    assert not plan.feasible and plan.blocked and "16" in plan.blocked


def test_plan_json_shape() -> None:
    s = snap([running("a", {"n1": range(8)}), running("b", {"n2": range(8)}, exempt_until=NOW + 10)])
    doc = plan_preemption(s, UNGUARDED_POLICY, Request(gpus=8, priority=100), NOW).to_dict()
    assert set(doc) >= {"would_preempt", "fits_without_preemption", "nodes", "victims", "spared",
                        "freed_gpus", "total_cost"}
    assert doc["victims"][0]["id"] == "a" and doc["victims"][0]["reason"] == "chosen"
    assert set(doc["victims"][0]) >= {"id", "nodes", "gpus", "gpu_seconds_lost", "cost", "reason"}
    assert {"id": "b", "reason": "exempt"}.items() <= doc["spared"][0].items()


# --- property tests -------------------------------------------------------------------------------


@st.composite
def clusters(draw: st.DrawFn) -> tuple[Snapshot, Policy, Request]:
    node_count = draw(st.integers(1, 3))
    sizes = [draw(st.sampled_from([4, 8])) for _ in range(node_count)]
    nodes = [Node(f"n{i}", size) for i, size in enumerate(sizes)]
    jobs: list[Job] = []
    for node, size in zip(nodes, sizes, strict=True):
        idx = 0
        while idx < size and draw(st.booleans()) | (idx == 0):
            width = draw(st.integers(1, size - idx))
            jobs.append(running(
                f"j{len(jobs)}", {node.name: range(idx, idx + width)},
                age=draw(st.sampled_from([60, 300, 900, 3600])),
                priority=draw(st.sampled_from([5, 10, 50])),
                exempt_until=NOW + 100 if draw(st.integers(0, 5)) == 0 else None,
                preemption_times=(NOW - 10,) * draw(st.integers(0, 2)),
            ))
            idx += width
    if len(nodes) > 1 and draw(st.booleans()):
        # A gang job across two nodes, where they still have room.
        free = free_gpus(snap(jobs, nodes))
        a, b = nodes[0].name, nodes[1].name
        if free[a] and free[b]:
            used = {n: {i for j in jobs for i in j.allocation.get(n, ())} for n in (a, b)}
            ia = min(set(range(nodes[0].gpus)) - used[a])
            ib = min(set(range(nodes[1].gpus)) - used[b])
            jobs.append(running(f"j{len(jobs)}", {a: [ia], b: [ib]}, age=draw(st.sampled_from([60, 999]))))
    policy = policy_with(
        delta=draw(st.sampled_from([0, 20])),
        min_runtime_s=draw(st.sampled_from([0, 200])),
        max_preemptions_per_day=draw(st.integers(0, 2)),
        priority_weight=draw(st.sampled_from([0.0, 10.0])),
    )
    request = Request(gpus=draw(st.integers(1, max(sizes))), priority=draw(st.sampled_from([20, 100])))
    return snap(jobs, nodes), policy, request


def brute_force(s: Snapshot, policy: Policy, req: Request) -> tuple[object, ...] | None:
    """Independent reference: try every subset of running jobs on every node."""
    from gpuq.policy.engine import class_of
    from gpuq.policy.rules import protection, victim_cost

    free = free_gpus(s)
    eligible = [j for j in s.jobs if protection(j, class_of(s, policy, j.job_class), float(req.priority or 0),
                                                policy, NOW) is None]
    best: tuple[object, ...] | None = None
    for node in s.nodes:
        if node.gpus < req.gpus:
            continue
        on_node = [j for j in eligible if node.name in j.allocation]
        for r in range(len(on_node) + 1):
            for subset in itertools.combinations(on_node, r):
                if free[node.name] + sum(len(j.allocation[node.name]) for j in subset) < req.gpus:
                    continue
                cls = {j.id: class_of(s, policy, j.job_class) for j in subset}
                key = (
                    round(sum(victim_cost(j, cls[j.id], policy, NOW) for j in subset), 6),
                    len(subset),
                    max((effective_priority(j, cls[j.id], policy, NOW) for j in subset), default=float("-inf")),
                    -sum(j.start_time.timestamp() if j.start_time else 0 for j in subset),
                    tuple(sorted(job_id_key(j.id) for j in subset)),
                    node.name,
                )
                if best is None or key < best:
                    best = key
    return best


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_single_node_plan_equals_brute_force_optimum(case: tuple[Snapshot, Policy, Request]) -> None:
    s, policy, req = case
    plan = plan_preemption(s, policy, req, NOW)
    best = brute_force(s, policy, req)
    if best is None:
        assert not plan.would_preempt and not plan.fits_without_preemption
        return
    cost, count, _, _, ids, node = best
    if count == 0:
        assert plan.fits_without_preemption
        return
    assert plan.would_preempt
    assert tuple(sorted(job_id_key(v.job_id) for v in plan.victims)) == ids
    assert plan.nodes == (node,)
    assert plan.total_cost == pytest.approx(cost, abs=1e-3)


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.integers(1, 24))
def test_plans_free_enough_and_never_touch_protected_jobs(case: tuple[Snapshot, Policy, Request], gpus: int) -> None:
    s, policy, _ = case
    req = Request(gpus=gpus, priority=100)
    plan = plan_preemption(s, policy, req, NOW)
    if not plan.would_preempt:
        return
    free = free_gpus(s)
    chosen = {v.job_id for v in plan.victims}
    released = sum(free[n] for n in plan.nodes) + sum(
        len(idx) for j in s.jobs if j.id in chosen for n, idx in j.allocation.items() if n in plan.nodes
    )
    assert released >= gpus
    if gpus <= max(n.gpus for n in s.nodes):
        assert len(plan.nodes) == 1
    from gpuq.policy.engine import class_of
    from gpuq.policy.rules import protection

    for job in s.jobs:
        if job.id in chosen:
            assert protection(job, class_of(s, policy, job.job_class), 100.0, policy, NOW) is None
    assert not chosen & {c.job_id for c in plan.spared}


def test_a_started_job_keeps_the_aging_it_earned() -> None:
    """No ping-pong: an aged job that took a GPU is not preempted back by the job it displaced."""
    # Waited 2h10m in class low (max_wait 2h, 10 points/min): 10 + 100 = 110 when it started.
    aged = make_job(id="aged", name="aged", user="u", tenant="t", job_class="low", priority=10,
               state=JobState.RUNNING, submit_time=NOW - 7800 - 60, start_time=NOW - 60, gpus=8,
               allocation={"n1": tuple(range(8))})
    assert effective_priority(aged, CLASSES[0], UNGUARDED_POLICY, NOW) == pytest.approx(110)
    s = snap([aged], nodes=[Node("n1", 8)])
    displaced = Request(gpus=8, priority=100, job_class="normal")
    plan = plan_preemption(s, UNGUARDED_POLICY, displaced, NOW)
    assert not plan.would_preempt
    assert reasons(plan) == {"aged": "delta"}
    assert victims(plan_preemption(s, UNGUARDED_POLICY, Request(gpus=8, priority=111), NOW)) == ["aged"]
