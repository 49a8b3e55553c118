"""What goes wrong: an unreachable server, missing rights, Kueue absent, a bad kubeconfig.
Each is a one-line error with its exit code, or a degraded view that says what is missing."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from gpuq.backends.kubernetes import KubernetesBackend
from gpuq.errors import BadInput, PermissionDenied, Unreachable
from gpuq.model import NodeState
from tests.clock import FixedClock
from tests.k8s.conftest import NOW, Gpuq, Target
from tests.k8s.double import FIXTURES, ApiDouble


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port  # (closed again: nothing listens there)


def _config(xdg: dict[str, Path], kubeconfig: Path, extra: str = "") -> None:
    path = xdg["config"] / "gpuq" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"[backends.kubernetes]\nkubeconfig = {json.dumps(str(kubeconfig))}\n{extra}")


def test_an_unreachable_server_is_exit_3_naming_it(gpuq: Gpuq, xdg: dict[str, Path], tmp_path: Path) -> None:
    server = f"http://127.0.0.1:{_closed_port()}"
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "gone",
        "clusters": [{"name": "gone", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "gone", "context": {"cluster": "gone", "user": "u"}}],
    }))  # fmt: skip
    _config(xdg, kubeconfig, "timeout_s = 2\n")
    result = gpuq("--backend", "k8s", "queue")
    assert result.exit_code == 3, result.output
    assert server in result.stderr and "unreachable" in result.stderr
    assert "Traceback" not in result.output and len(result.stderr.strip().splitlines()) == 1


def test_a_refused_connection_is_said_refused_with_its_address(tmp_path: Path) -> None:
    """urllib3 2.x's NewConnectionError subclasses its ConnectTimeoutError: a refusal is no timeout."""
    port = _closed_port()
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "gone",
        "clusters": [{"name": "gone", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "gone", "context": {"cluster": "gone", "user": "u"}}],
    }))  # fmt: skip
    backend = KubernetesBackend(kubeconfig=str(kubeconfig), timeout_s=2)
    with pytest.raises(Unreachable) as caught:
        backend.snapshot()
    message = str(caught.value)
    assert f"connection refused at 127.0.0.1:{port}" in message, message
    assert "no answer within" not in message


def test_no_right_to_list_nodes_shows_occupancy_from_pods(target: Target) -> None:
    assert target.double is not None
    target.double.reply("GET", "/api/v1/nodes", "35-forbidden-403-nodes.json")
    backend = target.backend()
    snap = backend.snapshot()
    nodes = {n.name: n for n in snap.nodes}
    # a node per node name the bound pods carry, as many GPUs as they hold there
    assert {n: (m.gpus, m.state) for n, m in nodes.items()} == {
        "gpu-node-1": (8, NodeState.ALLOCATED), "gpu-node-2": (4, NodeState.ALLOCATED),
        "gpu-node-3": (8, NodeState.ALLOCATED), "gpu-node-4": (3, NodeState.ALLOCATED)}  # fmt: skip
    assert all(j.conflict is None for j in snap.jobs)
    assert len(snap.jobs) == 12  # the queue itself is whole
    notes = backend.capabilities.notes
    assert any("no right to list nodes: GPU totals from pods only" in n for n in notes), notes
    assert backend.state.store("nodes").denied.startswith("Kubernetes API")
    assert not backend.state.informers["nodes"].running  # (no watch of what may not be listed)


def test_no_right_to_list_events_keeps_preemptions_from_conditions(target: Target) -> None:
    assert target.double is not None
    # (as recording 35, for events)
    denied = json.loads((FIXTURES / "35-forbidden-403-nodes.json").read_bytes())
    denied["message"] = denied["message"].replace("nodes", "events")
    denied["details"]["kind"] = "events"
    target.double.reply("GET", "/api/v1/events", status=403, body=json.dumps(denied).encode())
    backend = target.backend()
    snap = backend.snapshot()
    assert [e.victim for e in snap.preemption_events] == ["ml-team-b/sweep-lr-qp7fs"]  # its DisruptionTarget
    assert any("Events" in n for n in backend.capabilities.notes)


def test_no_right_to_list_pods_is_exit_4_naming_verb_and_resource(gpuq: Gpuq, xdg: dict[str, Path],
                                                                  target: Target) -> None:  # fmt: skip
    assert target.double is not None
    target.double.reply("GET", "/api/v1/namespaces/ml-team-a/pods", "35b-viewer-pods-403-view-unaggregated.json")
    _config(xdg, target.kubeconfig, 'namespace = "ml-team-a"\n')
    result = gpuq("--backend", "kubernetes", "queue")
    assert result.exit_code == 4, result.output
    assert "denied list pods in namespace ml-team-a" in result.stderr
    assert (
        'User \\"viewer\\" cannot list resource \\"pods\\"' in result.stderr or "cannot list resource" in result.stderr
    )


