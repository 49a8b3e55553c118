"""The CLI on the embedded demo cluster (the default backend): reads, and actions that persist."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from click.testing import Result

from tests.cli.conftest import json_doc

Run = Callable[..., Result]


def _jobs(demo: Run, *args: str) -> list[dict[str, Any]]:
    return list(json_doc(demo("queue", "-o", "json", *args))["jobs"])


def test_default_backend_is_demo(gpuq: Run, xdg: dict[str, Path]) -> None:
    doc = json_doc(gpuq("queue", "-o", "json"))
    assert doc["cluster"] == "demo"
    assert doc["jobs"], "the demo cluster should have work queued or running"
    # Its state lives under the (private) XDG state dir, nowhere else.
    assert any((xdg["state"] / "gpuq").rglob("*"))


def test_read_commands_work(demo: Run) -> None:
    for args in (["gpus"], ["sla"], ["preemptions"], ["snapshot"]):
        result = demo(*args, "-o", "json")
        assert result.exit_code == 0, (args, result.output)
    snap = json.loads(demo("snapshot").stdout)
    assert snap["format"] == "gpuq.snapshot/v1"
    grid = json_doc(demo("gpus", "-o", "json"))
    # No GPU is double-booked: each job id appears on a slot at most as often as it has GPUs there.
    for node in grid["nodes"]:
        held = [s["job"] for s in node["slots"] if s["job"] is not None]
        assert len(held) + len(node["unindexed"]) <= node["gpus"]


def test_bump_persists_between_invocations(demo: Run) -> None:
    pending = _jobs(demo, "--state", "pending")
    assert pending, "the demo on the test clock has jobs waiting for GPUs"
    job_id = pending[-1]["id"]
    result = demo("bump", job_id, "--to", "4321", "--reason", "test", "--yes")
    assert result.exit_code == 0, result.output
    after = json_doc(demo("job", job_id, "-o", "json"))
    assert after["job"]["priority"] == 4321
    audit = json_doc(demo("audit", "-o", "json"))
    assert audit["records"][-1]["target"] == job_id
    assert audit["records"][-1]["result"] == "ok"


def test_exempt_and_preempt(demo: Run) -> None:
    running = [j for j in _jobs(demo, "--state", "running") if not j["exempt_until"]]
    assert len(running) >= 2, "the demo on the test clock runs jobs"
    first, second = running[0]["id"], running[1]["id"]
    assert demo("exempt", first, "--for", "2h", "--yes").exit_code == 0
    assert json_doc(demo("job", first, "-o", "json"))["job"]["exempt_until"] is not None
    refused = demo("preempt", first, "--yes")
    assert refused.exit_code == 1
    done = demo("preempt", second, "--mode", "requeue", "--yes")
    assert done.exit_code == 0, done.output
    job = json_doc(demo("job", second, "-o", "json"))["job"]
    assert job["state"] != "running" or job["preemptions"] > running[1]["preemptions"]


def test_unknown_job_on_demo(demo: Run) -> None:
    result = demo("job", "no-such-job")
    assert result.exit_code == 1
    assert "no job no-such-job on cluster demo" in result.stderr
