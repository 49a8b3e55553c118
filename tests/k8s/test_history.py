"""Pod history as a trace (`KubernetesBackend.export_history`, `gpuq trace export`) on the API
server double, checked against the recorded pod JSON itself (05-pods-all.json)."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from gpuq.errors import PermissionDenied
from gpuq.trace.record import TraceJob
from tests.k8s.conftest import NOW, Gpuq, Target
from tests.k8s.double import FIXTURES

_DAY = 86400.0
_GPU = "nvidia.com/gpu"


def _epoch(text: str | None) -> float | None:
    return None if text is None else datetime.fromisoformat(text).timestamp()


def _recorded() -> dict[str, dict[str, Any]]:
    """The recorded GPU pods by namespace/name."""
    doc = json.loads((FIXTURES / "05-pods-all.json").read_text())
    pods = {}
    for pod in doc["items"]:
        resources = [c.get("resources", {}) for c in pod["spec"]["containers"]]
        gpus = sum(int(r.get("requests", {}).get(_GPU) or r.get("limits", {}).get(_GPU) or 0) for r in resources)
        if gpus:
            pods[f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"] = {**pod, "gpus": gpus}
    return pods


def _expected(pod: dict[str, Any]) -> dict[str, Any]:
    """What the README's mapping says the pod's trace job is, read from the JSON directly."""
    meta, spec, status = pod["metadata"], pod["spec"], pod["status"]
    scheduled = [c for c in status.get("conditions", []) if c["type"] == "PodScheduled" and c["status"] == "True"]
    start = _epoch(scheduled[0]["lastTransitionTime"]) if scheduled and spec.get("nodeName") else None
    ends = [
        s["state"]["terminated"]["finishedAt"]
        for s in status.get("containerStatuses", [])
        if "terminated" in s["state"]
    ]
    end = _epoch(max(ends)) if ends and status.get("phase") in ("Succeeded", "Failed") else None
    owner = next((o for o in meta.get("ownerReferences", []) if o.get("controller")), None)
    return {
        "submit_time": _epoch(meta["creationTimestamp"]),
        "start_time": start,
        "end_time": end,
        "gpus": pod["gpus"],
        "job_class": spec.get("priorityClassName"),
        "priority": spec.get("priority"),
        "tenant": meta["namespace"],
        "user": meta.get("annotations", {}).get("gpuq.io/user") or meta["namespace"],
        "name": f"{owner['kind']}/{owner['name']}" if owner else meta["name"],
        "duration_s": (end if end is not None else NOW) - start if start is not None else 0.0,
    }


def _jobs(target: Target, since: float, until: float, **options: Any) -> dict[str, TraceJob]:
    jobs = list(target.backend(**options).export_history(since, until))
    found = {j.id: j for j in jobs}
    assert len(found) == len(jobs)
    return found


def test_every_gpu_pod_of_every_phase_is_the_job_its_json_says(target: Target) -> None:
    recorded = _recorded()
    phases = {p["status"].get("phase") for p in recorded.values()}
    assert {"Running", "Pending", "Failed"} <= phases
    jobs = _jobs(target, NOW - 30 * _DAY, NOW)
    assert set(jobs) == set(recorded)  # (default/v asks for no GPU: not a job)
    for key, pod in recorded.items():
        job = jobs[key]
        got = {k: getattr(job, k) for k in _expected(pod)}
        assert got == _expected(pod), key
    assert jobs["ml-team-b/sweep-lr-qp7fs"].state == "preempted"
    assert jobs["ml-team-a/urgent-pod"].start_time is None and jobs["ml-team-a/urgent-pod"].state == "pending"


def test_the_window_keeps_jobs_submitted_by_its_end_and_not_ended_before_its_start(target: Target) -> None:
    recorded = _recorded()
    created = {_epoch(p["metadata"]["creationTimestamp"]) for p in recorded.values()}
    assert len(created) == 1
    (created_at,) = created
    assert created_at is not None
    assert _jobs(target, NOW - _DAY, created_at - 1) == {}  # all created after the window
    victim = _epoch(recorded["ml-team-b/sweep-lr-qp7fs"]["status"]["containerStatuses"][0]["state"]["terminated"]
                    ["finishedAt"])  # fmt: skip
    assert victim is not None
    after = _jobs(target, victim + 1, NOW)
    assert set(after) == set(recorded) - {"ml-team-b/sweep-lr-qp7fs"}  # ended before the window
    assert set(_jobs(target, victim, NOW)) == set(recorded)


def test_pages_and_namespaces_as_the_backend_lists(target: Target) -> None:
    whole = _jobs(target, NOW - _DAY, NOW)
    assert _jobs(target, NOW - _DAY, NOW, page_size=3) == whole
    assert target.double is not None
    assert any("limit=3" in t for t in target.double.requests("GET", "/api/v1/pods", watch=False))
    team_b = _jobs(target, NOW - _DAY, NOW, namespace="ml-team-b")
    assert team_b == {k: v for k, v in whole.items() if k.startswith("ml-team-b/")}
    assert not target.double.requests("GET", "/api/v1/pods", watch=True)  # an export never watches


def test_no_right_to_list_pods_is_permission_denied(target: Target) -> None:
    assert target.double is not None
    target.double.reply("GET", "/api/v1/pods", "35-forbidden-403-nodes.json")
    with pytest.raises(PermissionDenied):
        list(target.backend().export_history(NOW - _DAY, NOW))


def test_cli_export_writes_the_job_log(target: Target, gpuq: Gpuq, xdg: dict[str, Path], tmp_path: Path) -> None:
    target.config(xdg["config"])
    out = tmp_path / "pods.jsonl"
    result = gpuq("--backend", "k8s", "trace", "export", "--since", "30d", "-o", str(out))
    assert result.exit_code == 0, result.output
    header, *lines = out.read_text().splitlines()
    assert json.loads(header) == {
        "format": "gpuq.jobs/v1",
        "cluster": "kubernetes",
        "backend": "kubernetes",
        "since": "2026-10-30T18:30:00Z",  # 30 days before the tests' clock
        "until": "2026-11-29T18:30:00Z",
        "cluster_shape": "4x8",  # the staged GPU nodes, for `replay` to take
    }
    assert _epoch(json.loads(header)["until"]) == NOW
    rows = [json.loads(line) for line in lines]
    assert {r["id"] for r in rows} == set(_recorded())
    assert f"wrote {len(rows)} jobs" in result.stderr
    # the sacct format is Slurm's own: refused here, naming what this backend writes
    refused = gpuq("--backend", "k8s", "trace", "export", "--since", "30d", "--format", "sacct")
    assert refused.exit_code == 2 and "exports gpuq" in refused.stderr
