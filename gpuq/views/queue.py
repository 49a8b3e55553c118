"""The queue: one row per job with its wait, effective priority, preemption counts and SLA status."""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any, NamedTuple

from gpuq.errors import BadInput
from gpuq.model import DAY_S, QUEUED_STATES, Job, JobClass, JobState, Snapshot, job_id_key
from gpuq.policy.rules import effective_priority
from gpuq.service import Cluster

__all__ = [
    "SORT_KEYS",
    "STATE_NAMES",
    "QueueFilter",
    "QueueRow",
    "QueueView",
    "SlaStatus",
    "parse_states",
    "queue_view",
    "sla_status",
]

STATE_NAMES = tuple(s.value for s in JobState)
#: A wait past this share of its class's P95 target puts the job at risk of breaching it.
AT_RISK_SHARE = 0.8


class SlaStatus(StrEnum):
    """How a job's wait stands against its class's P95 target."""

    OK = "ok"
    AT_RISK = "at_risk"
    BREACH = "breach"
    NONE = "none"  # the class has no target, or the job never waited


def sla_status(wait_s: float | None, target_p95_s: float | None) -> SlaStatus:
    if wait_s is None or target_p95_s is None:
        return SlaStatus.NONE
    if wait_s > target_p95_s:
        return SlaStatus.BREACH
    if wait_s >= AT_RISK_SHARE * target_p95_s:
        return SlaStatus.AT_RISK
    return SlaStatus.OK


class QueueRow(NamedTuple):
    """A job with what every format shows beside it (a NamedTuple: 200,000 are built per call)."""

    job: Job
    wait_s: float | None
    effective_priority: float
    preemptions: int
    preemptions_24h: int
    sla: SlaStatus


@dataclass(frozen=True, slots=True)
class QueueFilter:
    users: frozenset[str] = frozenset()
    tenants: frozenset[str] = frozenset()
    classes: frozenset[str] = frozenset()
    #: None: every state
    states: frozenset[JobState] | None = QUEUED_STATES
    min_gpus: int = 0
    sort: str = "effective"
    reverse: bool = False

    @property
    def only_queued(self) -> bool:
        """Whether the rows are all queued jobs (no finished ones), which needs no ledger."""
        return self.states is not None and self.states <= QUEUED_STATES


@dataclass(frozen=True, slots=True)
class QueueView:
    cluster: str
    taken_at: datetime
    now: float
    rows: list[QueueRow]
    #: rows before a limit was applied
    total: int


def parse_states(values: Sequence[str]) -> frozenset[JobState] | None:
    """``--state`` values (comma lists allowed) -> states; none given: the queued ones; `all`: None."""
    names = [v.strip().lower() for value in values for v in value.split(",") if v.strip()]
    if not names:
        return QUEUED_STATES  # what is waiting or holding GPUs
    if "all" in names:
        return None
    unknown = [n for n in names if n not in STATE_NAMES]
    if unknown:
        raise BadInput(f"--state: unknown state {unknown[0]!r} (one of {', '.join(STATE_NAMES)}, or all)")
    return frozenset(JobState(n) for n in names)


def _submit(row: QueueRow) -> datetime:
    return row.job.submit_time


_effective = operator.itemgetter(2)

# Each key sorts in its natural direction (largest priority/wait first); --reverse flips it.
SORT_KEYS: dict[str, tuple[Callable[[QueueRow], Any], bool]] = {
    "effective": (lambda r: (r.effective_priority, -r.job.submit_time.timestamp()), True),
    "priority": (lambda r: (r.job.priority, -r.job.submit_time.timestamp()), True),
    "wait": (lambda r: r.wait_s if r.wait_s is not None else -1.0, True),
    "gpus": (lambda r: r.job.gpus, True),
    "submit": (lambda r: r.job.submit_time, False),
    "preemptions": (lambda r: (r.preemptions_24h, r.preemptions), True),
    "id": (lambda r: job_id_key(r.job.id), False),
    "user": (lambda r: (r.job.user, job_id_key(r.job.id)), False),
    "tenant": (lambda r: (r.job.tenant, job_id_key(r.job.id)), False),
    "class": (lambda r: (r.job.job_class, job_id_key(r.job.id)), False),
    "state": (lambda r: (STATE_NAMES.index(r.job.state.value), job_id_key(r.job.id)), False),
}


