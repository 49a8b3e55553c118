"""The append-only audit log: every action, dry run or not, success or failure, as JSON lines.

Written to `$XDG_STATE_HOME/gpuq/audit.jsonl`. The file is opened (and so checked writable)
*before* an action runs, and each record goes out in one `write` on an `O_APPEND` descriptor
under an exclusive `flock`, then `fsync`.

An action that touches the cluster leaves two records sharing its `id`: an *intent*
(``phase: "intent"``, ``result: "pending"``), on disk before the backend is called, and an
*outcome* (``phase: "outcome"``) after. A dry run, a refusal, a declined confirmation or a failure
before the backend is touched leaves the outcome alone. An intent without its outcome (the
process died, the disk filled up in between) is what `actions()` reports as outcome unknown.

Record fields (a stable interface, shown by `gpuq audit -o json`):
`time` (RFC 3339 UTC), `operator`, `host`, `backend`, `cluster`, `action`, `target`, `before`,
`after`, `reason`, `result` (`ok` | `dry_run` | `error` | `refused` | `pending`), `dry_run`, `args`,
`commands` (argument lists), `requests` (API requests: method, path, body), `warnings`, `error`
(message or null), `exit_code`, `id`, `phase` (`intent` | `outcome`), `noop` (true: the action had
nothing to change, e.g. lifting an exemption the job does not have; no backend call was made),
`preempted` (the jobs an applied action made the scheduler preempt, `{id: [nodes]}`; null where
the backend cannot tell).

A write that fails (disk full) is cut back to where the log ended, so the log never holds half a
record, and is reported as an `AuditError`.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec

from gpuq import locations
from gpuq.errors import GpuqError
from gpuq.timefmt import format_time

__all__ = [
    "AuditAction",
    "AuditEntry",
    "AuditError",
    "AuditLog",
    "AuditWriter",
    "current_operator",
    "make_record",
    "new_action_id",
    "safe_text",
]

OUTCOME_UNKNOWN = "outcome unknown: check the cluster"


class AuditError(GpuqError):
    """The audit log could not be opened, written or read; an action is then not reported as done."""

    exit_code = 1


def current_operator() -> str:
    """The login name, noting the real operator behind sudo."""
    import getpass  # getpass and socket only when a record is made, not on every gpuq start

    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = f"uid:{os.getuid()}"
    sudo_user = os.environ.get("SUDO_USER")
    return f"{sudo_user} (as {user})" if sudo_user and sudo_user != user else user


def new_action_id() -> str:
    """What ties an action's intent and outcome records together."""
    return uuid.uuid4().hex


