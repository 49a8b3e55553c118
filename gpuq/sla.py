"""Queue-wait SLA maths: nearest-rank percentiles per class, with and without pending jobs.

Waits follow the policy model: `start - eligible` (or submit) for jobs that started, and the
current age for jobs still pending ("censored" waits). A P95 over started jobs alone hides an
incident in which jobs never start, so both figures are reported and the breach flag uses the
larger of the two.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

import msgspec

from gpuq.model import Job, JobState, Snapshot, from_epoch
from gpuq.policy.config import Policy
from gpuq.timefmt import format_time

__all__ = ["AT_RISK_SHARE", "SlaReport", "WaitStats", "class_verdict", "nearest_rank", "sla_report", "wait_stats"]

#: A wait past this share of its class's P95 target is at risk of breaching it (a job's wait, or
#: a class's P95 with its pending jobs counted).
AT_RISK_SHARE = 0.8


def nearest_rank(sorted_values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile: element ceil(q*n) (1-based) of the ascending values."""
    n = len(sorted_values)
    if n == 0:
        return None
    rank = max(1, math.ceil(q * n - 1e-9))
    return sorted_values[min(rank, n) - 1]


class WaitStats(msgspec.Struct, frozen=True):
    count: int
    pending: int
    p50_s: float | None
    p95_s: float | None
    p99_s: float | None
    max_s: float | None
    p95_incl_pending_s: float | None
    target_p95_s: float | None
    breach: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "pending": self.pending,
            "p50_s": self.p50_s,
            "p95_s": self.p95_s,
            "p99_s": self.p99_s,
            "max_s": self.max_s,
            "p95_incl_pending_s": self.p95_incl_pending_s,
            "target_p95_s": self.target_p95_s,
            "breach": self.breach,
        }


class SlaReport(msgspec.Struct, frozen=True):
    since: float | None
    overall: WaitStats
    classes: dict[str, WaitStats]

    def to_dict(self) -> dict[str, Any]:
        """The `gpuq sla -o json` document (stable interface)."""
        return {
            "since": None if self.since is None else format_time(self.since),
            "overall": self.overall.to_dict(),
            "classes": {name: stats.to_dict() for name, stats in sorted(self.classes.items())},
        }


def wait_stats(started: list[float], pending: list[float], target_p95_s: float | None) -> WaitStats:
    """Statistics over started waits and censored pending waits (lists are sorted in place)."""
    started.sort()
    combined = sorted(started + pending) if pending else started
    p95 = nearest_rank(started, 0.95)
    p95_all = nearest_rank(combined, 0.95)
    worst = max((v for v in (p95, p95_all) if v is not None), default=None)
    return WaitStats(
        count=len(started),
        pending=len(pending),
        p50_s=nearest_rank(started, 0.50),
        p95_s=p95,
        p99_s=nearest_rank(started, 0.99),
        max_s=started[-1] if started else None,
        p95_incl_pending_s=p95_all,
        target_p95_s=target_p95_s,
        breach=target_p95_s is not None and worst is not None and worst > target_p95_s,
    )


def sla_report(
    snapshot: Snapshot, policy: Policy, now: float, since: float | None = None, jobs: Iterable[Job] | None = None
) -> SlaReport:
    """Per-class and overall wait statistics at `now`; `since` limits the window to jobs still
    waiting or started since then."""
    started: dict[str, list[float]] = defaultdict(list)
    pending: dict[str, list[float]] = defaultdict(list)
    all_started: list[float] = []
    all_pending: list[float] = []
    now_t = from_epoch(now)
    since_t = None if since is None else from_epoch(since)
    waiting = JobState.PENDING
    # One pass over what may be a million jobs: the window test and the wait (Job.wait_s) inline.
    for job in snapshot.jobs if jobs is None else jobs:
        start = job.start_time
        queued = job.eligible_time or job.submit_time
        if start is not None:
            if since_t is not None and start < since_t:
                continue
            wait = (start - queued).total_seconds()
            started[job.job_class].append(wait if wait > 0 else 0.0)
        elif job.state is waiting:
            wait = (now_t - queued).total_seconds()
            pending[job.job_class].append(wait if wait > 0 else 0.0)
    classes: dict[str, WaitStats] = {}
    names = set(started) | set(pending) | {c.name for c in snapshot.classes}
    for name in names:
        target = policy.resolve_class(snapshot.job_class(name), name).target_p95_s
        s, p = started.get(name, []), pending.get(name, [])
        all_started.extend(s)
        all_pending.extend(p)
        classes[name] = wait_stats(s, p, target)
    overall = wait_stats(all_started, all_pending, None)
    return SlaReport(since=since, overall=overall, classes=classes)


def class_verdict(stats: WaitStats) -> str:
    """``breach``; ``at_risk`` from `AT_RISK_SHARE` of the target on (pending jobs counted);
    ``ok``; or ``""`` for a class without a target."""
    target = stats.target_p95_s
    if target is None:
        return ""
    if stats.breach:
        return "breach"
    return "at_risk" if (stats.p95_incl_pending_s or 0.0) >= AT_RISK_SHARE * target else "ok"
