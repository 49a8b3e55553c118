"""The policy's rules on model jobs: effective priority (aging, manual urgency, the tenant's
urgent quota), GPU-time lost, victim cost, the protections (exemption, class, minimum runtime,
24 h cap, the cluster's own rules) and the Δ trigger. Definitions: README "Policy model".

Each rule is defined once, in the kernel (`gpuq.policy.kernel`, functions over plain numbers,
re-exported here); the functions below read a `Job`'s fields and call it, and give the reason a
protection holds in words.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from gpuq.model import Job, JobClass, JobState, Queue, QueuePolicy
from gpuq.policy.config import Policy
from gpuq.policy.kernel import (
    aged_priority,
    capped,
    effective_priority_of,
    exempt,
    gpu_seconds_lost_of,
    loss_start_of,
    outranks,
    over_urgent_quota,
    protected_until,
    recent_preemptions,
    requester_priority_of,
    time_protected,
    too_young,
    victim_cost_of,
)
from gpuq.timefmt import format_duration, format_time

__all__ = [
    "QueueStanding",
    "Reason",
    "aged_priority",
    "capped",
    "checkpoint_interval",
    "cluster_protection",
    "effective_priority",
    "effective_priority_of",
    "exempt",
    "gpu_seconds_lost",
    "gpu_seconds_lost_of",
    "loss_start",
    "loss_start_of",
    "outranks",
    "over_urgent_quota",
    "protected_until",
    "protection",
    "queue_protection",
    "recent_preemptions",
    "requester_priority_of",
    "standing_protection",
    "time_protected",
    "too_young",
    "victim_cost",
    "victim_cost_of",
]


class Reason(StrEnum):
    """Why a candidate victim was chosen or spared (machine-readable)."""

    CHOSEN = "chosen"
    EXEMPT = "exempt"
    MIN_RUNTIME = "min_runtime"
    CAP = "cap"
    DELTA = "delta"
    CLASS = "class"
    #: the cluster's own rules do not let this requester take it (`cluster_protection`)
    CLUSTER = "cluster"
    NOT_NEEDED = "not_needed"


# ---------------------------------------------------------------------------- on model jobs


def _waited(job: Job, now: float) -> float | None:
    # On epoch seconds, not timedeltas: the simulator computes the same differences of the same
    # floats (its clock ticks in whole microseconds, which datetimes hold exactly), so a priority
    # gap that its event loop finds exactly at Δ is exactly Δ here too.
    if job.state is JobState.PENDING:
        return now - job.queued_since.timestamp()
    if job.start_time is not None:
        return job.start_time.timestamp() - job.queued_since.timestamp()
    return None


def effective_priority(job: Job, cls: JobClass, policy: Policy, now: float) -> float:
    """`effective_priority_of` for a job of class `cls` (resolved with the policy)."""
    return effective_priority_of(
        float(job.priority),
        urgent=job.urgent,
        urgent_priority=float(policy.urgent_priority),
        waited_s=_waited(job, now) if cls.max_wait_s is not None else None,
        max_wait_s=cls.max_wait_s,
        rate_per_min=policy.aging_rate(cls.name),
    )


def checkpoint_interval(job: Job, policy: Policy) -> float:
    """The job's own checkpoint interval when known, else the policy default (0 = none)."""
    if job.checkpoint_interval_s is not None:
        return job.checkpoint_interval_s
    return policy.default_checkpoint_interval_s


def gpu_seconds_lost(job: Job, policy: Policy, now: float) -> float:
    """GPU-seconds of progress lost if `job` were preempted at `now` (counted from its last
    resume, `Job.loss_from`: a suspension keeps the run's progress)."""
    start = job.loss_from
    if start is None:
        return 0.0
    checkpoint = job.last_checkpoint_time
    return gpu_seconds_lost_of(
        job.gpus,
        start.timestamp(),
        None if checkpoint is None else checkpoint.timestamp(),
        checkpoint_interval(job, policy),
        now,
    )


def loss_start(job: Job, policy: Policy) -> float:
    """`loss_start_of` for a job (+inf when it has not started). Depends on the policy only
    through whether its default checkpoint interval is positive."""
    start = job.loss_from
    if start is None:
        return math.inf
    checkpoint = job.last_checkpoint_time
    return loss_start_of(
        start.timestamp(), None if checkpoint is None else checkpoint.timestamp(),
        checkpoint_interval(job, policy),
    )  # fmt: skip


def victim_cost(job: Job, cls: JobClass, policy: Policy, now: float) -> float:
    priority = effective_priority(job, cls, policy, now) if policy.priority_weight else 0.0
    return victim_cost_of(gpu_seconds_lost(job, policy, now), priority, policy.lost_work_weight, policy.priority_weight)


def standing_protection(victim: Job, cls: JobClass, policy: Policy, now: float) -> tuple[Reason, str] | None:
    """The first rule that protects `victim` from any preemptor, however urgent: exemption, a
    class that is not preemptible, the minimum runtime, the 24 h cap; None when none does."""
    if victim.exempt_until is not None and exempt(victim.exempt_until.timestamp(), now):
        return Reason.EXEMPT, f"exempt until {format_time(victim.exempt_until)}"
    if not cls.preemptible:
        return Reason.CLASS, f"class {cls.name} is not preemptible"
    origin = victim.run_origin()
    if origin is not None:
        ran = now - origin  # (run time: time suspended does not count)
        if too_young(ran, policy.min_runtime_s):
            return (
                Reason.MIN_RUNTIME,
                f"too young: ran {format_duration(ran)} < min_runtime {format_duration(policy.min_runtime_s)}",
            )
    cap = policy.max_preemptions_per_day
    if cap > 0:
        recent = recent_preemptions((t.timestamp() for t in victim.preemption_times), now)
        if capped(recent, cap):
            return Reason.CAP, f"capped: preempted {recent}x in 24h (cap {cap})"
    return None