def safe_text(text: str) -> str:
    """Text that came from outside (argv, a job's fields) as valid UTF-8: bytes that are not UTF-8
    (kept by Python as lone surrogates) are written as ``\\xff`` escapes instead of failing the write."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return text


def make_record(
    *,
    backend: str,
    cluster: str,
    action: str,
    target: str,
    result: str,
    reason: str = "",
    dry_run: bool = False,
    before: Mapping[str, Any] | None = None,
    after: Mapping[str, Any] | None = None,
    args: Mapping[str, Any] | None = None,
    commands: Sequence[Sequence[str]] = (),
    requests: Sequence[Mapping[str, Any]] = (),
    warnings: Sequence[str] = (),
    error: str | None = None,
    exit_code: int = 0,
    now: float | None = None,
    action_id: str | None = None,
    phase: str = "outcome",
    noop: bool = False,
    preempted: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, Any]:
    """One audit record with every documented field present."""
    import socket

    return {
        "time": format_time(round(time.time() if now is None else now, 3)),
        "operator": current_operator(),
        "host": socket.gethostname(),
        "backend": backend,
        "cluster": cluster,
        "action": action,
        "target": target,
        "before": dict(before or {}),
        "after": dict(after or {}),
        "reason": reason,
        "result": result,
        "dry_run": dry_run,
        "args": dict(args or {}),
        "commands": [list(c) for c in commands],
        "requests": [dict(r) for r in requests],
        "warnings": list(warnings),
        "error": error,
        "exit_code": exit_code,
        "id": action_id or new_action_id(),
        "phase": phase,
        "noop": noop,
        "preempted": None if preempted is None else {job: list(nodes) for job, nodes in preempted.items()},
    }


class AuditWriter:
    """An open append descriptor on the log; `write` returns only once the line is on disk."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd = fd

    def write(self, record: Mapping[str, Any]) -> None:
        import fcntl

        text = json.dumps(record, default=str, ensure_ascii=False, separators=(",", ":"))
        # (backslashreplace: a stray surrogate from undecodable input is written as an escape,
        # never refused after the action it records was applied)
        line = (text + "\n").encode("utf-8", "backslashreplace")
        try:
            # One write per record under flock: concurrent gpuq processes never interleave lines.
            fcntl.flock(self._fd, fcntl.LOCK_EX)
            try:
                end = os.fstat(self._fd).st_size  # (under the lock: no other gpuq appends meanwhile)
                try:
                    view = memoryview(line)
                    while view:
                        written = os.write(self._fd, view)
                        view = view[written:]
                    os.fsync(self._fd)
                except OSError:
                    # Disk full half-way, or the data never reached the disk: cut the log back to
                    # where it ended, so no half record runs into the next one.
                    with contextlib.suppress(OSError):
                        os.ftruncate(self._fd, end)
                    raise
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
        except OSError as exc:
            raise AuditError(f"cannot write audit log {self.path}: {exc.strerror or exc}") from None

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> AuditWriter:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class AuditEntry(msgspec.Struct, frozen=True):
    """One line of the log as read back; `record` is None when the line is not valid JSON."""

    line: int
    record: dict[str, Any] | None
    raw: str


class AuditAction(msgspec.Struct, frozen=True):
    """One action as the log tells it: its outcome record, or, when the log has only its intent,
    that intent (`outcome_known` False: it may or may not have been applied)."""

    record: dict[str, Any]
    outcome_known: bool
    line: int


class AuditLog:
    """The log file: open it for appending before acting, read it for `gpuq audit`."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path if path is not None else locations.audit_log_path()

    def open(self) -> AuditWriter:
        """Open for appending, creating it private to the operator; fails before any action runs."""
        try:
            locations.ensure_dir(self.path.parent)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise AuditError(f"cannot open audit log {self.path}: {exc.strerror or exc}; nothing was done") from None
        return AuditWriter(self.path, fd)

    def append(self, record: Mapping[str, Any]) -> None:
        with self.open() as writer:
            writer.write(record)

    def entries(self) -> Iterator[AuditEntry]:
        """Every line in order; a missing log reads as empty. Records are split on newlines
        only: a reason may hold any other line separator (U+2028, NEL) inside its JSON string."""
        try:
            data = self.path.read_bytes()
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                return
            raise AuditError(f"cannot read audit log {self.path}: {exc.strerror}") from None
        for number, raw in enumerate(data.split(b"\n"), start=1):
            text = raw.decode("utf-8", "replace")
            if not text.strip():
                continue
            try:
                record = json.loads(text)
            except json.JSONDecodeError:
                record = None
            yield AuditEntry(number, record if isinstance(record, dict) else None, text)

    def actions(self) -> tuple[list[AuditAction], list[AuditEntry]]:
        """One entry per action, in log order (an action sits where its first record is), and the
        lines that are not records. An intent whose outcome is missing is reported with result
        ``unknown`` and the error `OUTCOME_UNKNOWN`."""
        order: list[str] = []
        found: dict[str, AuditAction] = {}
        broken: list[AuditEntry] = []
        for entry in self.entries():
            record = entry.record
            if record is None:
                broken.append(entry)
                continue
            key = str(record.get("id") or f"line:{entry.line}")
            if key not in found:
                order.append(key)
            if record.get("phase") == "intent":
                if key not in found:
                    unknown = {**record, "result": "unknown", "error": OUTCOME_UNKNOWN, "exit_code": None}
                    found[key] = AuditAction(unknown, False, entry.line)
                continue
            found[key] = AuditAction(record, True, found[key].line if key in found else entry.line)
        return [found[key] for key in order], broken
