"""`gpuq overview` and plain `gpuq`: the one-screen summary."""

from __future__ import annotations

import json
from typing import Any

from click.testing import Result

from tests.cli.conftest import Runner


def _json(result: Result) -> Any:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_overview_document(gpuq: Runner, small: str) -> None:
    doc = _json(gpuq("--snapshot", small, "overview", "-o", "json"))
    assert doc["cluster"] == "lab"
    assert doc["gpus"] == {"total": 12, "busy": 8, "free": 0, "unavailable": 4}
    assert doc["jobs"] == {"completed": 1, "pending": 3, "running": 4}
    assert doc["sla"]["low"]["breach"] is True
    assert doc["sla"]["normal"]["breach"] is False
    # Ranked by effective priority: 203 has aged past its class's max_wait.
    assert [p["id"] for p in doc["top_pending"]] == ["203", "202", "201"]
    assert doc["top_pending"][0]["would_preempt"] is True
    assert doc["top_pending"][0]["victims"] == ["102"]
    times = [e["time"] for e in doc["recent_preemptions"]]
    assert times == sorted(times, reverse=True)


def test_plain_gpuq_shows_the_overview(gpuq: Runner, small: str) -> None:
    result = gpuq("--snapshot", small)
    assert result.exit_code == 0, result.output
    assert "GPUs busy" in result.stdout
    assert "Most urgent pending jobs" in result.stdout
    assert "would preempt 102" in result.stdout


def test_top_limits_lists(gpuq: Runner, small: str) -> None:
    doc = _json(gpuq("--snapshot", small, "overview", "--top", "1", "-o", "json"))
    assert len(doc["top_pending"]) == 1
    assert len(doc["recent_preemptions"]) == 1
    assert gpuq("--snapshot", small, "overview", "--top", "0").exit_code == 2
