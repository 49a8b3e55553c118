"""A cache of sacct records by time window, so a refresh does not re-read the whole history.

The first read covers ``[now - window, now]``; later reads only ``[last read - overlap, now]``
and replace what they cover. Records whose run ended before the window are dropped. A read
younger than ``ttl_s`` is reused without asking sacct at all. ``to_json``/``from_json`` let the
backend keep the cache between gpuq invocations (see `diskcache`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from gpuq.backends.slurm.sacct import SACCT_FIELDS, SACCT_FIELDS_QOSRAW, AcctRecord
from gpuq.model import JobState

__all__ = ["HistoryCache", "sacct_args"]

#: Jobs can reach slurmdbd a few seconds late; re-read this much of the last window.
OVERLAP_S = 600.0


def sacct_args(start: float, end: float | None = None, *, qos_ids: bool = False) -> list[str]:
    """``sacct`` for all users' allocations (no steps), every run of requeued jobs (-D); with
    ``qos_ids`` the QOS column is QOSRAW (one slurmdbd round trip fewer, see `SACCT_FIELDS_QOSRAW`)."""
    fmt = "%Y-%m-%dT%H:%M:%S"  # sacct reads local time
    args = ["sacct", "-n", "-P", "-X", "-D", "-a", "-S", datetime.fromtimestamp(start).strftime(fmt)]
    args += ["-E", datetime.fromtimestamp(end).strftime(fmt) if end else "now"]
    args += ["-o", ",".join(SACCT_FIELDS_QOSRAW if qos_ids else SACCT_FIELDS)]
    return args


class HistoryCache:
    def __init__(self, window_s: float, ttl_s: float = 0.0) -> None:
        self.window_s = window_s
        self.ttl_s = ttl_s
        self.read_until: float | None = None
        #: when sacct was last asked; None after `expire` (the next refresh asks, incrementally)
        self.fresh_at: float | None = None
        self._records: dict[tuple[str, float | None], AcctRecord] = {}
        self.reads = 0  # how many sacct calls were made (tests check the cache works)

    def refresh(self, now: float, fetch: Callable[[float], Iterable[AcctRecord]]) -> list[AcctRecord]:
        if self.read_until is not None and self.fresh_at is not None and 0 <= now - self.fresh_at < self.ttl_s:
            return list(self._records.values())
        start = now - self.window_s if self.read_until is None else self.read_until - OVERLAP_S
        fresh = list(fetch(start))
        self.reads += 1
        seen = {r.id for r in fresh}
        # A run that was pending at the last read may have started since: drop old placeholders.
        for key in [k for k in self._records if k[0] in seen and k[1] is None]:
            del self._records[key]
        for rec in fresh:
            self._records[(rec.id, rec.start)] = rec
        horizon = now - self.window_s
        for key in [k for k, r in self._records.items() if r.end is not None and r.end < horizon]:
            del self._records[key]
        self.read_until = now
        self.fresh_at = now
        return list(self._records.values())

    def expire(self) -> None:
        """Make the next `refresh` ask sacct (still only since the last read) despite the TTL."""
        self.fresh_at = None

    # ------------------------------------------------------------------ persistence
    def to_json(self) -> dict[str, Any]:
        """A JSON-able form: the window, when it was read, and the records (states by value)."""
        return {
            "window_s": self.window_s,
            "read_until": self.read_until,
            "fresh_at": self.fresh_at,
            "records": [[*r[:8], r.state.value, *r[9:]] for r in self._records.values()],
        }

    def load_json(self, data: Any) -> bool:
        """Adopt a `to_json` form if it covers at least this cache's window; False (and no change)
        when it does not, or when it is not that form (a corrupt cache is just re-read)."""
        try:
            read_until = data["read_until"]
            fresh_at = data["fresh_at"]
            if float(data["window_s"]) < self.window_s or not isinstance(read_until, int | float):
                return False
            if fresh_at is not None and not isinstance(fresh_at, int | float):
                return False
            records: dict[tuple[str, float | None], AcctRecord] = {}
            width = len(AcctRecord._fields)
            for row in data["records"]:
                if not isinstance(row, list) or len(row) != width:
                    return False
                row[8] = JobState(row[8])
                rec = AcctRecord(*row)
                records[(rec.id, rec.start)] = rec
        except (KeyError, TypeError, ValueError, IndexError):
            return False
        self.read_until = float(read_until)
        self.fresh_at = None if fresh_at is None else float(fresh_at)
        self._records = records
        return True
