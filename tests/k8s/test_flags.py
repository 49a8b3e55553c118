"""The Kubernetes flags, end to end: ``-n/--namespace``, ``-A/--all-namespaces``, ``-l/--selector``,
``--context`` (once: that cluster; several: one cluster each, `open_contexts`), before or after
the subcommand, and a usage error with any other backend."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpuq.config import load_config
from gpuq.service import open_contexts
from tests.clock import FixedClock
from tests.k8s.conftest import NOW, Gpuq, Target
from tests.k8s.double import ApiDouble


def _jobs(gpuq: Gpuq, *args: str) -> tuple[dict[str, Any], set[str]]:
    result = gpuq(*args, "-o", "json")
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc, {j["id"] for j in doc["jobs"]}


def test_namespace_reads_one_namespace(target: Target, gpuq: Gpuq, xdg: dict[str, Path]) -> None:
    target.config(xdg["config"])
    _, ids = _jobs(gpuq, "--backend", "k8s", "-n", "ml-team-b", "queue")
    assert ids and all(i.startswith("ml-team-b/") for i in ids)
    assert target.double is not None
    assert target.double.requests("GET", "/api/v1/namespaces/ml-team-b/pods", watch=False)
    assert target.double.requests("GET", "/apis/policy/v1/namespaces/ml-team-b/poddisruptionbudgets", watch=False)
    assert not target.double.requests("GET", "/api/v1/pods", watch=False)


def test_flags_after_the_subcommand_work_too(target: Target, gpuq: Gpuq, xdg: dict[str, Path]) -> None:
    target.config(xdg["config"])
    _, ids = _jobs(gpuq, "queue", "--backend", "k8s", "--namespace", "ml-team-a")
    assert ids and all(i.startswith("ml-team-a/") for i in ids)


def test_all_namespaces_wins_over_the_configured_one(target: Target, gpuq: Gpuq, xdg: dict[str, Path]) -> None:
    path = target.config(xdg["config"])
    path.write_text(path.read_text() + 'namespace = "ml-team-b"\n')
    _, one = _jobs(gpuq, "--backend", "k8s", "queue")
    _, every = _jobs(gpuq, "--backend", "k8s", "-A", "queue")
    assert {i.split("/")[0] for i in one} == {"ml-team-b"}
    assert {i.split("/")[0] for i in every} == {"ml-team-a", "ml-team-b"}


def test_selector_reads_the_pods_it_matches(target: Target, gpuq: Gpuq, xdg: dict[str, Path]) -> None:
    target.config(xdg["config"])
    _, ids = _jobs(gpuq, "--backend", "k8s", "-l", "kueue.x-k8s.io/queue-name=team-a-queue", "queue")
    assert ids == {
        "ml-team-a/urgent-pod",
        "ml-team-a/finetune-bert-0",
        "ml-team-a/train-llama-70b-7x2kq",
        "ml-team-a/train-llama-70b-m9vtd",
    }  # fmt: skip (recording 06)
    assert target.double is not None
    assert target.double.requests("GET", "/api/v1/pods", watch=False) == [
        "/api/v1/pods?labelSelector=kueue.x-k8s.io%2Fqueue-name%3Dteam-a-queue&limit=500"]  # fmt: skip


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("-n", "ml-team-a", "queue"), "-n/--namespace does not apply to backend 'demo'"),
        (("-A", "queue"), "-A/--all-namespaces does not apply to backend 'demo'"),
        (("-l", "app=x", "queue"), "-l/--selector does not apply to backend 'demo'"),
        (("--context", "lab", "queue"), "--context does not apply to backend 'demo'"),
        (("--backend", "k8s", "-n", "ml-team-a", "-A", "queue"), "give -n/--namespace or -A/--all-namespaces"),
        (("--backend", "k8s", "-n", "", "queue"), "give a namespace name"),
        (("--backend", "k8s", "-n", "Team_A", "queue"), "is not a Kubernetes namespace name"),
    ],
)
def test_misuse_is_a_usage_error_naming_the_flag(gpuq: Gpuq, args: tuple[str, ...], message: str) -> None:
    result = gpuq(*args)
    assert result.exit_code == 2, result.output
    assert message in result.stderr and "Traceback" not in result.output


def test_a_flag_with_a_snapshot_file_is_a_usage_error(gpuq: Gpuq, tmp_path: Path) -> None:
    result = gpuq("--snapshot", str(tmp_path / "none.json"), "-n", "ml-team-a", "queue")
    assert result.exit_code == 2 and "-n/--namespace applies to a live backend, not to --snapshot" in result.stderr


# ---------------------------------------------------------------- contexts
@pytest.fixture
def two(tmp_path: Path, xdg: dict[str, Path]) -> Iterator[tuple[ApiDouble, ApiDouble]]:
    """Two API servers, contexts ``east`` and ``west`` of one kubeconfig, named in the config."""
    with ApiDouble() as east, ApiDouble() as west:
        doc = {
            "apiVersion": "v1", "kind": "Config", "current-context": "east",
            "clusters": [{"name": "east", "cluster": {"server": east.url}},
                         {"name": "west", "cluster": {"server": west.url}}],
            "users": [{"name": "u", "user": {"token": "admin-token"}}],
            "contexts": [{"name": "east", "context": {"cluster": "east", "user": "u"}},
                         {"name": "west", "context": {"cluster": "west", "user": "u"}}],
        }  # fmt: skip
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(json.dumps(doc))
        path = xdg["config"] / "gpuq" / "config.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"[backends.kubernetes]\nkubeconfig = {json.dumps(str(kubeconfig))}\nwatch = false\n")
        yield east, west


def test_one_context_is_that_cluster(gpuq: Gpuq, two: tuple[ApiDouble, ApiDouble]) -> None:
    east, west = two
    doc, ids = _jobs(gpuq, "--backend", "k8s", "--context", "west", "queue")
    assert doc["cluster"] == "west" and "ml-team-a/urgent-pod" in ids
    assert west.requests("GET", "/api/v1/pods") and not east.requests("GET", "/api/v1/pods")


def test_several_contexts_in_one_command_say_to_pick_one(gpuq: Gpuq, two: tuple[ApiDouble, ApiDouble]) -> None:
    east, west = two
    result = gpuq("--backend", "k8s", "--context", "east", "queue", "--context", "west")
    assert result.exit_code == 2, result.output
    assert "--context given 2 times (east, west): this command reads one cluster; give one --context" in result.stderr
    assert not east.log and not west.log


def test_several_contexts_open_one_cluster_each(two: tuple[ApiDouble, ApiDouble], xdg: dict[str, Path]) -> None:
    east, west = two
    clusters = open_contexts(["east", "west", "east"], backend="kubernetes", config=load_config(),
                             clock=FixedClock(NOW))  # fmt: skip
    assert [c.name for c in clusters] == ["east", "west"]
    snaps = [c.refresh() for c in clusters]
    assert [s.cluster for s in snaps] == ["east", "west"]
    assert all(s.job("ml-team-a/urgent-pod") is not None for s in snaps)
    assert east.requests("GET", "/api/v1/pods") and west.requests("GET", "/api/v1/pods")
    for cluster in clusters:
        cluster.backend.close()
