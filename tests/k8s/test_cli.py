"""`gpuq --backend kubernetes …` end to end through click, on the double (or a real cluster)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

from tests.k8s.conftest import Gpuq, Target
from tests.k8s.test_snapshot import TABLE


def _doc(result_output: str, code: int) -> dict[str, object]:
    assert code == 0, result_output
    doc: dict[str, object] = json.loads(result_output)
    return doc


def test_queue_json(cluster: Target, gpuq: Gpuq, xdg: dict[str, Path]) -> None:
    cluster.config(xdg["config"])
    result = gpuq("--backend", "kubernetes", "queue", "-o", "json")
    doc = _doc(result.stdout, result.exit_code)
    jobs = {j["id"]: j for j in doc["jobs"]}  # type: ignore[attr-defined]
    queued = {cluster.id(p) for p, (_, _, state, _) in TABLE.items() if state.value in ("pending", "running",
                                                                                          "completing")}  # fmt: skip
    assert queued <= set(jobs)
    urgent = jobs[cluster.id("ml-team-a/urgent-pod")]
    assert (urgent["state"], urgent["gpus"], urgent["priority"], urgent["class"]) == (
        "pending", 8, 100000, cluster.pc("gpuq-urgent"))  # fmt: skip
    bound = jobs[cluster.id("ml-team-a/train-llama-70b-7x2kq")]
    assert bound["allocation"] == {cluster.node("gpu-node-1"): [None] * 8}
    assert doc["cluster"] == "kubernetes"


def test_gpus_json_shows_unindexed_slots(cluster: Target, gpuq: Gpuq, xdg: dict[str, Path]) -> None:
    cluster.config(xdg["config"])
    result = gpuq("--backend", "k8s", "gpus", "-o", "json")  # (the alias)
    doc = _doc(result.stdout, result.exit_code)
    nodes = {n["name"]: n for n in doc["nodes"]}  # type: ignore[attr-defined]
    two = nodes[cluster.node("gpu-node-2")]
    assert two["free"] == 4 and two["state"] == "mixed"
    assert two["unindexed"] == [cluster.id("ml-team-b/sweep-lr-h5jrc")] * 4  # a terminating pod still holds them
    assert all(slot["job"] is None for slot in two["slots"])  # which GPUs: unknown through the API
    assert nodes[cluster.node("gpu-node-4")]["state"] == "drain"


def test_a_cluster_table_with_the_alias_gets_its_options(target: Target, gpuq: Gpuq, xdg: dict[str, Path]) -> None:
    path = xdg["config"] / "gpuq" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'[clusters.lab]\nbackend = "k8s"\nkubeconfig = {json.dumps(str(target.kubeconfig))}\n'
                    'namespace = "ml-team-b"\n')  # fmt: skip
    result = gpuq("--cluster", "lab", "queue", "-o", "json")
    doc = _doc(result.stdout, result.exit_code)
    assert doc["cluster"] == "lab"
    assert {j["tenant"] for j in doc["jobs"]} == {"ml-team-b"}  # type: ignore[attr-defined]
    assert target.double is not None
    assert target.double.requests("GET", "/api/v1/namespaces/ml-team-b/pods", watch=False)
    assert not target.double.requests("GET", "/api/v1/pods", watch=False)


def test_job_detail_says_why_pending(cluster: Target, gpuq: Gpuq, xdg: dict[str, Path]) -> None:
    cluster.config(xdg["config"])
    result = gpuq("--backend", "kubernetes", "job", cluster.id("ml-team-a/urgent-pod"))
    assert result.exit_code == 0, result.output
    assert "Unschedulable" in result.stdout and f"nominated node {cluster.node('gpu-node-2')}" in result.stdout


def test_a_bare_pods_bump_is_refused_with_the_reason(cluster: Target, gpuq: Gpuq, xdg: dict[str, Path]) -> None:
    cluster.config(xdg["config"])
    result = gpuq("--backend", "kubernetes", "bump", cluster.id("ml-team-a/urgent-pod"), "--to", "1000", "--yes")
    assert result.exit_code == 1, result.output
    assert "a pod's priority is immutable; exempt it instead or recreate it with another priorityClassName" in (
        result.stderr)  # fmt: skip (tests/k8s/test_actions.py: every action on the double that serves writes)


def test_the_kubernetes_client_is_imported_only_at_the_first_request() -> None:
    """`gpuq --backend kubernetes` pays for the `kubernetes` package (~0.2 s) only once it talks
    to a server: importing and building the backend loads none of it."""
    import subprocess
    import sys

    code = ("import sys; from gpuq.backends.kubernetes import KubernetesBackend; KubernetesBackend(); "
            "print(sorted(m for m in sys.modules if m == 'kubernetes' or m.startswith('kubernetes.')))")  # fmt: skip
    argv = [sys.executable, "-c", code]  # (our own interpreter on a fixed snippet)
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout  # noqa: S603
    assert out.strip() == "[]"


def test_a_written_snapshot_reads_back(target: Target, gpuq: Gpuq, xdg: dict[str, Path], tmp_path: Path) -> None:
    """`gpuq snapshot` of a Kubernetes cluster (unknown GPU indexes and all) is a valid snapshot file."""
    target.config(xdg["config"])
    result = gpuq("--backend", "kubernetes", "snapshot")
    assert result.exit_code == 0, result.output
    path = tmp_path / "k8s.json"
    path.write_text(result.stdout)
    again = gpuq("--snapshot", str(path), "gpus", "-o", "json")
    nodes = {n["name"]: n for n in _doc(again.stdout, again.exit_code)["nodes"]}  # type: ignore[attr-defined]
    assert nodes["gpu-node-2"]["unindexed"] == ["ml-team-b/sweep-lr-h5jrc"] * 4
    doc = json.loads(result.stdout)
    assert doc["backend"] == "kubernetes" and len(doc["jobs"]) == 12 and len(doc["preemption_events"]) == 2


def test_queue_group_puts_a_jobs_pods_under_it(target: Target, gpuq: Gpuq, xdg: dict[str, Path]) -> None:
    """(On the double: tests/k8s/live.py stages pods without owners.)"""
    target.config(xdg["config"])
    result = gpuq("--backend", "k8s", "queue", "--group", "-n", "ml-team-b", "-o", "wide")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("Job/ml-team-b/sweep-lr "))
    pods = [line.split()[1] for line in itertools.takewhile(lambda text: text.startswith("  └ "), lines[head + 1 :])]
    assert sorted(pods) == sorted(j.id for j in target.snapshot().jobs
                                  if j.owner == "Job/ml-team-b/sweep-lr" and j.state.value in
                                  ("pending", "running", "suspended", "completing"))  # fmt: skip
    assert len(pods) >= 2 and f"{len(pods)} pods" in lines[head]


def test_gpus_table_shows_held_gpus_on_a_full_node(cluster: Target, gpuq: Gpuq, xdg: dict[str, Path]) -> None:
    """Pods' GPU indexes are unknown through the API: the grid shows their GPUs held (marked
    `*`), as the console does, not `.` (free) on a node that is full."""
    cluster.config(xdg["config"])
    result = gpuq("--backend", "kubernetes", "gpus")
    assert result.exit_code == 0, result.output
    blocks: dict[str, list[str]] = {}  # a node's row and the lines its cells go on to
    last = ""
    for line in result.stdout.splitlines()[2:]:
        if line.startswith(" "):
            blocks[last] += line.split()
        elif line.strip() and not line.endswith("wider terminal"):
            last = line.split()[0]
            blocks[last] = line.split()[1:]
    one = blocks[cluster.node("gpu-node-1")]
    assert one.count(cluster.id("ml-team-a/train-llama-70b-7x2kq") + "*") == 8 and "." not in one
    two = blocks[cluster.node("gpu-node-2")]
    assert two.count(cluster.id("ml-team-b/sweep-lr-h5jrc") + "*") == 4 and two.count(".") == 4