def test_a_wrong_token_is_exit_4(gpuq: Gpuq, xdg: dict[str, Path], target: Target, tmp_path: Path) -> None:
    assert target.double is not None
    _config(xdg, target.double.kubeconfig(tmp_path / "wrong", token="stolen"))
    result = gpuq("--backend", "kubernetes", "queue")
    assert result.exit_code == 4 and "not authenticated" in result.stderr


def test_kueue_absent_breaks_nothing(target: Target) -> None:
    """Discovery (02) lacks kueue.x-k8s.io: nothing of Kueue's is asked for."""
    assert target.double is not None
    backend = target.backend()
    assert len(backend.snapshot().jobs) == 12
    assert backend.state.kueue_version is None
    assert not [t for _m, t, _u in target.double.log if "kueue" in t]
    assert backend.capabilities.notes == ()


def test_kueue_answering_plain_404_breaks_nothing(tmp_path: Path) -> None:
    """Discovery lists the group (50) but its resources answer the plain-text 404 (03), as when
    the CRDs are gone: the view is whole, Kueue is off."""
    with ApiDouble(kueue=True) as double:
        for path in ("/apis/kueue.x-k8s.io/v1beta2/workloads", "/apis/kueue.x-k8s.io/v1beta2/workloadpriorityclasses"):
            double.reply("GET", path, "03-kueue-workloads-404.txt")
        backend = KubernetesBackend(kubeconfig=str(double.kubeconfig(tmp_path / "kc")), clock=FixedClock(NOW))
        try:
            snap = backend.snapshot()
            assert len(snap.jobs) == 12
            assert backend.state.kueue_note == "Kueue not installed (its API answers 404)"
        finally:
            backend.close()


def test_kueue_workloads_waiting_for_quota_are_pending_jobs(tmp_path: Path) -> None:
    with ApiDouble(kueue=True) as double:
        backend = KubernetesBackend(kubeconfig=str(double.kubeconfig(tmp_path / "kc")), clock=FixedClock(NOW))
        try:
            snap = backend.snapshot()
        finally:
            backend.close()
    waiting = snap.job("ml-team-a/job-urgent-finetune-b81e0")
    assert waiting is not None and waiting.is_pending
    assert (waiting.gpus, waiting.priority, waiting.job_class) == (24, 100000, "wpc-urgent")
    assert waiting.reason is not None and "insufficient unused quota" in waiting.reason
    assert (waiting.owner, waiting.comment) == ("Job/ml-team-a/urgent-finetune", "Job/urgent-finetune")
    requeued = snap.job("ml-team-b/job-sweep-lr-9c7d4")  # preempted by Kueue, waiting again
    assert requeued is not None and requeued.is_pending and len(requeued.preemption_times) == 1
    assert snap.job("ml-team-a/job-train-llama-70b-3f2a1") is None  # admitted: its pods are the jobs
    assert {c.name: c.priority for c in snap.classes if c.name.startswith("wpc-")} == {
        "wpc-low": 100, "wpc-normal": 1000, "wpc-urgent": 100000}  # fmt: skip


def test_a_label_selector_reads_only_the_pods_it_matches(target: Target) -> None:
    snap = target.snapshot(label_selector="kueue.x-k8s.io/queue-name=team-a-queue")
    matched = json.loads((FIXTURES / "06-pods-label-queue.json").read_bytes())["items"]
    assert {j.id for j in snap.jobs} == {f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in matched}
    assert len(snap.jobs) == 4
    assert target.double is not None
    assert target.double.requests("GET", "/api/v1/pods")[0].startswith("/api/v1/pods?labelSelector=kueue.x-k8s.io")


@pytest.mark.parametrize("selector", [
    "kueue.x-k8s.io/queue-name=team-a-queue",  # recording 06
    "kueue.x-k8s.io/queue-name in (team-b-queue,team-b-batch)",  # recording 07
])  # fmt: skip
def test_a_label_selector_chooses_kueue_workloads_by_their_labels_too(tmp_path: Path, selector: str) -> None:
    """`-l` is kubectl's: a waiting Workload is shown when its own labels match, as a pod is. The
    recorded Workloads carry only kueue.x-k8s.io/job-uid: the queue-name selectors choose none
    (their admission is still read: the selected pods of an admitted Workload stay Kueue's)."""
    with ApiDouble(kueue=True) as double:
        backend = KubernetesBackend(kubeconfig=str(double.kubeconfig(tmp_path / "kc")), clock=FixedClock(NOW),
                                    label_selector=selector, watch=False)  # fmt: skip
        try:
            snap = backend.snapshot()
        finally:
            backend.close()
    waiting = {"ml-team-a/job-urgent-finetune-b81e0", "ml-team-b/job-sweep-lr-9c7d4"}
    assert not waiting & {j.id for j in snap.jobs}
    if "team-a" in selector:
        llama = [j for j in snap.jobs if "llama" in j.id and j.holds_gpus]
        assert llama and all(j.admitted_by == "kueue" for j in llama)


