"""Tables and titles show times to the second; JSON keeps what the backend said."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuq.model import JobClass, Node, NodeState, PreemptionEvent, from_epoch
from gpuq.model.codec import encode_snapshot
from tests.cli.conftest import Runner
from tests.factories import make_snapshot

T = 1_795_100_400.0


def test_tables_show_seconds_json_keeps_the_fraction(
    gpuq: Runner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    event = PreemptionEvent(from_epoch(T + 0.000001), "17", "18", 1, 60.0, "requeue")
    snap = make_snapshot("lab", "snapshot", T + 59.25, classes=[JobClass("normal", 100, True, 600.0)],
                         nodes=[Node("n1", 8, NodeState.IDLE)], events=[event])  # fmt: skip
    path = tmp_path / "s.json"
    path.write_bytes(encode_snapshot(snap))
    for command in (["preemptions"], ["overview"], ["queue"], ["gpus"], ["sla"]):
        out = gpuq("--snapshot", str(path), *command).stdout
        assert "2026-11-19T15:00:59Z" in out or command == ["preemptions"], (command, out)
        assert ".25" not in out and ".000001" not in out, (command, out)
    table = gpuq("--snapshot", str(path), "preemptions").stdout
    assert "2026-11-19T15:00:00Z" in table
    doc = json.loads(gpuq("--snapshot", str(path), "preemptions", "-o", "json").stdout)
    assert doc["events"][0]["time"] == "2026-11-19T15:00:00.000001Z"
    assert doc["taken_at"] == "2026-11-19T15:00:59.250000Z"