def sort_rows(rows: list[QueueRow], sort: str, reverse: bool) -> None:
    if sort == "effective":
        # Same order as the "effective" key, (effective desc, submit asc), in two stable passes on
        # plain values: no key tuple per row, which matters at 200,000 rows.
        rows.sort(key=_submit, reverse=reverse)
        rows.sort(key=_effective, reverse=not reverse)
        return
    try:
        key, descending = SORT_KEYS[sort]
    except KeyError:
        raise BadInput(f"--sort: unknown key {sort!r} (one of {', '.join(sorted(SORT_KEYS))})") from None
    rows.sort(key=key, reverse=descending != reverse)


def queue_rows(cluster: Cluster, snapshot: Snapshot, wanted: QueueFilter) -> list[QueueRow]:
    """Filtered, sorted rows with the derived fields every format shows."""
    policy = cluster.policy
    now = snapshot.now
    day_ago = now - DAY_S
    urgent_priority = float(policy.urgent_priority)
    users, tenants, classes, states = wanted.users, wanted.tenants, wanted.classes, wanted.states
    min_gpus = wanted.min_gpus
    filtered = bool(users or tenants or classes or min_gpus)
    rows: list[QueueRow] = []
    append = rows.append
    new_row = tuple.__new__  # (a NamedTuple's own constructor is a Python function: slower)
    # per class: (resolved class, max_wait, P95 target, its at-risk mark, aging rate)
    resolved: dict[str, tuple[JobClass, float | None, float | None, float, float]] = {}
    pending = JobState.PENDING
    ok, at_risk, breach, no_target = SlaStatus.OK, SlaStatus.AT_RISK, SlaStatus.BREACH, SlaStatus.NONE
    # This loop runs once per job, 200,000 times on a large cluster, so it keeps inline copies of
    # three rules: the wait (Job.wait_s), the effective priority of a pending or urgent job
    # (rules.effective_priority: aging on the same floats in the same order) and `sla_status`;
    # tests/policy/test_rule_copies.py checks them against the originals. A started job that had
    # earned aging asks the kernel itself.
    for job in snapshot.jobs:
        state = job.state
        if states is not None and state not in states:
            continue
        if filtered and (
            (users and job.user not in users) or (tenants and job.tenant not in tenants)
            or (classes and job.job_class not in classes) or job.gpus < min_gpus
        ):  # fmt: skip
            continue
        found = resolved.get(job.job_class)
        if found is None:
            cls = cluster.resolved_class(snapshot, job.job_class)
            target = cls.target_p95_s
            found = resolved[job.job_class] = (
                cls, cls.max_wait_s, target, AT_RISK_SHARE * target if target is not None else 0.0,
                policy.aging_rate(cls.name),
            )  # fmt: skip
        cls, max_wait, target, risk, rate = found
        since = job.eligible_time or job.submit_time
        start = job.start_time
        effective = urgent_priority if job.urgent else float(job.priority)
        if start is not None:
            wait: float | None = (start - since).total_seconds()
            if wait < 0:  # type: ignore[operator]
                wait = 0.0
            if max_wait is not None and not job.urgent and wait > max_wait:  # type: ignore[operator]
                effective = effective_priority(job, cls, policy, now)  # aging it had earned by its start
        elif state is pending:
            waited = now - since.timestamp()
            if max_wait is not None and not job.urgent:
                overdue = waited - max_wait
                if overdue > 0:
                    effective += rate * overdue / 60.0
            wait = waited if waited > 0 else 0.0
        else:
            wait = None
        times = job.preemption_times
        recent = sum(1 for t in times if day_ago < t.timestamp() <= now) if times else 0
        if target is None or wait is None:
            status = no_target
        else:
            status = breach if wait > target else at_risk if wait >= risk else ok
        append(new_row(QueueRow, (job, wait, effective, len(times), recent, status)))
    sort_rows(rows, wanted.sort, wanted.reverse)
    return rows


def queue_view(cluster: Cluster, snapshot: Snapshot, wanted: QueueFilter, *, limit: int | None = None) -> QueueView:
    """The rows `wanted` selects, the first `limit` of them (all when None or 0)."""
    rows = queue_rows(cluster, snapshot, wanted)
    total = len(rows)
    if limit:
        del rows[limit:]
    return QueueView(snapshot.cluster, snapshot.taken_at, snapshot.now, rows, total)