def test_a_workload_whose_labels_match_is_shown(tmp_path: Path) -> None:
    with ApiDouble(kueue=True) as double:
        no_pods = b'{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]}'
        double.reply("GET", "/api/v1/pods", status=200, body=no_pods)  # (no pod carries the Workload's label)
        backend = KubernetesBackend(kubeconfig=str(double.kubeconfig(tmp_path / "kc")), clock=FixedClock(NOW),
                                    label_selector="kueue.x-k8s.io/job-uid=c31931fd-f0e1-4258-b601-a2eaacf10543",
                                    watch=False)  # fmt: skip
        try:
            snap = backend.snapshot()
        finally:
            backend.close()
    assert [j.id for j in snap.jobs] == ["ml-team-a/job-urgent-finetune-b81e0"]


def test_a_missing_context_is_a_usage_error(target: Target) -> None:
    backend = KubernetesBackend(kubeconfig=str(target.kubeconfig), context="nope")
    with pytest.raises(BadInput, match="nope"):
        backend.snapshot()


def test_no_kubeconfig_anywhere_is_a_usage_error(gpuq: Gpuq) -> None:
    result = gpuq("--backend", "kubernetes", "queue")
    assert result.exit_code == 2
    assert "no Kubernetes configuration found" in result.stderr


def test_kubeconfig_from_the_environment(target: Target, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", f"{target.kubeconfig.parent / 'missing'}:{target.kubeconfig}")
    backend = KubernetesBackend(clock=FixedClock(NOW), watch=False)
    assert len(backend.snapshot().jobs) == 12
    assert backend.client.server == target.double.url if target.double else True


@pytest.mark.parametrize(("options", "problem"), [
    ({"namespace": "Team A"}, "not a Kubernetes namespace name"),
    ({"in_cluster": True, "context": "lab"}, "without kubeconfig or context"),
])  # fmt: skip
def test_bad_options(options: dict[str, object], problem: str) -> None:
    with pytest.raises(BadInput, match=problem):
        KubernetesBackend(**options)  # type: ignore[arg-type]


def test_denied_messages_name_the_server(target: Target) -> None:
    assert target.double is not None
    target.double.reply("GET", "/api/v1/pods", "35-forbidden-403-nodes.json")
    with pytest.raises(PermissionDenied, match=f"Kubernetes API {target.double.url} denied list pods"):
        target.backend().snapshot()


def test_a_server_that_never_answers_is_unreachable_after_the_timeout(tmp_path: Path) -> None:
    with socket.socket() as silent:  # (accepts connections, into its backlog, and says nothing)
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        server = f"http://127.0.0.1:{silent.getsockname()[1]}"
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "mute",
            "clusters": [{"name": "mute", "cluster": {"server": server}}],
            "users": [{"name": "u", "user": {"token": "t"}}],
            "contexts": [{"name": "mute", "context": {"cluster": "mute", "user": "u"}}],
        }))  # fmt: skip
        backend = KubernetesBackend(kubeconfig=str(kubeconfig), timeout_s=0.3)
        with pytest.raises(Unreachable, match=rf"{server} unreachable: no answer within 0.3 s"):
            backend.snapshot()


def test_server_messages_are_shown_as_data(target: Target) -> None:
    assert target.double is not None
    hostile = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Forbidden", "code": 403,
               "message": "pods is forbidden\x1b[2J\x1b]0;pwned\x07"}  # fmt: skip
    target.double.reply("GET", "/api/v1/pods", status=403, body=json.dumps(hostile).encode())
    with pytest.raises(PermissionDenied) as caught:
        target.backend().snapshot()
    assert "\x1b" not in str(caught.value) and "\x07" not in str(caught.value)


def test_kueue_workloads_are_watched_too(tmp_path: Path) -> None:
    """Recording 67 (a MODIFIED Workload, then a BOOKMARK) on the workloads' watch."""
    path = "/apis/kueue.x-k8s.io/v1beta2/workloads"
    with ApiDouble(kueue=True) as double:
        backend = KubernetesBackend(kubeconfig=str(double.kubeconfig(tmp_path / "kc")), clock=FixedClock(NOW))
        try:
            backend.snapshot()
            informer = backend.state.informers["workloads"]
            double.feed(path, *(FIXTURES / "67-kueue-watch-workloads.jsonl").read_bytes().splitlines())
            assert informer.wait(lambda: informer.store.resource_version == "252", 10.0)
            touched = informer.store.items["ml-team-a/job-train-llama-70b-3f2a1"]
            assert touched.metadata.labels.get("gpuq.io/touched") == "1" and informer.lists == 1
            assert double.requests("GET", path, watch=True)[0].endswith("allowWatchBookmarks=true&timeoutSeconds=300")
        finally:
            backend.close()
