"""bump / exempt / preempt on Kubernetes through the CLI (``--yes``), on the double that serves
writes as the recorded server answers them (tests/k8s/writes.py): the exact requests sent (the
server-side dry run first), what they change, the audit log, and every refusal."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.k8s.conftest import Gpuq
from tests.k8s.double import FIXTURES
from tests.k8s.writes import RS_POD, WEB_POD, WritableDouble

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
BERT = "/api/v1/namespaces/ml-team-a/pods/finetune-bert-0"
BERT_UID = "fea7d8fd-b392-4e1a-9958-c6ab615a3742"
BERT_PDB = "/apis/policy/v1/namespaces/ml-team-a/poddisruptionbudgets/gpuq-exempt-finetune-bert-0"
BOB = "/api/v1/namespaces/ml-team-b/pods/notebook-bob"
BOB_UID = "79c648c8-f8d3-4701-9a6b-97fc4f11e1e5"
RS = "/apis/apps/v1/namespaces/ml-team-a/replicasets/serve-llm-6d5f8"
RS_POD_PATH = "/api/v1/namespaces/ml-team-a/pods/serve-llm-6d5f8-x7k2p"
RS_POD_UID = "5e7e0000-0000-4000-8000-00000000b001"
WL = "/apis/kueue.x-k8s.io/v1beta2/namespaces/ml-team-a/workloads/job-urgent-finetune-b81e0"
WL_SWEEP = "/apis/kueue.x-k8s.io/v1beta2/namespaces/ml-team-b/workloads/job-sweep-lr-9c7d4"


def _config(xdg: dict[str, Path], kubeconfig: Path) -> None:
    path = xdg["config"] / "gpuq" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    # (no watch streams: each command lists afresh, which is what these tests look at)
    path.write_text(f"[backends.kubernetes]\nkubeconfig = {json.dumps(str(kubeconfig))}\nwatch = false\n")


@pytest.fixture
def lab(xdg: dict[str, Path], tmp_path: Path) -> Iterator[WritableDouble]:
    with WritableDouble() as server:
        _config(xdg, server.kubeconfig(tmp_path / "kubeconfig"))
        yield server


@pytest.fixture
def kueue_lab(xdg: dict[str, Path], tmp_path: Path) -> Iterator[WritableDouble]:
    with WritableDouble(kueue=True) as server:
        _config(xdg, server.kubeconfig(tmp_path / "kubeconfig"))
        yield server


def _audit(xdg: dict[str, Path]) -> list[dict[str, Any]]:
    path = xdg["state"] / "gpuq" / "audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _writes(double: WritableDouble) -> list[tuple[str, str, str, Any]]:
    """(method, target, Content-Type, body) of every write the double received, in order."""
    return [(m, t, c.split(";")[0], json.loads(b)) for m, t, c, b in double.bodies if m != "GET"]


def _json(result: Any) -> dict[str, Any]:
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


def _one_line_error(result: Any, code: int) -> str:
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith("gpuq: error:")]
    assert len(lines) == 1, result.stderr
    return lines[0]


# ------------------------------------------------------------------ preempt
class TestPreempt:
    def test_eviction_is_dry_run_then_sent_and_audited(self, gpuq: Gpuq, lab: WritableDouble,
                                                       xdg: dict[str, Path]) -> None:  # fmt: skip
        doc = _json(gpuq("--backend", "k8s", "preempt", "ml-team-b/notebook-bob", "--reason", "oncall", "--yes",
                         "-o", "json"))  # fmt: skip
        eviction = {"apiVersion": "policy/v1", "kind": "Eviction",
                    "metadata": {"name": "notebook-bob", "namespace": "ml-team-b"},
                    "deleteOptions": {"preconditions": {"uid": BOB_UID}}}  # fmt: skip
        sent = {"method": "POST", "path": f"{BOB}/eviction", "body": eviction}
        assert doc["requests"] == [sent]
        assert (doc["before"], doc["after"]) == ({"state": "running", "node": "gpu-node-4"},
                                                 {"state": "completing", "node": "gpu-node-4"})  # fmt: skip
        assert _writes(lab) == [("POST", f"{BOB}/eviction?dryRun=All", "application/json", eviction),
                                ("POST", f"{BOB}/eviction", "application/json", eviction)]  # fmt: skip
        # as recording 38: terminating, the pod's own grace period from now
        pod = lab.stored(BOB)
        assert pod is not None and pod["metadata"]["deletionTimestamp"] == "2026-11-29T18:30:30Z"
        intent, outcome = _audit(xdg)
        assert (intent["phase"], outcome["phase"], outcome["result"]) == ("intent", "outcome", "ok")
        assert intent["requests"] == outcome["requests"] == [sent]
        assert outcome["reason"] == "oncall" and outcome["backend"] == "kubernetes"
        assert "has no controller" in " ".join(outcome["warnings"])

    def test_graceful_names_the_pods_own_grace_period(self, gpuq: Gpuq, lab: WritableDouble) -> None:
        doc = _json(gpuq("--backend", "k8s", "preempt", "ml-team-a/notebook-alice", "--mode", "graceful", "--yes",
                         "-o", "json"))  # fmt: skip
        (request,) = doc["requests"]
        assert request["body"]["deleteOptions"]["gracePeriodSeconds"] == 30  # terminationGracePeriodSeconds

    def test_a_pdb_blocked_eviction_says_which_budget(self, gpuq: Gpuq, lab: WritableDouble,
                                                      xdg: dict[str, Path]) -> None:  # fmt: skip
        result = gpuq("--backend", "k8s", "preempt", "ml-team-a/train-llama-70b-7x2kq", "--yes")
        line = _one_line_error(result, 1)
        assert ("cannot evict pod ml-team-a/train-llama-70b-7x2kq: blocked by PodDisruptionBudget "
                "ml-team-a/train-llama-70b-pdb (it needs 1 healthy pods and has 1 currently)") in line  # fmt: skip
        # refused at the dry run: no eviction was really sent
        assert [t for _, t, _, _ in _writes(lab)] == ["/api/v1/namespaces/ml-team-a/pods/train-llama-70b-7x2kq"
                                                      "/eviction?dryRun=All"]  # fmt: skip
        (record,) = _audit(xdg)
        assert record["result"] == "error" and "train-llama-70b-pdb" in record["error"]

    def test_a_budget_never_computed_blocks_too_and_says_when_to_retry(self, gpuq: Gpuq, lab: WritableDouble) -> None:
        line = _one_line_error(gpuq("--backend", "k8s", "preempt", "ml-team-b/infer-server-0", "--yes"), 1)
        assert ("blocked by PodDisruptionBudget ml-team-b/infer-server-pdb (it is still being processed by the "
                "server); the server says retry in 10 s") in line  # fmt: skip

    def test_the_recorded_429_bodies_are_what_the_double_answers(self, lab: WritableDouble) -> None:
        """The double's own eviction answers, for the recorded requests, are the recorded bodies."""
        for pod, file in (("ml-team-a/train-llama-70b-7x2kq", "39-eviction-429-pdb-computed.json"),
                          ("ml-team-b/infer-server-0", "40-eviction-429-pdb-not-processed.json"),
                          ("ml-team-b/notebook-bob", "37-eviction-201.json")):  # fmt: skip
            ns, name = pod.split("/")
            body = json.dumps({"apiVersion": "policy/v1", "kind": "Eviction",
                               "metadata": {"name": name, "namespace": ns}}).encode()  # fmt: skip
            reply = lab.answer("POST", f"/api/v1/namespaces/{ns}/pods/{name}/eviction?dryRun=All", "admin", body,
                               "application/json")  # fmt: skip
            assert json.loads(reply.body) == json.loads((FIXTURES / file).read_bytes()), file  # type: ignore[union-attr]

    def test_cancel_deletes_with_grace_0(self, gpuq: Gpuq, lab: WritableDouble) -> None:
        doc = _json(gpuq("--backend", "k8s", "preempt", "ml-team-b/notebook-bob", "--mode", "cancel", "--yes",
                         "-o", "json"))  # fmt: skip
        options = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0,
                   "preconditions": {"uid": BOB_UID}}  # fmt: skip
        assert doc["requests"] == [{"method": "DELETE", "path": BOB, "body": options}]
        # the dry run of a DELETE with a body is in the body (the server ignores the query then)
        assert _writes(lab) == [("DELETE", BOB, "application/json", {**options, "dryRun": ["All"]}),
                                ("DELETE", BOB, "application/json", options)]  # fmt: skip
        assert lab.stored(BOB) is None and doc["after"]["state"] == "gone"

    def test_suspend_is_refused_saying_why(self, gpuq: Gpuq, lab: WritableDouble) -> None:
        line = _one_line_error(gpuq("--backend", "k8s", "preempt", "ml-team-b/notebook-bob", "--mode", "suspend",
                                    "--yes"), 1)  # fmt: skip
        assert "Kubernetes cannot suspend a pod" in line
        assert _writes(lab) == []

    def test_a_pod_replaced_under_the_same_name_is_not_evicted(self, gpuq: Gpuq, lab: WritableDouble) -> None:
        # just before the eviction lands, the pod is another one of the same name (a new uid)
        lab.touch(BOB, {"metadata": {"uid": "0f0f0f0f-0000-4000-8000-000000000000"}})
        line = _one_line_error(gpuq("--backend", "k8s", "preempt", "ml-team-b/notebook-bob", "--yes"), 1)
        assert f"Precondition failed: UID in precondition: {BOB_UID}" in line and "nothing more was done" in line
        pod = lab.stored(BOB)
        assert pod is not None and "deletionTimestamp" not in pod["metadata"]


