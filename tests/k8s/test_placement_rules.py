"""The cluster's own rules in gpuq's plan on Kubernetes: a pod runs on one node, a PriorityClass
with ``preemptionPolicy: Never`` preempts nobody, and Kueue preempts only workloads it admitted
(`gpuq job`, `gpuq preview`, the overview and a bump's preview)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpuq.backends.kubernetes import KubernetesBackend
from tests.clock import FixedClock
from tests.k8s.conftest import NOW, Gpuq, Target
from tests.k8s.double import FIXTURES
from tests.k8s.writes import WritableDouble

BIG = "ml-team-a/big-train"


def _json(result: Any, code: int = 0) -> dict[str, Any]:
    assert result.exit_code == code, result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


def _config(xdg: dict[str, Path], kubeconfig: Path) -> None:
    path = xdg["config"] / "gpuq" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    # (no watch streams: each command lists afresh)
    path.write_text(f"[backends.kubernetes]\nkubeconfig = {json.dumps(str(kubeconfig))}\nwatch = false\n")


def _with_a_16_gpu_pod() -> bytes:
    """The recorded pod list plus a pending 16-GPU pod (the urgent pod's spec, not nominated)."""
    pods = json.loads((FIXTURES / "05-pods-all.json").read_bytes())
    pod = json.loads(json.dumps(next(p for p in pods["items"] if p["metadata"]["name"] == "urgent-pod")))
    pod["metadata"].update(name="big-train", uid="00000000-0000-4000-8000-000000000016")
    for key in ("limits", "requests"):
        pod["spec"]["containers"][0]["resources"][key]["nvidia.com/gpu"] = "16"
    del pod["status"]["nominatedNodeName"]
    pods["items"].append(pod)
    return json.dumps(pods).encode()


def test_a_16_gpu_pod_on_8_gpu_nodes_is_never_planned_across_nodes(target: Target, gpuq: Gpuq,
                                                                   xdg: dict[str, Path]) -> None:  # fmt: skip
    assert target.double is not None
    target.double.reply("GET", "/api/v1/pods", status=200, body=_with_a_16_gpu_pod(), times=10)
    _config(xdg, target.kubeconfig)
    job = _json(gpuq("--backend", "kubernetes", "job", BIG, "-o", "json"))
    assert not any("could preempt" in line for line in job["explanation"])
    assert "it can never start here: it asks for 16 GPUs on one node, but the largest node has 8" in job["explanation"]
    assert job["job"]["max_nodes"] == 1
    plan = _json(gpuq("--backend", "kubernetes", "preview", BIG, "-o", "json"), 1)  # (1: never feasible)
    assert (plan["feasible"], plan["would_preempt"], plan["victims"], plan["nodes"]) == (False, False, [], [])
    overview = _json(gpuq("--backend", "kubernetes", "overview", "-o", "json"))
    big = [row for row in overview["top_pending"] if row["id"] == BIG]
    assert big and big[0]["victims"] == [] and "on one node" in big[0]["blocked"]


def test_a_what_if_is_one_pod(cluster: Target, gpuq: Gpuq, xdg: dict[str, Path]) -> None:
    cluster.config(xdg["config"])
    plan = _json(gpuq("--backend", "kubernetes", "preview", "--gpus", "16", "--priority", "100000", "-o", "json"), 1)
    assert (plan["feasible"], plan["victims"]) == (False, [])
    assert plan["blocked"] == "asks for 16 GPUs on one node, but the largest node has 8"


def test_a_never_class_preempts_nobody(cluster: Target, gpuq: Gpuq, xdg: dict[str, Path]) -> None:
    """batch-embed-0 (gpuq-batch-never, 500, ``preemptionPolicy: Never``) outranks the low pods
    (100), so gpuq's priority rule alone would take them; kube-scheduler would not."""
    cluster.config(xdg["config"])
    pod = cluster.id("ml-team-b/batch-embed-0")
    job = _json(gpuq("--backend", "kubernetes", "job", pod, "-o", "json"))
    never = f"the cluster lets class {cluster.pc('gpuq-batch-never')} preempt no job (it waits for free GPUs)"
    # 5 GPUs of that class: the low pods on gpu-node-3 would do, by priority alone
    what_if = _json(gpuq("--backend", "kubernetes", "preview", "--gpus", "5", "--class", cluster.pc("gpuq-batch-never"),
                         "-o", "json"))  # fmt: skip
    assert (what_if["victims"], what_if["blocked"]) == ([], never)
    assert not any("could preempt" in line for line in job["explanation"])
    assert f"it cannot preempt anything: {never}" in job["explanation"]
    assert job["class"]["may_preempt"] == []
    plan = _json(gpuq("--backend", "kubernetes", "preview", pod, "-o", "json"))
    assert plan["victims"] == [] and plan["blocked"] == never
    assert plan["spared"] and {s["reason"] for s in plan["spared"]} == {"cluster"}
    assert plan["native"]["would_preempt"] is False  # (both halves agree)
    text = gpuq("--backend", "kubernetes", "job", pod)
    assert "preempts no job" in text.stdout


@pytest.fixture
def kueue_lab(xdg: dict[str, Path], tmp_path: Path) -> Iterator[WritableDouble]:
    with WritableDouble(kueue=True) as server:
        _config(xdg, server.kubeconfig(tmp_path / "kubeconfig"))
        yield server


def _sweep_on_one_pod_of_5_gpus() -> bytes:
    """The recorded workloads, job-sweep-lr-9c7d4 asking for one pod of 5 GPUs instead of 2 of 4."""
    doc = json.loads((FIXTURES / "56-kueue-workloads-all.json").read_bytes())
    sweep = next(w for w in doc["items"] if w["metadata"]["name"] == "job-sweep-lr-9c7d4")
    (pod_set,) = sweep["spec"]["podSets"]
    pod_set["count"] = 1
    for key in ("limits", "requests"):
        pod_set["template"]["spec"]["containers"][0]["resources"][key]["nvidia.com/gpu"] = "5"
    return json.dumps(doc).encode()


def test_a_kueue_bump_preview_lists_only_workloads_kueue_admitted(gpuq: Gpuq, kueue_lab: WritableDouble) -> None:
    """job-sweep-lr-9c7d4 waits for quota; bumped to urgent, gpuq's priority rule alone would
    take the young pods on gpu-node-3, which no Kueue workload runs. Kueue preempts only the pods
    of a workload it admitted: train-llama-70b's (its Workload holds quota)."""
    kueue_lab.reply("GET", "/apis/kueue.x-k8s.io/v1beta2/workloads", status=200, body=_sweep_on_one_pod_of_5_gpus(),
                    times=10)  # fmt: skip
    doc = _json(gpuq("--backend", "k8s", "bump", "ml-team-b/job-sweep-lr-9c7d4", "--urgent", "--dry-run", "-o", "json"))
    preview = doc["preview"]
    assert preview["request"]["gpus"] == 5
    assert [v["id"] for v in preview["victims"]] == ["ml-team-a/train-llama-70b-7x2kq"]
    not_kueue = {s["id"] for s in preview["spared"] if s["reason"] == "cluster"}
    assert not_kueue == {"ml-team-a/finetune-bert-0", "ml-team-a/notebook-alice", "ml-team-b/eval-small",
                         "ml-team-b/sweep-lr-4wz8n"}  # fmt: skip
    snapshot = _json(gpuq("--backend", "k8s", "snapshot"))
    marked = {j["id"]: j.get("admitted_by") for j in snapshot["jobs"]}
    assert marked["ml-team-a/train-llama-70b-7x2kq"] == "kueue"  # running pod of an admitted workload
    assert marked["ml-team-a/train-llama-70b-m9vtd"] is None  # pending: kube-scheduler places it
    assert marked["ml-team-b/job-sweep-lr-9c7d4"] == "kueue"  # a workload Kueue holds back
    assert marked["ml-team-b/sweep-lr-4wz8n"] is None


def _cluster_queues(**preemption: object) -> bytes:
    """The recorded ClusterQueue list, gpu-cq's ``spec.preemption`` replaced (none: the field gone)."""
    doc = json.loads((FIXTURES / "54-kueue-clusterqueues.json").read_bytes())
    spec = doc["items"][0]["spec"]
    if preemption:
        spec["preemption"] = preemption
    else:
        del spec["preemption"]
    return json.dumps(doc).encode()


def test_the_cluster_queues_rules_are_in_the_snapshot(gpuq: Gpuq, kueue_lab: WritableDouble) -> None:
    """54: gpu-cq, withinClusterQueue LowerPriority, reclaimWithinCohort Any, no cohort; a pod of
    an admitted workload carries its ClusterQueue and Workload priority, a waiting workload the
    ClusterQueue of its LocalQueue (55)."""
    snapshot = _json(gpuq("--backend", "k8s", "snapshot"))
    assert snapshot["queues"] == [{"name": "gpu-cq", "within_queue": "lower_priority", "reclaim_within_cohort": "any",
                                   "gpu_quotas": [{"flavor": "h100", "nominal": 32}],
                                   "local_queues": ["ml-team-a/team-a-queue", "ml-team-b/team-b-queue"],
                                   # (56: each admission's podSetAssignments[].resourceUsage, as Kueue counts it)
                                   "admitted": [
                                       {"workload": "Job/ml-team-a/train-llama-70b", "gpus": {"h100": 16},
                                        "priority": 1000, "queue_time": "2026-12-01T09:26:30Z",
                                        "admitted_time": "2026-12-01T06:26:30Z"},
                                       {"workload": "Job/ml-team-b/eval-small", "gpus": {"h100": 1}, "priority": 100,
                                        "queue_time": "2026-12-01T09:26:30Z",
                                        "admitted_time": "2026-12-01T08:26:30Z"}]}]  # fmt: skip
    jobs = {j["id"]: j for j in snapshot["jobs"]}
    train = jobs["ml-team-a/train-llama-70b-7x2kq"]
    assert (train["queue"], train["queue_priority"]) == ("gpu-cq", 1000)
    # (58: admitted with flavor h100; created 09:26:30, QuotaReserved since 06:26:30)
    assert (train["queue_flavor"], train["queue_time"], train["admitted_time"]) == (
        "h100", "2026-12-01T09:26:30Z", "2026-12-01T06:26:30Z")
    assert jobs["ml-team-a/job-urgent-finetune-b81e0"]["queue"] == "gpu-cq"  # (team-a-queue → gpu-cq)
    assert "queue" not in jobs["ml-team-b/sweep-lr-4wz8n"]  # (no workload Kueue admitted runs it)


@pytest.mark.parametrize("preemption", [{"withinClusterQueue": "Never", "reclaimWithinCohort": "Any"}, {}],
                         ids=["Never", "Kueue's default"])  # fmt: skip
def test_a_cluster_queue_that_never_preempts_gets_no_victim(gpuq: Gpuq, kueue_lab: WritableDouble,
                                                            preemption: dict[str, str]) -> None:  # fmt: skip
    """The bump preview of test_a_kueue_bump_preview_lists_only_workloads_kueue_admitted, with gpu-cq
    preempting nothing: gpuq's priority rule would take train-llama-70b's pod; Kueue would not."""
    kueue_lab.reply("GET", "/apis/kueue.x-k8s.io/v1beta2/workloads", status=200, body=_sweep_on_one_pod_of_5_gpus(),
                    times=10)  # fmt: skip
    kueue_lab.reply("GET", "/apis/kueue.x-k8s.io/v1beta2/clusterqueues", status=200,
                    body=_cluster_queues(**preemption), times=10)  # fmt: skip
    never = ("the cluster lets it preempt no job: Kueue's ClusterQueue gpu-cq has withinClusterQueue: Never, no "
             "cohort (it waits for free quota)")  # fmt: skip
    sweep = "ml-team-b/job-sweep-lr-9c7d4"
    preview = _json(gpuq("--backend", "k8s", "bump", sweep, "--urgent", "--dry-run", "-o", "json"))["preview"]
    assert (preview["victims"], preview["blocked"]) == ([], never)
    spared = {s["id"]: s["detail"] for s in preview["spared"] if s["reason"] == "cluster"}
    assert spared["ml-team-a/train-llama-70b-7x2kq"] == (
        "Kueue's ClusterQueue gpu-cq (withinClusterQueue: Never) lets its workloads preempt none in the same queue")
    job = _json(gpuq("--backend", "k8s", "job", sweep, "-o", "json"))
    assert not any("could preempt" in line for line in job["explanation"])
    overview = _json(gpuq("--backend", "k8s", "overview", "-o", "json"))
    assert all(row["victims"] == [] for row in overview["top_pending"] if row["id"] == sweep)


def test_a_policy_gpuq_does_not_know_reads_as_never_and_is_said(gpuq: Gpuq, kueue_lab: WritableDouble,
                                                                tmp_path: Path) -> None:  # fmt: skip
    """A value no Kueue gpuq knows (a newer one's, a wrong type) reads as Never, and the backend
    says which (`Capabilities.notes`), its control characters escaped."""
    odd = _cluster_queues(withinClusterQueue="Sometimes\u001b[2J", reclaimWithinCohort=7)
    kueue_lab.reply("GET", "/apis/kueue.x-k8s.io/v1beta2/clusterqueues", status=200, body=odd, times=10)
    result = gpuq("--backend", "k8s", "preview", "ml-team-a/job-urgent-finetune-b81e0", "-o", "json")
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    queues = _json(gpuq("--backend", "k8s", "snapshot"))["queues"]
    assert [{k: v for k, v in q.items() if "polic" in k or "within" in k or k == "name"} for q in queues] == [
        {"name": "gpu-cq"}]  # (Never, Never: unwritten)
    backend = KubernetesBackend(kubeconfig=str(kueue_lab.kubeconfig(tmp_path / "kubeconfig")), watch=False,
                                clock=FixedClock(NOW))  # fmt: skip
    try:
        backend.snapshot()
        notes = backend.capabilities.notes
    finally:
        backend.close()
    assert notes == ("ClusterQueue gpu-cq: spec.preemption.withinClusterQueue 'Sometimes\\x1b[2J' is not one of "
                     "Never, LowerPriority, LowerOrNewerEqualPriority: read as Never",
                     "ClusterQueue gpu-cq: spec.preemption.reclaimWithinCohort '7' is not one of Never, LowerPriority, "
                     "Any: read as Never")  # fmt: skip


def test_kueues_own_plan_is_the_native_half_of_a_workloads_preview(gpuq: Gpuq, kueue_lab: WritableDouble) -> None:
    """The recorded lab: job-urgent-finetune-b81e0 (24 GPUs, priority 100000) waits in gpu-cq
    (32 nominal GPUs, withinClusterQueue LowerPriority, no cohort). Kueue counts the admissions'
    reservations (56: train-llama-70b 16, eval-small 1), not the one running pod's 8: 17 + 24 do
    not fit the 32, as Kueue's own recorded condition says ("24 more needed"). Its plan: preempt
    train-llama-70b (priority 1000) whole; eval-small's 1 GPU can stay. Named as Kueue's."""
    doc = _json(gpuq("--backend", "k8s", "preview", "ml-team-a/job-urgent-finetune-b81e0", "-o", "json"))
    native = doc["native"]
    assert (native["scheduler"], native["would_preempt"]) == ("Kueue", True)
    assert [(v["id"], v["workload"]) for v in native["victims"]] == [
        ("ml-team-a/train-llama-70b-7x2kq", "Job/ml-team-a/train-llama-70b")]
    assert native["notes"][:2] == [
        "flavor h100: 17 of 32 nominal GPUs in use; preempts within the ClusterQueue, borrowing if need be",
        "usage counted as Kueue counts it: each admitted workload's reservation (status.admission)"]
    job = _json(gpuq("--backend", "k8s", "job", "ml-team-a/job-urgent-finetune-b81e0", "-o", "json"))
    assert any("insufficient unused quota for nvidia.com/gpu in flavor h100, 24 more needed" in line
               for line in job["explanation"])  # (Kueue's own condition, recorded)
    assert ("Kueue holds it in ClusterQueue gpu-cq for lack of quota: flavor h100: 17 of 32 nominal GPUs in use; 24 "
            "more need 9 beyond it, and with no cohort it cannot borrow (usage counted as Kueue counts it: each "
            "admitted workload's reservation (status.admission))") in job["explanation"]  # fmt: skip


def _workloads(**usage: str | None) -> bytes:
    """56 with each named admitted workload's nvidia.com/gpu resourceUsage replaced (None: removed)."""
    doc = json.loads((FIXTURES / "56-kueue-workloads-all.json").read_bytes())
    for item in doc["items"]:
        name = item["metadata"]["name"]
        if name in usage:
            found = item["status"]["admission"]["podSetAssignments"][0]["resourceUsage"]
            if usage[name] is None:
                del found["nvidia.com/gpu"]
            else:
                found["nvidia.com/gpu"] = usage[name]
    return json.dumps(doc).encode()


def test_an_admission_gpuq_cannot_read_counts_by_its_pods_and_is_said(kueue_lab: WritableDouble,
                                                                      tmp_path: Path) -> None:  # fmt: skip
    """A bad quantity (its control characters escaped) and an admission reserving no GPU for a
    workload asking some: the backend says so, and those workloads count by their running pods."""
    body = _workloads(**{"job-train-llama-70b-3f2a1": "16\u001b[2Jx", "job-eval-small-5a6b2": None})
    kueue_lab.reply("GET", "/apis/kueue.x-k8s.io/v1beta2/workloads", status=200, body=body, times=10)
    backend = KubernetesBackend(kubeconfig=str(kueue_lab.kubeconfig(tmp_path / "kubeconfig")), watch=False,
                                clock=FixedClock(NOW))  # fmt: skip
    try:
        snapshot = backend.snapshot()
        notes = backend.capabilities.notes
    finally:
        backend.close()
    assert [q.admitted for q in snapshot.queues] == [()]
    assert notes == (
        "Workload ml-team-a/job-train-llama-70b-3f2a1: status.admission nvidia.com/gpu of pod set main: "
        "'16\\x1b[2Jx' is not a whole-number quantity: its usage counted as its running pods' GPUs",
        "Workload ml-team-b/job-eval-small-5a6b2: status.admission reserves no nvidia.com/gpu, though the workload "
        "asks for GPUs: its usage counted as its running pods' GPUs")  # fmt: skip


def test_kueue_preempts_the_whole_admitted_workload(gpuq: Gpuq, kueue_lab: WritableDouble) -> None:
    """gpu-cq's nominal quota cut to 8: the 24 GPUs are more than its nominal quota and it has no
    cohort, so Kueue preempts nothing; a 8-GPU what-if is not Kueue's (no queue named) and
    kube-scheduler's plan stands."""
    doc = json.loads((FIXTURES / "54-kueue-clusterqueues.json").read_bytes())
    doc["items"][0]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][2]["nominalQuota"] = 8
    kueue_lab.reply("GET", "/apis/kueue.x-k8s.io/v1beta2/clusterqueues", status=200, body=json.dumps(doc).encode(),
                    times=10)  # fmt: skip
    native = _json(gpuq("--backend", "k8s", "preview", "ml-team-a/job-urgent-finetune-b81e0", "-o", "json"))["native"]
    assert (native["scheduler"], native["victims"]) == ("Kueue", [])
    assert "24 GPUs is more than its nominal quota" in native["notes"][0]
    what_if = _json(gpuq("--backend", "k8s", "preview", "--gpus", "8", "--priority", "1000", "-o", "json"))["native"]
    assert "scheduler" not in what_if


