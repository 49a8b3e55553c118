"""The audit log when the disk fills up: no half record left behind, and an action whose records
cannot be written is either not done (intent) or reported as applied with its outcome unknown."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest

from gpuq.audit import AuditError, AuditLog, make_record
from gpuq.backends.snapshot_file import SnapshotFileBackend
from gpuq.config import PolicySource
from gpuq.policy.config import DEFAULT_POLICY
from gpuq.service import Cluster

SMALL = Path(__file__).resolve().parent / "fixtures" / "snapshots" / "small.json"


def _record(target: str, **fields: Any) -> dict[str, Any]:
    return make_record(backend="demo", cluster="c", action="bump", target=target, result="ok", now=1.8e9, **fields)


def _half_then_full(monkeypatch: pytest.MonkeyPatch) -> None:
    """os.write takes half of what it is given, then fails as a full disk does."""
    real = os.write
    state = {"wrote": False}

    def write(fd: int, data: Any) -> int:
        if state["wrote"]:
            raise OSError(errno.ENOSPC, "No space left on device")
        state["wrote"] = True
        return real(fd, bytes(data)[: len(data) // 2])

    monkeypatch.setattr(os, "write", write)


def test_a_record_cut_short_by_a_full_disk_is_taken_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = AuditLog(tmp_path / "audit.jsonl")
    log.append(_record("1"))
    before = log.path.read_bytes()
    with log.open() as writer:
        _half_then_full(monkeypatch)
        with pytest.raises(AuditError, match=r"cannot write audit log .*: No space left on device"):
            writer.write(_record("2", reason="x" * 5000))
        monkeypatch.undo()
    assert log.path.read_bytes() == before  # no half line to run into the next record
    log.append(_record("3"))
    assert [e.record["target"] for e in log.entries() if e.record is not None] == ["1", "3"]
    assert not log.actions()[1]


def test_a_record_that_never_reached_the_disk_is_taken_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = AuditLog(tmp_path / "audit.jsonl")
    log.append(_record("1"))
    before = log.path.read_bytes()

    def eio(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    with log.open() as writer:
        monkeypatch.setattr(os, "fsync", eio)
        with pytest.raises(AuditError, match="Input/output error"):
            writer.write(_record("2"))
    assert log.path.read_bytes() == before


def _cluster(tmp_path: Path) -> tuple[Cluster, AuditLog]:
    log = AuditLog(tmp_path / "audit.jsonl")
    return Cluster(SnapshotFileBackend(SMALL), "file", PolicySource(DEFAULT_POLICY, "defaults"), log), log


def test_a_refusal_that_cannot_be_audited_still_says_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cluster, log = _cluster(tmp_path)

    def full(fd: int, data: Any) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", full)
    with pytest.raises(AuditError, match=r"cannot bump jobs: .* \(and cannot write audit log .*No space left"):
        cluster.prepare_bump("201", to=5)
    assert not log.path.exists() or not log.path.read_bytes()