# ------------------------------------------------------------------ exempt
class TestExempt:
    def test_on_creates_a_budget_then_labels_and_off_removes_both(self, gpuq: Gpuq, lab: WritableDouble,
                                                                  xdg: dict[str, Path]) -> None:  # fmt: skip
        doc = _json(gpuq("--backend", "k8s", "exempt", "ml-team-a/finetune-bert-0", "--for", "2h", "--yes",
                         "-o", "json"))  # fmt: skip
        budget = {
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "gpuq-exempt-finetune-bert-0", "namespace": "ml-team-a",
                         "labels": {"app.kubernetes.io/managed-by": "gpuq"},
                         "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "finetune-bert-0",
                                              "uid": BERT_UID}]},
            "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"gpuq.io/exempt-id": BERT_UID}}},
        }  # fmt: skip
        labels = {"metadata": {"labels": {"gpuq.io/exempt-until": "20261129T203000Z", "gpuq.io/exempt-id": BERT_UID},
                               "annotations": {"gpuq.io/exempt-until": "2026-11-29T20:30:00Z"}}}  # fmt: skip
        assert doc["requests"] == [
            {"method": "POST", "path": "/apis/policy/v1/namespaces/ml-team-a/poddisruptionbudgets", "body": budget},
            {"method": "PATCH", "path": BERT, "body": labels, "content_type": MERGE},
        ]
        assert doc["after"] == {"exempt_until": 1795984200.0} and doc["before"] == {"exempt_until": None}
        pdb, pod = lab.stored(BERT_PDB), lab.stored(BERT)
        assert pdb is not None and pdb["spec"]["selector"] == {"matchLabels": {"gpuq.io/exempt-id": BERT_UID}}
        assert pod is not None and pod["metadata"]["labels"]["gpuq.io/exempt-until"] == "20261129T203000Z"
        # gpuq reads it back: the job is exempt, so gpuq refuses to preempt it
        job = _json(gpuq("--backend", "k8s", "job", "ml-team-a/finetune-bert-0", "-o", "json"))
        assert job["job"]["exempt_until"] == "2026-11-29T20:30:00Z"
        refused = gpuq("--backend", "k8s", "preempt", "ml-team-a/finetune-bert-0", "--yes")
        assert refused.exit_code == 1 and "exempt from preemption until" in refused.stderr
        # and the budget refuses evictions on its own (never computed: "still being processed")
        off = _json(gpuq("--backend", "k8s", "exempt", "ml-team-a/finetune-bert-0", "--off", "--yes", "-o", "json"))
        clear = {"metadata": {"labels": {"gpuq.io/exempt-until": None, "gpuq.io/exempt-id": None},
                              "annotations": {"gpuq.io/exempt-until": None}}}  # fmt: skip
        assert off["requests"] == [{"method": "PATCH", "path": BERT, "body": clear, "content_type": MERGE},
                                   {"method": "DELETE", "path": BERT_PDB, "body": None}]  # fmt: skip
        assert lab.stored(BERT_PDB) is None
        pod = lab.stored(BERT)
        assert pod is not None and "gpuq.io/exempt-id" not in pod["metadata"]["labels"]
        outcomes = [r for r in _audit(xdg) if r["phase"] == "outcome" and r["action"] == "exempt"]
        assert [r["requests"] for r in outcomes] == [doc["requests"], off["requests"]]

    def test_the_budget_blocks_evictions_of_the_exempt_pod(self, gpuq: Gpuq, lab: WritableDouble) -> None:
        _json(gpuq("--backend", "k8s", "exempt", "ml-team-b/notebook-bob", "--for", "1h", "--yes", "-o", "json"))
        body = json.dumps({"apiVersion": "policy/v1", "kind": "Eviction",
                           "metadata": {"name": "notebook-bob", "namespace": "ml-team-b"}}).encode()  # fmt: skip
        reply = lab.answer("POST", f"{BOB}/eviction", "admin", body, "application/json")
        assert reply.status == 429 and b"gpuq-exempt-notebook-bob" in reply.body  # type: ignore[union-attr]

    def test_a_failing_second_step_rolls_the_first_back(self, gpuq: Gpuq, lab: WritableDouble,
                                                        xdg: dict[str, Path]) -> None:  # fmt: skip
        # the label patch passes its dry run, then the server refuses it (recording 36's 422)
        lab.reply("PATCH", BERT, "36-invalid-422-label.json", unless="dryRun")
        line = _one_line_error(gpuq("--backend", "k8s", "exempt", "ml-team-a/finetune-bert-0", "--for", "2h",
                                    "--yes"), 1)  # fmt: skip
        assert 'Pod "finetune-bert-0" is invalid: metadata.labels' in line
        assert "rolled back: create PodDisruptionBudget ml-team-a/gpuq-exempt-finetune-bert-0" in line
        real = [(m, t) for m, t, _, _ in _writes(lab) if "dryRun" not in t]
        assert real == [("POST", "/apis/policy/v1/namespaces/ml-team-a/poddisruptionbudgets"), ("PATCH", BERT)]
        assert ("DELETE", BERT_PDB) in [(m, t) for m, t, _ in lab.log]  # the rollback (no body)
        assert lab.stored(BERT_PDB) is None  # never a half-exempt pod
        pod = lab.stored(BERT)
        assert pod is not None and "gpuq.io/exempt-until" not in (pod["metadata"].get("labels") or {})
        record = _audit(xdg)[-1]
        assert (record["phase"], record["result"]) == ("outcome", "error") and "rolled back" in record["error"]

    def test_lifting_rolls_the_labels_back_when_the_budget_cannot_go(self, gpuq: Gpuq, lab: WritableDouble) -> None:
        _json(gpuq("--backend", "k8s", "exempt", "ml-team-a/finetune-bert-0", "--for", "2h", "--yes", "-o", "json"))
        denied = (FIXTURES / "29-forbidden-403-patch.json").read_bytes().replace(b"patch", b"delete")
        lab.reply("DELETE", BERT_PDB, status=403, body=denied, unless="dryRun")
        lab.reply("DELETE", BERT_PDB, "37-eviction-201.json")  # (its dry run: accepted)
        line = _one_line_error(gpuq("--backend", "k8s", "exempt", "ml-team-a/finetune-bert-0", "--off", "--yes"), 4)
        assert "denied delete poddisruptionbudgets.policy gpuq-exempt-finetune-bert-0" in line
        assert "rolled back: remove pod ml-team-a/finetune-bert-0's exemption labels" in line
        pod = lab.stored(BERT)
        assert pod is not None and pod["metadata"]["labels"]["gpuq.io/exempt-until"] == "20261129T203000Z"
        assert lab.stored(BERT_PDB) is not None

    def test_a_kueue_workload_is_refused(self, gpuq: Gpuq, kueue_lab: WritableDouble) -> None:
        line = _one_line_error(gpuq("--backend", "k8s", "exempt", "ml-team-a/job-urgent-finetune-b81e0", "--for",
                                    "1h", "--yes"), 1)  # fmt: skip
        assert "is a Kueue Workload, not a pod" in line