def test_a_what_if_through_a_local_queue_gets_kueues_plan(gpuq: Gpuq, kueue_lab: WritableDouble) -> None:
    """``--queue`` names a LocalQueue (55): the what-if waits in its ClusterQueue, gpu-cq, and
    Kueue's plan is shown beside gpuq's; a LocalQueue the cluster lacks is a usage error naming
    the known ones."""
    for queue in ("ml-team-b/team-b-queue", "team-b-queue"):
        native = _json(gpuq("--backend", "k8s", "preview", "--gpus", "24", "--priority", "100000", "--queue", queue,
                            "-o", "json"), 1)["native"]  # (gpuq's own: 24 GPUs on one 8-GPU node, never)
        assert (native["scheduler"], [v["workload"] for v in native["victims"]]) == (
            "Kueue", ["Job/ml-team-a/train-llama-70b"])
    result = gpuq("--backend", "k8s", "preview", "--gpus", "1", "--priority", "1000", "--queue", "nope")
    assert result.exit_code != 0 and (result.exception is None or isinstance(result.exception, SystemExit))
    assert ("--queue nope: no such LocalQueue on cluster" in result.output
            and "(LocalQueues: ml-team-a/team-a-queue, ml-team-b/team-b-queue)" in result.output)  # fmt: skip
