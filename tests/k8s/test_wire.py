"""Decoding the recorded bodies into gpuq's own structs (never the official client's models)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import msgspec
import pytest

from gpuq.backends.kubernetes import kueue
from gpuq.backends.kubernetes import wire as w
from gpuq.errors import BadInput
from tests.k8s.double import FIXTURES, recordings

LISTS: dict[str, type[Any]] = {
    "PodList": w.PodList,
    "NodeList": w.NodeList,
    "PriorityClassList": w.PriorityClassList,
    "PodDisruptionBudgetList": w.PodDisruptionBudgetList,
    "EventList": w.EventList,
    "WorkloadList": kueue.WorkloadList,
    "WorkloadPriorityClassList": kueue.WorkloadPriorityClassList,
    "ClusterQueueList": kueue.ClusterQueueList,
    "LocalQueueList": kueue.LocalQueueList,
}
ITEMS: dict[str, type[Any]] = {"Pod": w.Pod, "Node": w.Node, "Workload": kueue.Workload, "Event": w.Event}

_LIST_FILES = [
    r.file
    for r in recordings()
    if r.file.endswith(".json") and json.loads((FIXTURES / r.file).read_bytes()).get("kind") in LISTS  # fmt: skip
]


@pytest.mark.parametrize("file", _LIST_FILES)
def test_every_recorded_list_decodes_object_for_object(file: str) -> None:
    raw = (FIXTURES / file).read_bytes()
    doc = json.loads(raw)
    decoded = msgspec.json.Decoder(LISTS[doc["kind"]]).decode(raw)
    assert decoded.metadata.resource_version == doc["metadata"]["resourceVersion"]
    assert decoded.metadata.continue_ == doc["metadata"].get("continue", "")
    assert [i.metadata.name for i in decoded.items] == [i["metadata"]["name"] for i in doc["items"]]
    assert [i.metadata.namespace for i in decoded.items] == [i["metadata"].get("namespace", "") for i in doc["items"]]
    assert [i.metadata.resource_version for i in decoded.items] == [
        i["metadata"]["resourceVersion"] for i in doc["items"]
    ]


def test_pages_carry_continue_and_remaining_count() -> None:
    page = msgspec.json.decode((FIXTURES / "22-pods-limit3-page1.json").read_bytes(), type=w.PodList)
    assert page.metadata.continue_.startswith("eyJ2Ijoi") and page.metadata.remaining_item_count == 2
    last = msgspec.json.decode((FIXTURES / "23-pods-limit3-page2.json").read_bytes(), type=w.PodList)
    assert last.metadata.continue_ == "" and last.metadata.remaining_item_count is None


def test_pod_fields_gpuq_reads() -> None:
    pod = msgspec.json.decode((FIXTURES / "11-pod-running.json").read_bytes(), type=w.Pod)
    assert pod.metadata.key == "ml-team-a/train-llama-70b-7x2kq"
    assert pod.metadata.controller is not None and (pod.metadata.controller.kind, pod.metadata.controller.name) == (
        "Job", "train-llama-70b")  # fmt: skip
    assert (pod.spec.node_name, pod.spec.priority, pod.spec.priority_class_name) == ("gpu-node-1", 1000, "gpuq-normal")
    assert pod.spec.scheduler_name == "default-scheduler" and pod.gpus() == 8
    assert pod.status.start_time == datetime(2026, 11, 29, 11, 2, tzinfo=UTC)
    assert pod.metadata.annotations["gpuq.io/last-checkpoint"] == "2026-11-29T17:40:00Z"
    nominated = msgspec.json.decode((FIXTURES / "12-pod-pending-nominated.json").read_bytes(), type=w.Pod)
    scheduled = nominated.status.condition("PodScheduled")
    assert scheduled is not None and (scheduled.status, scheduled.reason) == ("False", "Unschedulable")
    assert nominated.status.nominated_node_name == "gpu-node-2"
    victim = msgspec.json.decode((FIXTURES / "13-pod-preempted-victim.json").read_bytes(), type=w.Pod)
    target = victim.status.condition("DisruptionTarget")
    assert target is not None and target.reason == "PreemptionByScheduler" and victim.status.phase == "Failed"
    terminated = victim.status.container_statuses[0].state.terminated
    assert terminated is not None and terminated.exit_code == 143
    terminating = msgspec.json.decode((FIXTURES / "14-pod-terminating.json").read_bytes(), type=w.Pod)
    assert (
        terminating.metadata.deletion_timestamp is not None and terminating.metadata.deletion_grace_period_seconds == 30
    )


def test_node_fields_gpuq_reads() -> None:
    nodes = msgspec.json.decode((FIXTURES / "04-nodes.json").read_bytes(), type=w.NodeList).items
    cordoned = next(n for n in nodes if n.metadata.name == "gpu-node-4")
    assert cordoned.spec.unschedulable and {t.key for t in cordoned.spec.taints} >= {
        "node.kubernetes.io/unschedulable", "gpuq.io/maintenance"}  # fmt: skip
    assert cordoned.gpus() == 8 and cordoned.metadata.labels["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3"
    ready = cordoned.ready()
    assert ready is not None and ready.status == "True"


def test_events_of_both_apis_read_the_same() -> None:
    """The same two stored events through core/v1 (17) and events.k8s.io/v1 (20): subject,
    text and time agree, each read from the fields its API fills."""
    core = msgspec.json.decode((FIXTURES / "17-events-reason-preempted.json").read_bytes(), type=w.EventList).items
    new = msgspec.json.decode((FIXTURES / "20-eventsk8sio-reason-preempted.json").read_bytes(), type=w.EventList).items
    assert [(e.subject.key, e.text, e.time, e.reporter) for e in core] == [
        (e.subject.key, e.text, e.time, e.reporter) for e in new]  # fmt: skip
    by_pod = {e.subject.key: e for e in core}
    # written through events.k8s.io: eventTime only, no first/last timestamps in core/v1
    assert by_pod["ml-team-b/sweep-lr-h5jrc"].last_timestamp is None
    assert by_pod["ml-team-b/sweep-lr-h5jrc"].time == datetime(2026, 11, 29, 17, 58, 3, 412345, tzinfo=UTC)
    assert by_pod["ml-team-b/sweep-lr-qp7fs"].time == datetime(2026, 11, 29, 17, 58, 3, tzinfo=UTC)
    assert {e.text for e in new} == {"Preempted by ml-team-a/urgent-pod on node gpu-node-2"}


@pytest.mark.parametrize("file", sorted(p.name for p in FIXTURES.glob("*.jsonl") if p.stat().st_size))
def test_watch_lines_decode(file: str) -> None:
    decoder = msgspec.json.Decoder(w.WatchEvent)
    for line in (FIXTURES / file).read_bytes().splitlines():
        event = decoder.decode(line)
        doc = json.loads(line)
        assert event.type == doc["type"]
        if event.type == "ERROR":
            status = msgspec.json.decode(bytes(event.object), type=w.Status)
            assert (status.code, status.reason) == (410, "Expired")
        else:
            item = msgspec.json.decode(bytes(event.object), type=ITEMS[doc["object"]["kind"]])
            assert item.metadata.resource_version == doc["object"]["metadata"]["resourceVersion"]


def test_status_bodies() -> None:
    expired = msgspec.json.decode((FIXTURES / "44-continue-expired-410.json").read_bytes(), type=w.Status)
    assert (expired.code, expired.reason) == (410, "Expired") and expired.metadata.continue_
    denied = msgspec.json.decode((FIXTURES / "35-forbidden-403-nodes.json").read_bytes(), type=w.Status)
    assert denied.code == 403 and denied.details is not None and denied.details.kind == "nodes"
    invalid = msgspec.json.decode((FIXTURES / "36-invalid-422-label.json").read_bytes(), type=w.Status)
    assert invalid.details is not None and len(invalid.details.causes) == 4  # (duplicates are real)


def test_discovery_finds_kueue_only_where_served() -> None:
    without = msgspec.json.decode((FIXTURES / "02-apis-discovery.json").read_bytes(), type=w.APIGroupList)
    with_kueue = msgspec.json.decode((FIXTURES / "50-apis-discovery-with-kueue.json").read_bytes(), type=w.APIGroupList)
    assert without.preferred("kueue.x-k8s.io") is None and without.preferred("policy") == "v1"
    assert with_kueue.preferred("kueue.x-k8s.io") == "v1beta2"


def test_kueue_objects() -> None:
    workloads = {wl.metadata.name: wl for wl in msgspec.json.decode(
        (FIXTURES / "56-kueue-workloads-all.json").read_bytes(), type=kueue.WorkloadList).items}  # fmt: skip
    admitted = workloads["job-train-llama-70b-3f2a1"]
    assert admitted.is_true("Admitted") and admitted.gpus() == 16 and admitted.class_name == "wpc-normal"
    assert admitted.status.admission is not None and admitted.status.admission.cluster_queue == "gpu-cq"
    preempted = workloads["job-sweep-lr-9c7d4"]
    assert preempted.is_true("Evicted") and not preempted.is_true("QuotaReserved")
    assert preempted.status.requeue_state is not None and preempted.status.requeue_state.count == 1
    pending = workloads["job-urgent-finetune-b81e0"]
    assert (pending.gpus(), pending.spec.priority) == (24, 100000)
    queue = msgspec.json.decode((FIXTURES / "54-kueue-clusterqueues.json").read_bytes(), type=kueue.ClusterQueueList)
    assert queue.items[0].gpu_quota() == 32
    # v1beta1 (here unconverted, in v1beta2's shape) decodes too
    old = msgspec.json.decode((FIXTURES / "68-kueue-workloads-v1beta1-lab-no-conversion.json").read_bytes(),
                              type=kueue.WorkloadList)  # fmt: skip
    assert old.items and old.items[0].gpus() > 0


@pytest.mark.parametrize(("raw", "value"), [("8", 8), ("0", 0), ("1k", 1000), ("2Ki", 2048), ("1e3", 1000)])
def test_whole_quantities(raw: str, value: int) -> None:
    assert w.quantity_int(raw, "here") == value


@pytest.mark.parametrize("raw", ["1.5", "-1", "500m", "8 GPUs", "", "١", "1e400", "9" * 30])
def test_other_quantities_are_refused_naming_the_place(raw: str) -> None:
    with pytest.raises(BadInput, match="pod x: nvidia.com/gpu"):
        w.quantity_int(raw, "pod x: nvidia.com/gpu")


def test_gpus_from_limits_init_containers_and_sidecars() -> None:
    def pod(**spec: Any) -> w.Pod:
        return msgspec.json.decode(json.dumps({"metadata": {"name": "p", "namespace": "n"}, "spec": spec}), type=w.Pod)

    gpu = {"nvidia.com/gpu": "2"}
    assert pod(containers=[{"resources": {"limits": gpu}}]).gpus() == 2  # (request defaulted from the limit)
    assert pod(containers=[{"resources": {"limits": gpu}}, {"resources": {"requests": gpu, "limits": gpu}}]).gpus() == 4
    init = [{"resources": {"limits": {"nvidia.com/gpu": "3"}}}]
    assert pod(containers=[{"resources": {"limits": gpu}}], initContainers=init).gpus() == 3  # max(sum, init)
    sidecar = [{"restartPolicy": "Always", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]
    assert pod(containers=[{"resources": {"limits": gpu}}], initContainers=sidecar).gpus() == 3  # sum + sidecar
    assert pod(containers=[{"resources": {"requests": {"cpu": "1"}}}]).gpus() == 0