# ------------------------------------------------------------------ bump
class TestBump:
    def test_a_replicasets_pending_pod_moves_the_template_then_is_recreated(
        self, gpuq: Gpuq, lab: WritableDouble, xdg: dict[str, Path]
    ) -> None:
        doc = _json(gpuq("--backend", "k8s", "bump", RS_POD, "--to", "700", "--yes", "-o", "json"))
        template = {"metadata": {"resourceVersion": "201"},
                    "spec": {"template": {"spec": {"priorityClassName": "gpuq-normal", "priority": None}}}}  # fmt: skip
        delete = {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": RS_POD_UID}}
        assert doc["requests"] == [{"method": "PATCH", "path": RS, "body": template, "content_type": MERGE},
                                   {"method": "DELETE", "path": RS_POD_PATH, "body": delete}]  # fmt: skip
        # 700: no class has it; gpuq-normal (1000) is the smallest above (gpuq-batch-never, 500, never preempts)
        assert doc["before"] == {"priority": 100, "class": "gpuq-low"}
        assert doc["after"] == {"priority": 1000, "class": "gpuq-normal"}
        assert any("no PriorityClass has value 700" in w for w in doc["warnings"])
        rs = lab.stored(RS)
        assert rs is not None and rs["spec"]["template"]["spec"]["priorityClassName"] == "gpuq-normal"
        assert lab.stored(RS_POD_PATH) is None  # deleted: the ReplicaSet recreates it from the new template
        assert _audit(xdg)[-1]["requests"] == doc["requests"]

    def test_a_stale_resource_version_is_read_again_and_retried_once(self, gpuq: Gpuq, lab: WritableDouble) -> None:
        lab.touch(RS)  # another writer moves the ReplicaSet's resourceVersion before gpuq's patch lands
        doc = _json(gpuq("--backend", "k8s", "bump", RS_POD, "--to", "1000", "--yes", "-o", "json"))
        patches = [r for r in doc["requests"] if r["method"] == "PATCH"]
        first, second = (p["body"]["metadata"]["resourceVersion"] for p in patches)
        assert first == "201" and int(second) > 201  # 409, a fresh GET, the patch again on it
        assert doc["requests"][-1]["method"] == "DELETE"
        rs = lab.stored(RS)
        assert rs is not None and rs["spec"]["template"]["spec"]["priorityClassName"] == "gpuq-normal"

    def test_a_second_conflict_stops_with_nothing_more_done(self, gpuq: Gpuq, lab: WritableDouble) -> None:
        lab.touch(RS, times=2)
        line = _one_line_error(gpuq("--backend", "k8s", "bump", RS_POD, "--to", "1000", "--yes"), 1)
        assert "the object has been modified" in line and "nothing more was done" in line
        assert lab.stored(RS_POD_PATH) is not None  # the pod was not deleted

    def test_a_template_changed_by_someone_else_is_not_overwritten(self, gpuq: Gpuq, lab: WritableDouble) -> None:
        lab.touch(RS, {"spec": {"template": {"spec": {"priorityClassName": "gpuq-urgent"}}}})
        line = _one_line_error(gpuq("--backend", "k8s", "bump", RS_POD, "--to", "1000", "--yes"), 1)
        assert "changed since the bump was prepared" in line and "gpuq-urgent" in line
        rs = lab.stored(RS)
        assert rs is not None and rs["spec"]["template"]["spec"]["priorityClassName"] == "gpuq-urgent"

    def test_dry_run_sends_only_server_dry_runs(self, gpuq: Gpuq, lab: WritableDouble, xdg: dict[str, Path]) -> None:
        doc = _json(gpuq("--backend", "k8s", "bump", RS_POD, "--to", "1000", "--dry-run", "-o", "json"))
        assert doc["dry_run"] is True
        sent = _writes(lab)
        assert [(m, t) for m, t, _, _ in sent] == [("PATCH", f"{RS}?dryRun=All"), ("DELETE", RS_POD_PATH)]
        assert sent[1][3]["dryRun"] == ["All"]
        rs = lab.stored(RS)
        assert rs is not None and rs["spec"]["template"]["spec"]["priorityClassName"] == "gpuq-low"
        assert lab.stored(RS_POD_PATH) is not None
        (record,) = _audit(xdg)
        assert record["result"] == "dry_run" and record["requests"] == doc["requests"]

    def test_a_bare_pod_is_refused_with_the_reason(self, gpuq: Gpuq, lab: WritableDouble) -> None:
        line = _one_line_error(gpuq("--backend", "k8s", "bump", "ml-team-a/urgent-pod", "--to", "1000", "--yes"), 1)
        assert ("a pod's priority is immutable; exempt it instead or recreate it with another priorityClassName"
                in line)  # fmt: skip
        assert _writes(lab) == []

    def test_a_jobs_pod_is_refused_the_job_template_being_immutable(self, gpuq: Gpuq, lab: WritableDouble) -> None:
        line = _one_line_error(gpuq("--backend", "k8s", "bump", "ml-team-a/train-llama-70b-m9vtd", "--to", "100000",
                                    "--yes"), 1)  # fmt: skip
        assert "Job ml-team-a/train-llama-70b, whose pod template is immutable" in line
        assert _writes(lab) == []

    def test_a_deployments_pod_is_refused_a_template_change_rolling_everything(
        self, gpuq: Gpuq, lab: WritableDouble
    ) -> None:
        line = _one_line_error(gpuq("--backend", "k8s", "bump", WEB_POD, "--to", "1000", "--yes"), 1)
        assert "Deployment ml-team-a/web" in line and "rolls out every replica" in line
        assert _writes(lab) == []

    def test_a_running_pod_is_refused(self, gpuq: Gpuq, lab: WritableDouble) -> None:
        line = _one_line_error(gpuq("--backend", "k8s", "bump", "ml-team-b/sweep-lr-4wz8n", "--to", "1000", "--yes"),
                               1)  # fmt: skip
        assert "bound to gpu-node-3" in line

    def test_a_workloads_priority_by_merge_patch(self, gpuq: Gpuq, kueue_lab: WritableDouble) -> None:
        doc = _json(gpuq("--backend", "k8s", "bump", "ml-team-a/job-urgent-finetune-b81e0", "--to", "5000", "--yes",
                         "-o", "json"))  # fmt: skip
        assert doc["requests"] == [
            {"method": "PATCH", "path": WL, "body": {"spec": {"priority": 5000}}, "content_type": MERGE}
        ]  # fmt: skip (recording 60's form)
        workload = kueue_lab.stored(WL)
        assert workload is not None and workload["spec"]["priority"] == 5000
        assert any("still names wpc-urgent (100000)" in w for w in doc["warnings"])

    def test_a_workloads_class_by_a_json_patch_testing_the_resource_version(
        self, gpuq: Gpuq, kueue_lab: WritableDouble
    ) -> None:
        doc = _json(gpuq("--backend", "k8s", "bump", "ml-team-b/job-sweep-lr-9c7d4", "--to", "1000", "--yes",
                         "-o", "json"))  # fmt: skip
        ops = [
            {"op": "test", "path": "/metadata/resourceVersion", "value": "247"},
            {"op": "replace", "path": "/spec/priorityClassRef/name", "value": "wpc-normal"},
            {"op": "replace", "path": "/spec/priority", "value": 1000},
        ]  # fmt: skip (recording 69's form)
        assert doc["requests"] == [{"method": "PATCH", "path": WL_SWEEP, "body": ops, "content_type": JSON_PATCH}]
        workload = kueue_lab.stored(WL_SWEEP)
        assert workload is not None
        assert (workload["spec"]["priorityClassRef"]["name"], workload["spec"]["priority"]) == ("wpc-normal", 1000)

    def test_a_failed_resource_version_test_is_read_again_and_retried(
        self, gpuq: Gpuq, kueue_lab: WritableDouble
    ) -> None:
        kueue_lab.touch(WL_SWEEP)  # recording 61: the test op fails (422), the Workload is read again
        doc = _json(gpuq("--backend", "k8s", "bump", "ml-team-b/job-sweep-lr-9c7d4", "--to", "1000", "--yes",
                         "-o", "json"))  # fmt: skip
        tested = [r["body"][0]["value"] for r in doc["requests"]]
        assert tested[0] == "247" and len(tested) == 2 and int(tested[1]) > 247
        workload = kueue_lab.stored(WL_SWEEP)
        assert workload is not None and workload["spec"]["priorityClassRef"]["name"] == "wpc-normal"

    def test_a_real_422_on_a_workload_is_the_servers_message(self, gpuq: Gpuq, kueue_lab: WritableDouble) -> None:
        kueue_lab.reply("PATCH", WL, "62-kueue-patch-priority-invalid-422.json")
        line = _one_line_error(gpuq("--backend", "k8s", "bump", "ml-team-a/job-urgent-finetune-b81e0", "--to",
                                    "5000", "--yes"), 1)  # fmt: skip
        assert 'Workload.kueue.x-k8s.io "job-urgent-finetune-b81e0" is invalid: spec.priority' in line


# ------------------------------------------------------------------ faults
def test_403_is_exit_4_naming_verb_and_resource(gpuq: Gpuq, lab: WritableDouble, xdg: dict[str, Path]) -> None:
    lab.reply("PATCH", BERT, "29-forbidden-403-patch.json")
    line = _one_line_error(gpuq("--backend", "k8s", "exempt", "ml-team-a/finetune-bert-0", "--for", "1h", "--yes"), 4)
    assert "denied patch pods finetune-bert-0 in namespace ml-team-a (forbidden)" in line
    assert 'User "viewer" cannot patch resource "pods"' in line
    assert lab.stored(BERT_PDB) is None  # refused at the dry run: nothing was created
    assert _audit(xdg)[-1]["exit_code"] == 4


def test_422_is_the_servers_validation_message_once(gpuq: Gpuq, lab: WritableDouble) -> None:
    lab.reply("PATCH", BERT, "36-invalid-422-label.json")
    line = _one_line_error(gpuq("--backend", "k8s", "exempt", "ml-team-a/finetune-bert-0", "--for", "1h", "--yes"), 1)
    assert 'Pod "finetune-bert-0" is invalid: metadata.labels: Invalid value: "team a queue!"' in line
    assert line.count("a valid label must be") == 1  # (the server repeats the cause four times)


def test_unreachable_is_exit_3_naming_the_server(gpuq: Gpuq, xdg: dict[str, Path], tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = f"http://127.0.0.1:{port}"
    kubeconfig = tmp_path / "gone"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "gone",
        "clusters": [{"name": "gone", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "gone", "context": {"cluster": "gone", "user": "u"}}],
    }))  # fmt: skip
    _config(xdg, kubeconfig)
    line = _one_line_error(gpuq("--backend", "k8s", "preempt", "ml-team-b/notebook-bob", "--yes"), 3)
    assert server in line and "unreachable" in line