@dataclass(frozen=True, slots=True)
class QueueStanding:
    """A requester's place under its queue manager: the queue it waits in (`Job.queue`), its
    priority there, and the cohort of every queue of the snapshot (`Snapshot.queues`)."""

    queue: Queue
    priority: float
    cohorts: Mapping[str, str | None]


#: Kueue's own words for each policy (what its ClusterQueue spec says)
_KUEUE_WORDS = {
    QueuePolicy.NEVER: "Never",
    QueuePolicy.LOWER_PRIORITY: "LowerPriority",
    QueuePolicy.LOWER_OR_NEWER_EQUAL_PRIORITY: "LowerOrNewerEqualPriority",
    QueuePolicy.ANY: "Any",
}


def queue_protection(victim: Job, standing: QueueStanding) -> tuple[Reason, str] | None:
    """What keeps the queue manager (Kueue) from preempting `victim`, a job it admitted, for a
    requester of `standing`: a job of the same queue only as ``withinClusterQueue`` allows, one
    of another queue of the same cohort only as ``reclaimWithinCohort`` allows, none elsewhere.
    Priorities are the queue manager's (Kueue: the Workloads' ``spec.priority``), not gpuq's
    effective ones; None when it could take the victim."""
    queue = standing.queue
    where = victim.queue
    if where is None:
        return Reason.CLUSTER, f"its ClusterQueue is unknown, so Kueue's ClusterQueue {queue.name} may not take it"
    if where == queue.name:
        policy, field = queue.within_queue, "withinClusterQueue"
    elif queue.cohort is not None and standing.cohorts.get(where) == queue.cohort:
        policy, field = queue.reclaim_within_cohort, "reclaimWithinCohort"
    else:
        return Reason.CLUSTER, (f"in Kueue ClusterQueue {where}, outside ClusterQueue {queue.name}"
                                + (f"'s cohort {queue.cohort}" if queue.cohort else " (no cohort)")
                                + ": Kueue preempts only within the queue or its cohort")  # fmt: skip
    rule = f"Kueue's ClusterQueue {queue.name} ({field}: {_KUEUE_WORDS[policy]})"
    if policy is QueuePolicy.ANY:
        return None
    if policy is QueuePolicy.NEVER:
        return Reason.CLUSTER, f"{rule} lets its workloads preempt none " + (
            "in the same queue" if where == queue.name else "in the rest of its cohort")
    mine = standing.priority
    theirs = victim.queue_priority if victim.queue_priority is not None else victim.priority
    if mine > theirs:
        return None
    gap = f"Workload priority {theirs} against the requester's {mine:g}"
    if policy is QueuePolicy.LOWER_OR_NEWER_EQUAL_PRIORITY and mine == theirs:
        return Reason.CLUSTER, (f"{rule}: {gap}, equal; Kueue takes an equal one only if it is newer, "
                                "which gpuq does not judge")  # fmt: skip
    return Reason.CLUSTER, f"{rule} preempts only lower-priority workloads: {gap}"


def cluster_protection(
    victim: Job, requester: JobClass, admitted_by: str | None, queue: QueueStanding | None = None
) -> tuple[Reason, str] | None:
    """What keeps the cluster itself from preempting `victim` for a requester of class
    `requester` (admitted by `admitted_by`, waiting in `queue`), whatever gpuq's policy says: a
    queue manager (Kueue) preempts only jobs it admitted, and only as the requester's queue allows
    (`queue_protection`), and a class preempts only the classes the cluster lets it
    (`JobClass.may_take`). None when the cluster could take it."""
    if admitted_by is not None and victim.admitted_by != admitted_by:
        return Reason.CLUSTER, f"not admitted by {admitted_by}, which preempts only jobs it admitted"
    if queue is not None:
        found = queue_protection(victim, queue)
        if found is not None:
            return found
    allowed = requester.may_preempt
    if isinstance(allowed, tuple) and victim.job_class not in allowed:
        if not allowed:
            return Reason.CLUSTER, f"the cluster lets class {requester.name} preempt no job"
        return Reason.CLUSTER, (f"the cluster lets class {requester.name} preempt only "
                                f"{', '.join(sorted(allowed))}, not {victim.job_class}")  # fmt: skip
    return None


def protection(
    victim: Job,
    cls: JobClass,
    preemptor_priority: float,
    policy: Policy,
    now: float,
    *,
    requester: JobClass | None = None,
    admitted_by: str | None = None,
    queue: QueueStanding | None = None,
) -> tuple[Reason, str] | None:
    """The first rule that protects `victim` from a preemptor of `preemptor_priority`, or None:
    a standing protection, the cluster's own rules for a requester of class `requester`
    (`cluster_protection`), else the Δ trigger."""
    standing = standing_protection(victim, cls, policy, now)
    if standing is not None:
        return standing
    if requester is not None:
        native = cluster_protection(victim, requester, admitted_by, queue)
        if native is not None:
            return native
    victim_priority = effective_priority(victim, cls, policy, now)
    if not outranks(preemptor_priority, victim_priority, policy.delta):
        gap = preemptor_priority - victim_priority
        return (
            Reason.DELTA,
            f"priority gap {gap:g} <= delta {policy.delta:g} (requester {preemptor_priority:g}, "
            f"job {victim_priority:g})",
        )
    return None
