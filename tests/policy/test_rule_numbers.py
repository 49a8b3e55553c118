"""The engine's victim numbers and the queue view's rows apply the rule kernel to the numbers
the model states.

The engine's node bound takes each candidate's cost and Δ verdict from `_Context.quick_numbers`
(which skips the protections that cannot apply under a policy without time-limited ones), and the
queue view hands the kernel each job's wait itself and keeps inline copies of the wait and the SLA
status, for speed on 200,000-job snapshots; here both are compared with the job-level rules
(`gpuq.policy.rules`) over generated jobs.
"""

from __future__ import annotations

from typing import Any
from unittest import mock

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from msgspec.structs import replace

from gpuq.config import PolicySource
from gpuq.model import Job, JobClass, JobState, Node, PreviewRequest, Snapshot
from gpuq.policy import engine
from gpuq.policy.config import ClassPolicy, Policy
from gpuq.policy.engine import class_of, plan_preemption
from gpuq.policy.rules import effective_priority, protection, victim_cost
from gpuq.service import Cluster
from gpuq.views.queue import QueueFilter, queue_rows, sla_status
from tests.factories import make_job, make_snapshot
from tests.properties import examples

NOW = 1_800_000_000.0
CLASSES = (
    JobClass("low", 10, True, 3600, 7200),
    JobClass("normal", 100, True, 1800, 3600),
    JobClass("vip", 500, False, 600, 1200),
    JobClass("flat", 50, True, None, None),
)


@st.composite
def jobs(draw: Any, index: int, node: str) -> Job:
    state = draw(st.sampled_from([JobState.RUNNING, JobState.RUNNING, JobState.PENDING, JobState.COMPLETED]))
    waited = draw(st.sampled_from([0.0, 600.0, 3599.999999, 3600.0, 7200.5, 20_000.0]))
    ran = draw(st.sampled_from([1.0, 900.0, 86_400.25]))
    submit = NOW - waited - ran
    started = state is not JobState.PENDING
    return make_job(
        f"j{index}", "n", "u", draw(st.sampled_from(["t1", "t2"])), draw(st.sampled_from([c.name for c in CLASSES])),
        draw(st.integers(0, 600)), state, submit, 2,
        eligible_time=draw(st.sampled_from([None, submit])), start_time=NOW - ran if started else None,
        end_time=NOW - 1 if state is JobState.COMPLETED else None,
        allocation={node: (2 * (index % 4), 2 * (index % 4) + 1)} if state is JobState.RUNNING else None,
        last_checkpoint_time=draw(st.sampled_from([None, NOW - 30.5])) if started else None,
        exempt_until=draw(st.sampled_from([None, None, NOW + 60])),
        urgent=draw(st.booleans()) and draw(st.booleans()),
        checkpoint_interval_s=draw(st.sampled_from([None, None, 600.0])),
        preemption_times=draw(st.sampled_from([(), (NOW - 100,), (NOW - 90_000, NOW - 5)])),
    )  # fmt: skip


@st.composite
def snapshots(draw: Any) -> Snapshot:
    """Nodes of 8 GPUs packed with running 2-GPU jobs (so a request of up to 8 GPUs must preempt
    and the engine costs every node), plus pending and finished jobs."""
    count = draw(st.integers(1, 12))
    listed = [draw(jobs(i, f"n{i // 4}")) for i in range(count)]
    running = [j for j in listed if j.state is JobState.RUNNING]
    packed = []
    for k, job in enumerate(running):  # 4 per node, GPUs 0-1, 2-3, 4-5, 6-7
        packed.append(replace(job, allocation={f"n{k // 4}": (2 * (k % 4), 2 * (k % 4) + 1)}))
    others = [j for j in listed if j.state is not JobState.RUNNING]
    nodes = tuple(Node(f"n{i}", 8) for i in range(max(1, (len(running) + 3) // 4)))
    return make_snapshot("c", "test", NOW, CLASSES, nodes, [*packed, *others])


policies = st.builds(
    Policy,
    delta=st.sampled_from([0.0, 5.0, 90.0]),
    min_runtime_s=st.sampled_from([0.0, 600.0]),
    max_preemptions_per_day=st.sampled_from([0, 1]),
    default_checkpoint_interval_s=st.sampled_from([0.0, 900.0]),
    priority_weight=st.sampled_from([0.0, 0.5]),
    default_aging_rate=st.sampled_from([0.0, 10.0]),
    classes=st.sampled_from([{}, {"low": ClassPolicy(max_wait_s=60.0, aging_rate=600.0)}]),
)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snapshots(), policies, st.integers(1, 8), st.integers(0, 2000))
def test_the_engines_node_bound_costs_victims_as_the_kernel(
    snap: Snapshot, policy: Policy, gpus: int, priority: int
) -> None:
    snapshot = snap
    contexts: list[Any] = []
    original = engine._Context.__post_init__

    def keep(self: Any) -> None:
        original(self)
        contexts.append(self)

    with mock.patch.object(engine._Context, "__post_init__", keep):
        plan = plan_preemption(snapshot, policy, PreviewRequest(gpus=gpus, priority=priority), NOW)
    if plan.feasible and not plan.fits_without_preemption:
        assert contexts and any(ctx.quick for ctx in contexts)  # the node bound ran
    for ctx in contexts:
        for job_id, (cost, unprotected) in ctx.quick.items():
            job = snapshot.job(job_id)
            assert job is not None
            cls = class_of(snapshot, policy, job.job_class)
            assert cost == victim_cost(job, cls, policy, NOW)
            assert unprotected == (protection(job, cls, plan.effective_priority, policy, NOW) is None)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snapshots(), policies)
def test_queue_rows_derive_waits_and_priorities_as_the_kernel(snap: Snapshot, policy: Policy) -> None:
    from gpuq.backends.snapshot_file import SnapshotFileBackend

    snapshot = snap
    backend = SnapshotFileBackend("-")
    backend._snapshot = snapshot
    cluster = Cluster(backend, "snapshot", PolicySource(policy, "test"))
    rows = queue_rows(cluster, snapshot, QueueFilter(states=None))
    assert len(rows) == len(snapshot.jobs)
    for row in rows:
        cls = class_of(snapshot, policy, row.job.job_class)
        assert row.effective_priority == effective_priority(row.job, cls, policy, NOW)
        assert row.wait_s == row.job.wait_s(NOW)
        assert row.sla is sla_status(row.wait_s, cls.target_p95_s)
