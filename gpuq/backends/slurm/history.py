"""A cache of sacct records by time window, so a refresh does not re-read the whole history.

The first read covers ``[now - window, now]``; later reads only ``[last read - overlap, now]``
and replace what they cover. Records whose run ended before the window are dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime

from gpuq.backends.slurm.sacct import SACCT_FIELDS, AcctRecord

__all__ = ["HistoryCache", "sacct_args"]

#: Jobs can reach slurmdbd a few seconds late; re-read this much of the last window.
OVERLAP_S = 600.0


def sacct_args(start: float, end: float | None = None) -> list[str]:
    """``sacct`` for all users' allocations (no steps), every run of requeued jobs (-D)."""
    fmt = "%Y-%m-%dT%H:%M:%S"  # sacct reads local time
    args = ["sacct", "-n", "-P", "-X", "-D", "-a", "-S", datetime.fromtimestamp(start).strftime(fmt)]
    args += ["-E", datetime.fromtimestamp(end).strftime(fmt) if end else "now"]
    args += ["-o", ",".join(SACCT_FIELDS)]
    return args


class HistoryCache:
    def __init__(self, window_s: float) -> None:
        self.window_s = window_s
        self.read_until: float | None = None
        self._records: dict[tuple[str, float | None], AcctRecord] = {}
        self.reads = 0  # how many sacct calls were made (tests check the cache works)

    def refresh(self, now: float, fetch: Callable[[float], Iterable[AcctRecord]]) -> list[AcctRecord]:
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
        return list(self._records.values())
