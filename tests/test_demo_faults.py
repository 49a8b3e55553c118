"""The demo backend when the disk fails it: full, read-only, or holding a corrupt state file.

Tests run as root, whom file modes do not stop, so a full disk and a read-only directory are
injected as the OSErrors the kernel would raise.
"""

from __future__ import annotations

import errno
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

from gpuq.audit import AuditLog
from gpuq.backends import demo as demo_module
from gpuq.backends.base import PriorityChange
from gpuq.backends.demo import DemoBackend, StateNotSaved
from gpuq.config import PolicySource
from gpuq.errors import BadInput, PermissionDenied
from gpuq.model import JobState
from gpuq.policy.config import Mode
from gpuq.service import Cluster
from tests.clock import FixedClock

T0 = 1_800_000_000.0


def _backend(state: Path, clock: FixedClock) -> DemoBackend:
    return DemoBackend(state_dir=state, clock=clock)


def _cluster(backend: DemoBackend, tmp_path: Path) -> tuple[Cluster, AuditLog]:
    log = AuditLog(tmp_path / "audit" / "audit.jsonl")
    return Cluster(backend, "demo", PolicySource(backend.policy, "demo"), log), log


def _running(backend: DemoBackend) -> str:
    return next(j.id for j in backend.snapshot().jobs if j.state is JobState.RUNNING)


