"""The preemption ledger: who was preempted how often (24 h and in all), and the event log."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

import msgspec

from gpuq.model import DAY_S, QUEUED_STATES, Job, PreemptionEvent, Snapshot, job_id_key
from gpuq.policy.rules import capped
from gpuq.policy.thrash import Thrash, detect, limits_for
from gpuq.service import Cluster

__all__ = [
    "NEAR_CAP",
    "CapState",
    "LedgerEvent",
    "LedgerRow",
    "LedgerTotal",
    "LedgerTotals",
    "LedgerView",
    "cap_state",
    "daily_cap",
    "job_preemptions",
    "ledger_thrash",
    "ledger_totals",
    "ledger_view",
    "near_cap",
    "preemption_events",
]

#: a job this many preemptions (or fewer) from the daily cap is "near" it
NEAR_CAP = 1


class LedgerEvent(msgspec.Struct, frozen=True):
    """One preemption; `gpu_seconds_lost` and `mode` are None where the backend does not say."""

    time: datetime
    victim: str
    preemptor: str | None
    gpus: int
    gpu_seconds_lost: float | None
    mode: str | None
    reason: str


class LedgerRow(msgspec.Struct, frozen=True):
    job: Job
    total: int
    last_24h: int
    last: datetime
    #: seconds since the last preemption, at the snapshot's instant
    since_last_s: float


class LedgerView(msgspec.Struct, frozen=True):
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


# -- the daily cap ---------------------------------------------------------------------------


class CapState(msgspec.Struct, frozen=True):
    """A job against the policy's daily preemption cap (`max_preemptions_per_day`)."""

    #: the cap (0: the policy has none)
    cap: int
    last_24h: int
    #: preemptions left before the cap protects the job (0: capped now); None: no cap, or the job
    #: has left the queue (the cap no longer matters to it)
    left: int | None
    #: capped now, or within `NEAR_CAP` preemptions of it (queued jobs only)
    near: bool

    @property
    def capped(self) -> bool:
        return self.left == 0


def daily_cap(cluster: Cluster) -> int:
    """The cluster's daily preemption cap (0: none)."""
    return cluster.policy.max_preemptions_per_day


def cap_state(job: Job, cap: int, now: float, *, within: int = NEAR_CAP) -> CapState:
    """Where `job` stands against `cap` at `now` (the rule is `gpuq.policy.rules.capped`)."""
    recent = job.preemptions_since(now - DAY_S, now)
    if cap <= 0 or job.state not in QUEUED_STATES:
        return CapState(cap, recent, None, False)
    return CapState(cap, recent, max(0, cap - recent), capped(recent + within, cap))


def near_cap(cluster: Cluster, snapshot: Snapshot, *, within: int = NEAR_CAP) -> list[tuple[Job, CapState]]:
    """Queued jobs at their daily cap or within `within` preemptions of it, the capped first
    (then most preempted in 24 h, then by id); empty when the policy has no cap."""
    cap = daily_cap(cluster)
    if cap <= 0:
        return []
    now = snapshot.now
    found = []
    for job in snapshot.jobs:
        if job.preemption_times and job.state in QUEUED_STATES:
            state = cap_state(job, cap, now, within=within)
            if state.near:
                found.append((job, state))
    found.sort(key=lambda p: (p[1].left or 0, -p[1].last_24h, job_id_key(p[0].id)))
    return found


def ledger_thrash(cluster: Cluster, snapshot: Snapshot) -> Thrash:
    """The thrash guard (`gpuq.policy.thrash`) over the cluster's known preemptions, against its
    policy's protections (else gpuq's defaults'). The work done is not known from a ledger, so
    lost work is not judged; where the backend records only per-job times, pairs are not either."""
    events = ((e.time.timestamp(), e.victim, e.preemptor, e.gpu_seconds_lost or 0.0)
              for e in preemption_events(snapshot))  # fmt: skip
    return detect(events, limits_for(cluster.policy))


# -- totals and one job's history ------------------------------------------------------------


class LedgerTotal(msgspec.Struct, frozen=True):
    """Preemptions of one tenant's or one class's jobs."""

    name: str
    last_24h: int
    total: int
    #: its jobs preempted at least once
    jobs: int


class LedgerTotals(msgspec.Struct, frozen=True):
    #: most preempted in 24 h first (then in all, then by name)
    tenants: list[LedgerTotal]
    classes: list[LedgerTotal]


def _totals(rows: Iterable[LedgerRow], key: str) -> list[LedgerTotal]:
    sums: dict[str, list[int]] = {}
    for row in rows:
        name = row.job.tenant if key == "tenant" else row.job.job_class
        acc = sums.setdefault(name, [0, 0, 0])
        acc[0] += row.last_24h
        acc[1] += row.total
        acc[2] += 1
    totals = [LedgerTotal(name, a, b, c) for name, (a, b, c) in sums.items()]
    totals.sort(key=lambda t: (-t.last_24h, -t.total, t.name))
    return totals


def ledger_totals(rows: Iterable[LedgerRow]) -> LedgerTotals:
    """Per tenant and per class: preemptions in the last 24 h and in all (of `LedgerView.jobs`,
    of one cluster or of several together)."""
    rows = list(rows)
    return LedgerTotals(_totals(rows, "tenant"), _totals(rows, "class"))


def job_preemptions(snapshot: Snapshot, job_id: str) -> tuple[list[LedgerEvent], list[LedgerEvent]]:
    """One job's preemption history, newest first: the times it was preempted (a time the job
    records without an event, e.g. older than the backend's event log, with preemptor and loss
    unknown), and the jobs it preempted (known only where the backend records events)."""
    events = preemption_events(snapshot)
    victim = [e for e in events if e.victim == job_id]
    job = snapshot.job(job_id)
    if job is not None and len(victim) < len(job.preemption_times):
        known = {e.time for e in victim}
        victim += [LedgerEvent(t, job.id, None, job.gpus, None, None, "") for t in job.preemption_times
                   if t not in known]  # fmt: skip
        victim.sort(key=lambda e: -e.time.timestamp())
    return victim, [e for e in events if e.preemptor == job_id]
