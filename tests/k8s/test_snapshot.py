"""The recorded cluster as gpuq's model (tests/fixtures/k8s/README.md, "Cluster staged in the
API"): each staged pod as the job the table says, nodes, classes, preemptions. These run against
the double, or unchanged against a real cluster (GPUQ_TEST_KUBECONFIG, tests/k8s/live.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from gpuq.model import JobState, NodeState, Snapshot
from tests.k8s.conftest import NOW, Target

# pod: (GPUs, class, state, node or None)
TABLE = {
    "ml-team-a/train-llama-70b-7x2kq": (8, "gpuq-normal", JobState.RUNNING, "gpu-node-1"),
    "ml-team-a/train-llama-70b-m9vtd": (8, "gpuq-normal", JobState.PENDING, None),
    "ml-team-a/finetune-bert-0": (2, "gpuq-normal", JobState.RUNNING, "gpu-node-3"),
    "ml-team-a/notebook-alice": (1, "gpuq-low", JobState.RUNNING, "gpu-node-3"),
    "ml-team-a/urgent-pod": (8, "gpuq-urgent", JobState.PENDING, None),
    "ml-team-b/sweep-lr-4wz8n": (4, "gpuq-low", JobState.RUNNING, "gpu-node-3"),
    "ml-team-b/sweep-lr-qp7fs": (4, "gpuq-low", JobState.PREEMPTED, None),
    "ml-team-b/sweep-lr-h5jrc": (4, "gpuq-low", JobState.COMPLETING, "gpu-node-2"),
    "ml-team-b/eval-small": (1, "gpuq-low", JobState.RUNNING, "gpu-node-3"),
    "ml-team-b/infer-server-0": (2, "gpuq-normal", JobState.RUNNING, "gpu-node-4"),
    "ml-team-b/notebook-bob": (1, "gpuq-low", JobState.RUNNING, "gpu-node-4"),
    "ml-team-b/batch-embed-0": (8, "gpuq-batch-never", JobState.PENDING, None),
}


@pytest.fixture
def snap(cluster: Target) -> Snapshot:
    return cluster.snapshot()


def test_every_staged_gpu_pod_is_the_job_the_table_says(cluster: Target, snap: Snapshot) -> None:
    ours = {j.id for j in snap.jobs if j.tenant in (cluster.ns("ml-team-a"), cluster.ns("ml-team-b"))}
    assert ours == {cluster.id(p) for p in TABLE}  # (default/v asks for no GPU: not a job)
    for pod, (gpus, cls, state, node) in TABLE.items():
        job = snap.job(cluster.id(pod))
        assert job is not None
        assert (job.gpus, job.job_class, job.state) == (gpus, cluster.pc(cls), state), pod
        # bound and unfinished: its GPUs on its node, indexes unknown through the API
        assert job.allocation == ({cluster.node(node): (None,) * gpus} if node else {}), pod
        assert job.conflict is None
        assert job.tenant == cluster.ns(pod.split("/")[0])


def test_priorities_users_owners_and_checkpoints(cluster: Target, snap: Snapshot) -> None:
    urgent = snap.job(cluster.id("ml-team-a/urgent-pod"))
    train = snap.job(cluster.id("ml-team-a/train-llama-70b-7x2kq"))
    assert urgent is not None and train is not None
    assert (urgent.priority, train.priority) == (100000, 1000)  # (spec.priority, from the class)
    assert train.user == "alice"  # the gpuq.io/user annotation
    assert train.last_checkpoint_time == datetime(2026, 11, 29, 17, 40, tzinfo=UTC)
    assert train.start_time == datetime(2026, 11, 29, 11, 2, tzinfo=UTC)


def test_pending_pods_say_why_and_where_they_are_nominated(cluster: Target, snap: Snapshot) -> None:
    urgent = snap.job(cluster.id("ml-team-a/urgent-pod"))
    embed = snap.job(cluster.id("ml-team-b/batch-embed-0"))
    assert urgent is not None and embed is not None
    assert urgent.reason is not None and urgent.reason.startswith("Unschedulable: 0/4 nodes are available")
    assert f"nominated node {cluster.node('gpu-node-2')}" in urgent.reason
    assert embed.reason == "Unschedulable: 0/4 nodes are available: 4 Insufficient nvidia.com/gpu."
    assert urgent.start_time is None and urgent.allocation == {}


def test_a_terminating_pod_still_holds_its_gpus(cluster: Target, snap: Snapshot) -> None:
    job = snap.job(cluster.id("ml-team-b/sweep-lr-h5jrc"))
    assert job is not None and job.state is JobState.COMPLETING and job.holds_gpus
    assert job.reason is not None and job.reason.startswith("terminating")
    assert snap.used_gpus()[cluster.node("gpu-node-2")] == 4  # (the preempted qp7fs holds none)


def test_the_preemption_victim(cluster: Target, snap: Snapshot) -> None:
    victim = snap.job(cluster.id("ml-team-b/sweep-lr-qp7fs"))
    assert victim is not None and victim.state is JobState.PREEMPTED and not victim.holds_gpus
    # the DisruptionTarget condition and the Preempted event are one preemption, not two
    assert victim.preemption_times == (datetime(2026, 11, 29, 17, 58, 3, tzinfo=UTC),)
    assert victim.reason is not None and victim.reason.startswith("PreemptionByScheduler")
    assert victim.end_time == datetime(2026, 11, 29, 17, 58, 34, tzinfo=UTC)  # (its container's finishedAt)


def test_pods_of_one_job_record_their_owner(target: Target) -> None:
    """(On the double only: a real cluster's garbage collector removes pods whose owner is not
    there, so tests/k8s/live.py stages them without owners.)"""
    jobs = {j.id: j for j in target.snapshot().jobs}
    owners = {key: j.comment for key, j in jobs.items()}
    assert owners["ml-team-b/sweep-lr-4wz8n"] == owners["ml-team-b/sweep-lr-qp7fs"] == "Job/sweep-lr"
    assert owners["ml-team-a/train-llama-70b-m9vtd"] == "Job/train-llama-70b"
    assert owners["ml-team-a/urgent-pod"] is None  # a bare pod
    # the grouping key, with the owner's namespace (two namespaces may each run a Job/sweep-lr)
    assert jobs["ml-team-b/sweep-lr-4wz8n"].owner == jobs["ml-team-b/sweep-lr-qp7fs"].owner == "Job/ml-team-b/sweep-lr"
    assert jobs["ml-team-a/train-llama-70b-m9vtd"].owner == "Job/ml-team-a/train-llama-70b"
    assert jobs["ml-team-a/urgent-pod"].owner is None


def test_nodes(cluster: Target, snap: Snapshot) -> None:
    nodes = {n.name: n for n in snap.nodes}
    expected = {"gpu-node-1": NodeState.ALLOCATED, "gpu-node-2": NodeState.MIXED, "gpu-node-3": NodeState.ALLOCATED,
                "gpu-node-4": NodeState.DRAIN}  # fmt: skip
    for name, state in expected.items():
        node = nodes[cluster.node(name)]
        assert (node.gpus, node.gpu_model, node.state) == (8, "NVIDIA-H100-80GB-HBM3", state), name
    used = snap.used_gpus()
    assert [used.get(cluster.node(f"gpu-node-{i}"), 0) for i in (1, 2, 3, 4)] == [8, 4, 8, 3]


def test_priority_classes(cluster: Target, snap: Snapshot) -> None:
    classes = {c.name: c for c in snap.classes}
    values = {"gpuq-low": 100, "gpuq-normal": 1000, "gpuq-urgent": 100000, "gpuq-batch-never": 500}
    for name, value in values.items():
        cls = classes[cluster.pc(name)]
        assert (cls.priority, cls.preemptible) == (value, True)
    # system classes (above a billion) outrank anything: not preemptible for GPUs
    assert classes["system-node-critical"].priority == 2000001000 and not classes["system-node-critical"].preemptible


def test_preemption_events_from_events_of_both_shapes(cluster: Target, snap: Snapshot) -> None:
    ours = [e for e in snap.preemption_events if e.victim.startswith(cluster.ns("ml-team-b") + "/")]
    by_victim = {e.victim: e for e in ours}
    assert set(by_victim) == {cluster.id("ml-team-b/sweep-lr-qp7fs"), cluster.id("ml-team-b/sweep-lr-h5jrc")}
    core = by_victim[cluster.id("ml-team-b/sweep-lr-qp7fs")]  # core/v1: firstTimestamp/lastTimestamp
    new = by_victim[cluster.id("ml-team-b/sweep-lr-h5jrc")]  # written via events.k8s.io/v1: eventTime only
    assert core.time == datetime(2026, 11, 29, 17, 58, 3, tzinfo=UTC)
    assert new.time == datetime(2026, 11, 29, 17, 58, 3, 412345, tzinfo=UTC)
    for event in (core, new):
        assert event.preemptor == cluster.id("ml-team-a/urgent-pod") and event.gpus == 4
    # GPU-time lost: 4 GPUs since the victim's last checkpoint (17:40) until 17:58:03
    assert core.gpu_seconds_lost == pytest.approx(4 * (18 * 60 + 3))
    assert len(ours) == 2  # (the condition of qp7fs is the same preemption as its event)


def test_snapshot_time_is_the_clock(cluster: Target, snap: Snapshot) -> None:
    assert snap.now == NOW and snap.backend == "kubernetes"
