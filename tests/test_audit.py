"""The audit log: one fsynced JSON line per action, O_APPEND, failures audited, no silent success."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from gpuq.audit import AuditError, AuditLog, make_record
from gpuq.backends.base import ActionResult
from gpuq.backends.snapshot_file import SnapshotFileBackend
from gpuq.config import PolicySource
from gpuq.errors import NotFound
from gpuq.policy.config import DEFAULT_POLICY
from gpuq.service import Cluster

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


class _Recording(SnapshotFileBackend):
    """A snapshot backend that accepts bumps, to drive the service layer directly."""

    can_bump = True

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.calls: list[str] = []

    def bump(self, job_id: str, *, priority: int | None, urgent: bool, reason: str, dry_run: bool) -> ActionResult:
        self.calls.append(job_id)
        return ActionResult("bump", job_id, dry_run, {"priority": 100}, {"priority": priority})


def _cluster(tmp_path: Path) -> tuple[Cluster, _Recording, AuditLog]:
    backend = _Recording(SMALL)
    log = AuditLog(tmp_path / "audit.jsonl")
    return Cluster(backend, "recording", PolicySource(DEFAULT_POLICY, "defaults"), log), backend, log


def test_service_audits_success_and_failure(tmp_path: Path) -> None:
    cluster, backend, log = _cluster(tmp_path)
    outcome = cluster.bump("201", to=500, reason="r")
    assert outcome.record["result"] == "ok"
    assert outcome.record["after"] == {"priority": 500}
    with pytest.raises(NotFound):
        cluster.bump("999", to=500)
    records = [e.record for e in log.entries()]
    assert [r["result"] for r in records if r] == ["ok", "error"]
    assert backend.calls == ["201"]


def test_unopenable_log_means_nothing_is_done(tmp_path: Path) -> None:
    cluster, backend, log = _cluster(tmp_path)
    log.path = tmp_path / "not-a-dir" / "audit.jsonl"
    (tmp_path / "not-a-dir").write_text("")
    with pytest.raises(AuditError, match="nothing was done"):
        cluster.bump("201", to=500)
    assert backend.calls == []


def test_failed_write_after_action_is_not_success(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cluster, backend, _ = _cluster(tmp_path)

    def broken(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", broken)
    with pytest.raises(AuditError, match="WAS APPLIED"):
        cluster.bump("201", to=500)
    assert backend.calls == ["201"]
