"""The audit log as people read it: one row per action, with "outcome unknown" marked."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any, TypeVar, cast

import msgspec

from gpuq.audit import AuditAction, AuditLog
from gpuq.views.changes import changes

__all__ = ["AuditRow", "AuditView", "audit_actions_cached", "audit_row", "audit_view", "audit_view_cached"]

T = TypeVar("T")


class AuditRow(msgspec.Struct, frozen=True):
    record: dict[str, Any]
    #: False: the log has this action's intent but no outcome (it may or may not have been applied)
    outcome_known: bool
    #: what it changed, as ``field: before -> after; …`` (empty for a failure)
    change: str

    @property
    def result(self) -> str:
        return str(self.record.get("result"))

    @property
    def detail(self) -> str:
        """The error of a failed, refused or unknown action; else its change."""
        if self.result in ("error", "refused", "unknown"):
            return str(self.record.get("error") or "")
        return self.change


class AuditView(msgspec.Struct, frozen=True):
    path: str
    rows: tuple[AuditRow, ...]
    #: lines of the log that are not records (line number, text)
    unreadable: tuple[tuple[int, str], ...]


def _change(record: dict[str, Any]) -> str:
    if record.get("noop") is True:  # (e.g. lifting an exemption the job did not have)
        return "nothing to change (no-op)"
    before, after = record.get("before") or {}, record.get("after") or {}
    if not isinstance(before, dict) or not isinstance(after, dict):
        return ""
    return "; ".join(f"{key}: {old} -> {new}" for key, old, new in changes(before, after))


def audit_row(action: AuditAction) -> AuditRow:
    """One action of the log as a row (its change in words)."""
    return AuditRow(action.record, action.outcome_known, _change(action.record))


def audit_view(
    log: AuditLog | None = None, *, tail: int = 0, actions: Iterable[str] = (), jobs: Iterable[str] = ()
) -> AuditView:
    """The last `tail` actions (0: all), oldest first, of the given kinds and jobs."""
    log = log or AuditLog()
    found, broken = log.actions()
    kinds, targets = set(actions), set(jobs)
    rows: list[AuditAction] = [
        a for a in found
        if (not kinds or a.record.get("action") in kinds) and (not targets or str(a.record.get("target")) in targets)
    ]  # fmt: skip
    if tail:
        rows = rows[-tail:]
    return AuditView(
        str(log.path),
        tuple(audit_row(a) for a in rows),
        tuple((e.line, e.raw) for e in broken),
    )


_cache_lock = threading.Lock()
#: (log path, what) -> (the file's inode, size and mtime when read, what was read)
_cache: dict[tuple[str, str], tuple[tuple[int, int, int], Any]] = {}


def _cached(log: AuditLog, what: str, read: Callable[[AuditLog], T]) -> T:
    """`read(log)`, read again only once the file has changed (inode, size or mtime)."""
    try:
        st = log.path.stat()
    except OSError:  # missing (no action yet) or unreadable: `read` says which
        return read(log)
    stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
    key = (str(log.path), what)
    with _cache_lock:
        hit = _cache.get(key)
    if hit is not None and hit[0] == stamp:
        return cast(T, hit[1])
    value = read(log)  # (an append after the stat: newer than `stamp`, read again next time)
    with _cache_lock:
        _cache[key] = (stamp, value)
    return value


def audit_view_cached(log: AuditLog) -> AuditView:
    """`audit_view(log)` (every action), read again only once the file has changed: a console
    refreshing every few seconds parses a long log only after an append."""
    return _cached(log, "view", audit_view)


def audit_actions_cached(log: AuditLog) -> tuple[AuditAction, ...]:
    """Every action of the log (`AuditLog.actions`), read again only once the file has changed."""
    return _cached(log, "actions", lambda log: tuple(log.actions()[0]))
