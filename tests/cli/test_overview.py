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


def test_empty_tables_say_none(gpuq: Runner, tmp_path: Any) -> None:
    from gpuq.model import JobClass, Node, NodeState
    from gpuq.model.codec import encode_snapshot
    from tests.factories import make_snapshot

    snap = make_snapshot("quiet", "snapshot", 1_795_100_400.0, classes=[JobClass("normal", 100, True, 600.0)],
                         nodes=[Node("n1", 8, NodeState.IDLE)])  # fmt: skip
    path = tmp_path / "quiet.json"
    path.write_bytes(encode_snapshot(snap))
    out = gpuq("--snapshot", str(path), "overview").stdout
    pending = out.split("Most urgent pending jobs", 1)[1].split("Recent preemptions", 1)
    assert "none" in pending[0] and "none" in pending[1]


def test_a_class_near_its_target_reads_at_risk(gpuq: Runner, small: str) -> None:
    doc = _json(gpuq("--snapshot", small, "sla", "-o", "json"))
    rows = gpuq("--snapshot", small, "sla").stdout.splitlines()
    for name, stats in doc["classes"].items():
        target, p95 = stats["target_p95_s"], stats["p95_incl_pending_s"] or 0.0
        if target is None:
            continue
        want = "BREACH" if stats["breach"] else "at risk" if p95 >= 0.8 * target else "ok"
        (row,) = [r for r in rows if r.split() and r.split()[0] == name]
        assert row.rstrip().endswith(want), (name, row)
