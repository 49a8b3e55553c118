"""The pruned node search (large clusters) must give exactly the plan of scanning every node."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuq.model import Job, JobClass, JobState, Node, NodeState, Snapshot
from gpuq.model import PreviewRequest as Request
from gpuq.policy import engine
from gpuq.policy.config import UNGUARDED_POLICY, Policy
from gpuq.policy.engine import plan_preemption
from gpuq.policy.pruning import PrunedOrder
from tests.factories import make_job, make_snapshot
from tests.properties import examples

NOW = 1_800_000_000.0
CLASSES = (JobClass("low", 10, True, 3600, 7200), JobClass("vip", 500, False, 600, 1200))
NODES = 80  # above engine._PRUNE_MIN_NODES


def _job(i: int, alloc: dict[str, range], draw: st.DrawFn) -> Job:
    age = float(draw(st.sampled_from([3600, 30, 300, 900, 7200, 50_000])) + draw(st.integers(0, 99)))
    checkpoint = draw(st.sampled_from([None, None, 10.0, 250.0]))
    return make_job(
        id=f"j{i}", name="", user="u", tenant=draw(st.sampled_from(["a", "b"])),
        job_class=draw(st.sampled_from(["low"] * 7 + ["vip"])),
        priority=draw(st.sampled_from([5, 10, 50, 150])), state=JobState.RUNNING,
        submit_time=NOW - age - 60, start_time=NOW - age,
        gpus=sum(len(r) for r in alloc.values()), allocation={n: tuple(r) for n, r in alloc.items()},
        last_checkpoint_time=None if checkpoint is None else NOW - checkpoint,
        checkpoint_interval_s=draw(st.sampled_from([None, None, None, 600.0])),
        exempt_until=NOW + 100 if draw(st.integers(0, 14)) == 7 else None,
        urgent=draw(st.integers(0, 29)) == 7,
        preemption_times=(NOW - 10,) * draw(st.sampled_from([0, 0, 0, 1, 2])),
    )


@st.composite
def big_clusters(draw: st.DrawFn) -> tuple[Snapshot, Policy, Request]:
    nodes = [
        Node(f"n{i:03d}", 8, state=NodeState.DOWN if draw(st.integers(0, 19)) == 7 else NodeState.MIXED)
        for i in range(NODES)
    ]
    jobs: list[Job] = []
    gang_into_next = False
    for i, node in enumerate(nodes):
        top = 7 if gang_into_next else 8  # GPU 7 already held by the previous node's gang job
        fill = top - draw(st.sampled_from([0, 0, 0, 0, 1, 2]))  # full, or up to 2 GPUs free
        idx = 0
        while idx < fill:
            width = draw(st.integers(1, fill - idx))
            jobs.append(_job(len(jobs), {node.name: range(idx, idx + width)}, draw))
            idx += width
        gang_into_next = False
        if fill == 7 and top == 8 and i + 1 < len(nodes) and draw(st.booleans()):
            # a gang job on this node's GPU 7 and the next node's GPU 7
            jobs.append(_job(len(jobs), {node.name: range(7, 8), nodes[i + 1].name: range(7, 8)}, draw))
            gang_into_next = True
    policy = replace(
        UNGUARDED_POLICY,
        delta=draw(st.sampled_from([0, 20])),
        min_runtime_s=draw(st.sampled_from([0, 200])),
        max_preemptions_per_day=draw(st.sampled_from([0, 2, 1])),
        priority_weight=draw(st.sampled_from([0.0, 0.0, 10.0])),
        default_checkpoint_interval_s=draw(st.sampled_from([0.0, 0.0, 900.0])),
    )
    request = Request(gpus=draw(st.integers(3, 8)),  # more than any node has free
                      priority=draw(st.sampled_from([1000, 100, 20])),
                      job_id=draw(st.sampled_from([None, "j0"])))
    return make_snapshot("big", "test", NOW, CLASSES, tuple(nodes), tuple(jobs)), policy, request


# (the cluster has to be big: pruning only starts above engine._PRUNE_MIN_NODES nodes)
@settings(max_examples=examples(100), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.large_base_example])
@given(big_clusters())
def test_pruned_search_equals_the_full_scan(case: tuple[Snapshot, Policy, Request]) -> None:
    snapshot, policy, request = case
    pruned = plan_preemption(snapshot, policy, request, NOW).to_dict()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(engine, "_PRUNE_MIN_NODES", 10**9)
        full = plan_preemption(snapshot, policy, request, NOW).to_dict()
    assert pruned == full


def test_pruned_search_costs_only_the_nodes_that_can_matter(monkeypatch: pytest.MonkeyPatch) -> None:
    # 200 full nodes of old jobs, and one node whose jobs started a minute ago.
    nodes = tuple(Node(f"n{i:03d}", 8) for i in range(200))
    jobs = []
    for i, node in enumerate(nodes):
        age = 60.0 if i == 137 else 86_400.0 + i
        jobs.append(make_job(id=f"j{i}", name="", user="u", tenant="t", job_class="low", priority=10,
                        state=JobState.RUNNING, submit_time=NOW - age - 5, start_time=NOW - age, gpus=8,
                        allocation={node.name: tuple(range(8))}))
    snapshot = make_snapshot("big", "test", NOW, CLASSES, nodes, tuple(jobs))
    built: list[PrunedOrder] = []
    original = PrunedOrder.build

    def spy(*args: object) -> PrunedOrder | None:
        order = original(*args)  # type: ignore[arg-type]
        if order is not None:
            built.append(order)
        return order

    monkeypatch.setattr(PrunedOrder, "build", spy)
    plan = plan_preemption(snapshot, UNGUARDED_POLICY, Request(gpus=8, priority=100), NOW)
    assert [v.job_id for v in plan.victims] == ["j137"]
    assert len(built) == 1 and len(built[0].visited) < 5


@settings(max_examples=examples(300), deadline=None)
@given(
    st.one_of(st.none(), st.floats(0, 90_000)),  # started this long ago
    st.one_of(st.none(), st.floats(0, 90_000)),  # last checkpoint this long ago
    st.sampled_from([None, 0.0, 600.0]),  # the job's own checkpoint interval
    st.sampled_from([0.0, 900.0]),  # the policy's default
    st.integers(1, 8),
)
def test_loss_start_bounds_the_lost_work(
    ran: float | None, saved: float | None, own: float | None, default: float, gpus: int
) -> None:
    from gpuq.policy.rules import gpu_seconds_lost, loss_start

    job = make_job(id="j", name="", user="u", tenant="t", job_class="low", priority=1, state=JobState.RUNNING,
              submit_time=NOW - 100_000, gpus=gpus, start_time=None if ran is None else NOW - ran,
              last_checkpoint_time=None if saved is None else NOW - saved, checkpoint_interval_s=own)
    policy = replace(UNGUARDED_POLICY, default_checkpoint_interval_s=default)
    since = loss_start(job, policy)
    for now in (NOW - 50_000, NOW, NOW + 3_600):
        assert gpu_seconds_lost(job, policy, now) >= gpus * max(0.0, now - since) - 1e-6
    if ran is not None and saved is None and own is None and default == 0:
        # without checkpoints the bound is exact: all run time is lost
        assert job.start_time is not None and since == job.start_time.timestamp()
