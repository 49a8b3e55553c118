"""When each cluster is read next, and what the console says about a read that failed.

Pure bookkeeping on an injected clock (no Textual, no thread): the app asks `due(now)` on every
tick, starts a read in a worker when it is, and reports back `succeeded` or `failed`. A failed
read keeps the last good snapshot on screen with a "stale since …" banner and retries with
exponential backoff (interval × 2ⁿ, at most `MAX_BACKOFF_S`), so a backend that is down is not
hammered and comes back on its own when it recovers.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MAX_BACKOFF_S", "MIN_INTERVAL_S", "RefreshState"]

#: the floor of the refresh interval: faster, a large Slurm cluster's reads would overlap
MIN_INTERVAL_S = 1.0
#: the longest wait between two retries of a failing backend
MAX_BACKOFF_S = 60.0


@dataclass(slots=True)
class RefreshState:
    interval_s: float
    #: when the last read started, succeeded; None before the first
    started_at: float | None = None
    succeeded_at: float | None = None
    #: the first failure since the last success (the banner's "stale since"), and how many
    failing_since: float | None = None
    failures: int = 0
    error: str | None = None
    running: bool = False

    def __post_init__(self) -> None:
        self.interval_s = max(MIN_INTERVAL_S, self.interval_s)

    @property
    def stale(self) -> bool:
        return self.failing_since is not None

    @property
    def wait_s(self) -> float:
        """The time between the start of one read and the next: the interval, or the backoff."""
        if not self.failures:
            return self.interval_s
        return min(MAX_BACKOFF_S, self.interval_s * float(2 ** min(self.failures, 16)))

    def due(self, now: float) -> bool:
        if self.running:
            return False
        return self.started_at is None or now - self.started_at >= self.wait_s

    def start(self, now: float) -> None:
        self.running, self.started_at = True, now

    def succeeded(self, now: float) -> None:
        self.running, self.succeeded_at = False, now
        self.failing_since, self.failures, self.error = None, 0, None

    def failed(self, now: float, error: str) -> None:
        self.running, self.error = False, error
        self.failures += 1
        if self.failing_since is None:
            self.failing_since = now

    def retry_in(self, now: float) -> float:
        """Seconds until the next attempt (0 when it is due)."""
        if self.started_at is None:
            return 0.0
        return max(0.0, self.started_at + self.wait_s - now)
