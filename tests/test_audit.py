"""The audit log: one fsynced JSON line per action, O_APPEND, failures audited, no silent success."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from gpuq.audit import AuditError, AuditLog, make_record, safe_text

SMALL = Path(__file__).resolve().parent / "fixtures" / "snapshots" / "small.json"


def _record(**overrides: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {"backend": "demo", "cluster": "c", "action": "bump", "target": "1", "result": "ok"}
    fields.update(overrides)
    return make_record(**fields)


def test_record_has_every_documented_field() -> None:
    record = _record(before={"priority": 1}, after={"priority": 2}, reason="why")
    for key in (
        "time",
        "operator",
        "host",
        "backend",
        "cluster",
        "action",
        "target",
        "before",
        "after",
        "reason",
        "result",
    ):
        assert key in record
    assert record["time"].endswith("Z")


def test_append_is_one_fsynced_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[int] = []
    real_fsync = os.fsync

    def spy(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", spy)
    log = AuditLog(tmp_path / "state" / "audit.jsonl")
    log.append(_record(target="1"))
    log.append(_record(target="2", reason="multi\nline reason"))
    lines = log.path.read_text().splitlines()
    assert len(lines) == 2
    assert len(synced) == 2
    assert [json.loads(line)["target"] for line in lines] == ["1", "2"]
    assert oct(log.path.stat().st_mode & 0o777) == oct(0o600)


def test_opened_with_o_append(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    flags: list[int] = []
    real_open = os.open

    def spy(path: Any, flag: int, *args: Any) -> int:
        flags.append(flag)
        return real_open(path, flag, *args)

    monkeypatch.setattr(os, "open", spy)
    AuditLog(tmp_path / "audit.jsonl").append(_record())
    assert flags
    assert flags[-1] & os.O_APPEND


def test_existing_lines_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    path.write_text('{"old": true}\n')
    AuditLog(path).append(_record())
    assert len(path.read_text().splitlines()) == 2


def test_entries_reports_bad_lines(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    path.write_text('{"a": 1}\nnot json\n\n[1]\n')
    entries = list(AuditLog(path).entries())
    assert [(e.line, e.record) for e in entries] == [(1, {"a": 1}), (2, None), (4, None)]
    assert list(AuditLog(tmp_path / "missing.jsonl").entries()) == []


def test_write_failure_raises(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = AuditLog(tmp_path / "audit.jsonl")
    writer = log.open()

    def broken(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", broken)
    with pytest.raises(AuditError, match="No space left"):
        writer.write(_record())
    writer.close()


def test_records_are_split_on_newlines_only(tmp_path: Path) -> None:
    """A reason holding another line separator (U+2028, U+2029, NEL) stays one record."""
    log = AuditLog(tmp_path / "audit.jsonl")
    for i, separator in enumerate(("\u2028", "\u2029", "\x85", "\r", "\x0b\x0c\x1c")):
        log.append(_record(target=str(i), reason=f"a{separator}b"))
    entries = list(log.entries())
    assert [e.record["target"] for e in entries if e.record] == ["0", "1", "2", "3", "4"]
    assert entries[0].record is not None and entries[0].record["reason"] == "a\u2028b"


def test_text_that_is_not_utf8_is_written_as_escapes(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit.jsonl")
    reason = b"oops \xff".decode("utf-8", "surrogateescape")  # what argv holds for a non-UTF-8 byte
    log.append(_record(reason=safe_text(reason)))
    log.append(_record(reason=reason))  # even unescaped, the write itself cannot fail
    first, second = (e.record for e in log.entries())
    assert first is not None and first["reason"] == "oops \\xff"
    assert second is not None and second["reason"] == "oops \udcff"


def test_an_intent_without_its_outcome_is_reported_as_unknown(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit.jsonl")
    log.append(_record(target="1", result="pending", phase="intent", action_id="a1"))
    log.append(_record(target="1", result="ok", action_id="a1"))
    log.append(_record(target="2", result="pending", phase="intent", action_id="a2"))
    log.append(_record(target="3", result="dry_run", dry_run=True))
    actions, broken = log.actions()
    assert not broken
    assert [(a.record["target"], a.record["result"], a.outcome_known) for a in actions] == [
        ("1", "ok", True), ("2", "unknown", False), ("3", "dry_run", True)]
    assert actions[1].record["error"] == "outcome unknown: check the cluster"
