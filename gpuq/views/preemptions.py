"""The preemption ledger: who was preempted how often (24 h and in all), and the event log."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from gpuq.model import DAY_S, Job, PreemptionEvent, Snapshot, job_id_key

__all__ = ["LedgerEvent", "LedgerRow", "LedgerView", "ledger_view", "preemption_events"]


@dataclass(frozen=True, slots=True)
class LedgerEvent:
    """One preemption; `gpu_seconds_lost` and `mode` are None where the backend does not say."""

    time: datetime
    victim: str
    preemptor: str | None
    gpus: int
    gpu_seconds_lost: float | None
    mode: str | None
    reason: str


@dataclass(frozen=True, slots=True)
class LedgerRow:
    job: Job
    total: int
    last_24h: int
    last: datetime
    #: seconds since the last preemption, at the snapshot's instant
    since_last_s: float


@dataclass(frozen=True, slots=True)
class LedgerView:
    cluster: str
    taken_at: datetime
    #: jobs preempted at least once, most preempted in the last 24 h first
    jobs: list[LedgerRow]
    #: every known preemption, newest first (`preemption_events`)
    events: list[LedgerEvent]


def _event(e: PreemptionEvent) -> LedgerEvent:
    return LedgerEvent(e.time, e.victim, e.preemptor, e.gpus, e.gpu_seconds_lost, e.mode, e.reason)


def preemption_events(snapshot: Snapshot) -> list[LedgerEvent]:
    """Every preemption event, newest first. When the backend records only per-job times, the
    events are derived from those (preemptor, loss and mode then unknown)."""
    if snapshot.preemption_events:
        events = [_event(e) for e in snapshot.preemption_events]
    else:
        events = [LedgerEvent(t, j.id, None, j.gpus, None, None, "") for j in snapshot.jobs for t in j.preemption_times]
    events.sort(key=lambda e: (-e.time.timestamp(), job_id_key(e.victim)))
    return events


def ledger_view(snapshot: Snapshot, *, limit: int | None = None) -> LedgerView:
    """The ledger at the snapshot's instant; `limit` caps the events (not the jobs)."""
    now = snapshot.now
    rows = []
    for job in snapshot.jobs:
        if job.preemption_times:
            last = max(job.preemption_times)
            rows.append(LedgerRow(job, len(job.preemption_times), job.preemptions_since(now - DAY_S, now), last,
                                  now - last.timestamp()))  # fmt: skip
    rows.sort(key=lambda r: (-r.last_24h, -r.total, job_id_key(r.job.id)))
    events = preemption_events(snapshot)
    if limit is not None:
        events = events[:limit]
    return LedgerView(snapshot.cluster, snapshot.taken_at, rows, events)