def _disk_full(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every write of the state's temp file fails as a full disk does (after a partial write)."""
    real = os.fdopen

    class Full:
        def __init__(self, fd: int, mode: str) -> None:
            self.inner = real(fd, mode)

        def __enter__(self) -> Full:
            return self

        def __exit__(self, *_: object) -> None:
            self.inner.close()

        def write(self, data: bytes) -> int:
            self.inner.write(data[: len(data) // 2])
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(demo_module.os, "fdopen", lambda fd, mode="r": Full(fd, mode))


def _read_only(monkeypatch: pytest.MonkeyPatch, state: Path) -> None:
    """The state directory as on a read-only mount: nothing can be created or replaced there."""
    real_mkstemp, real_open, real_replace = tempfile.mkstemp, open, os.replace

    def mkstemp(*args: Any, **kwargs: Any) -> tuple[int, str]:
        if Path(str(kwargs.get("dir", ""))) == state:
            raise OSError(errno.EROFS, "Read-only file system")
        return real_mkstemp(*args, **kwargs)

    def opener(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if Path(str(file)).parent == state and any(c in mode for c in "wa+x"):
            raise OSError(errno.EROFS, "Read-only file system")
        return real_open(file, mode, *args, **kwargs)

    def replace(src: Any, dst: Any) -> None:
        if Path(str(dst)).parent == state:
            raise OSError(errno.EROFS, "Read-only file system")
        real_replace(src, dst)

    monkeypatch.setattr(demo_module.tempfile, "mkstemp", mkstemp)
    monkeypatch.setattr("builtins.open", opener)
    monkeypatch.setattr(demo_module.os, "replace", replace)


def test_disk_full_while_saving_an_action_leaves_nothing_half_done(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = FixedClock(T0)
    state = tmp_path / "state"
    backend = _backend(state, clock)
    job = _running(backend)
    saved = (state / "demo-demo.json").read_bytes()
    cluster, log = _cluster(backend, tmp_path)
    pending = cluster.prepare_bump(job, to=4242, reason="disk full")
    with monkeypatch.context() as patch:
        _disk_full(patch)
        with pytest.raises(StateNotSaved, match=r"cannot bump job \d+: saving .*No space left.*nothing was done"):
            pending.confirm()
    # The old state is whole, no temp file is left, and the bump did not happen.
    assert (state / "demo-demo.json").read_bytes() == saved
    assert sorted(p.name for p in state.iterdir()) == ["demo-demo.json", "demo-demo.lock"]
    assert _backend(state, clock).snapshot().job(job).priority != 4242  # type: ignore[union-attr]
    # The audit log says so: an intent, then an error outcome, never "ok".
    records = [e.record for e in log.entries() if e.record is not None]
    assert [(r["phase"], r["result"]) for r in records] == [("intent", "pending"), ("outcome", "error")]
    assert "No space left" in records[-1]["error"] and records[-1]["exit_code"] == 1


def test_disk_full_while_saving_a_read_still_answers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FixedClock(T0)
    state = tmp_path / "state"
    first = _backend(state, clock).snapshot()
    saved = (state / "demo-demo.json").read_bytes()
    clock.now += 60
    with monkeypatch.context() as patch:
        _disk_full(patch)
        later = _backend(state, clock).snapshot()
    assert later.now == first.now + 60 * demo_module.DEFAULT_SPEED
    assert (state / "demo-demo.json").read_bytes() == saved
    # Replayed from the state on disk, the next call sees the very same moment.
    assert _backend(state, clock).snapshot() == later


def test_read_only_state_dir_reads_work_and_actions_say_why_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = FixedClock(T0)
    state = tmp_path / "state"
    job = _running(_backend(state, clock))
    saved = (state / "demo-demo.json").read_bytes()
    (state / "demo-demo.lock").unlink()  # (no lock file either: it cannot be created there)
    _read_only(monkeypatch, state)
    clock.now += 30
    backend = _backend(state, clock)
    snap = backend.snapshot()
    assert snap.job(job) is not None
    cluster, log = _cluster(backend, tmp_path)
    for prepare in (
        lambda: cluster.prepare_bump(job, to=4242),
        lambda: cluster.prepare_exempt(job, for_s=3600.0),
        lambda: cluster.prepare_preempt(job, mode=Mode.SUSPEND),
    ):
        why = rf"cannot \w+ job {job}: the demo cluster's state in .* is not writable \(Read-only file system\)"
        with pytest.raises(PermissionDenied, match=why + "; nothing was done"):
            prepare()
    assert (state / "demo-demo.json").read_bytes() == saved
    assert [r["result"] for e in log.entries() if (r := e.record) is not None] == ["error"] * 3


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"{not json", "not valid JSON"),
        (b"[1, 2]", "not a JSON object"),
        (json.dumps({"format": "gpuq.demo-state/v9"}).encode(), "not gpuq.demo-state/v1"),
        (json.dumps({"format": "gpuq.demo-state/v1", "seed": 1}).encode(), "damaged or from an incompatible gpuq"),
        (b"\xff\xfe", "not valid JSON"),
    ],
)
def test_a_corrupt_state_file_is_reported_and_kept(tmp_path: Path, content: bytes, why: str) -> None:
    state = tmp_path / "state"
    state.mkdir()
    path = state / "demo-demo.json"
    path.write_bytes(content)
    backend = _backend(state, FixedClock(T0))
    with pytest.raises(BadInput, match=rf"^{path}: cannot use the demo cluster's saved state: .*{why}") as caught:
        backend.snapshot()
    assert f"`rm {path}`" in str(caught.value) and "delete or move it" in str(caught.value)
    with pytest.raises(BadInput):
        backend.prepare_bump("1000", PriorityChange(to=5), reason="")
    assert path.read_bytes() == content  # never replaced
    assert sorted(p.name for p in state.iterdir()) == ["demo-demo.json", "demo-demo.lock"]
    path.unlink()  # the way out the message names: a fresh cluster
    assert backend.snapshot().jobs


def test_an_unreadable_state_file_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state = tmp_path / "state"
    _backend(state, FixedClock(T0)).snapshot()
    real = Path.read_bytes

    def denied(self: Path) -> bytes:
        if self.name == "demo-demo.json":
            raise OSError(errno.EACCES, "Permission denied")
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", denied)
    with pytest.raises(PermissionDenied, match=r"demo-demo.json: cannot read the demo cluster's state"):
        _backend(state, FixedClock(T0)).snapshot()
