"""The policy's rules, each in one place: effective priority (aging, manual urgency, the tenant's
urgent quota), GPU-time lost, victim cost, the protections (exemption, class, minimum runtime,
24 h cap) and the Δ trigger. Definitions: README "Policy model".

The kernel is a set of functions over plain numbers (epoch seconds, GPU counts, priorities); the
policy engine, the simulator and the views all compute with it. The job-level functions below it
read a `Job`'s fields and call the kernel. Where a hot loop keeps an inline copy of a rule (the
engine's node bound, the simulator's event loop), a test compares that copy with the kernel over
generated inputs (tests/policy/test_rule_copies.py).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from enum import StrEnum

from gpuq.model import DAY_S, Job, JobClass, JobState
from gpuq.policy.config import Policy
from gpuq.timefmt import format_duration, format_time

__all__ = [
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


# ---------------------------------------------------------------------------- the kernel


def aged_priority(priority: float, overdue_s: float, rate_per_min: float) -> float:
    """Aging: `rate_per_min` points per minute waited beyond the class's max_wait."""
    return priority + rate_per_min * overdue_s / 60.0 if overdue_s > 0 else priority


def effective_priority_of(
    priority: float,
    *,
    urgent: bool,
    urgent_priority: float,
    waited_s: float | None,
    max_wait_s: float | None,
    rate_per_min: float,
) -> float:
    """Base priority plus aging past `max_wait_s`; manual urgency overrides.

    `waited_s`: a pending job's wait so far; a job that started, its wait up to the start (it
    keeps the aging it had earned: were it to drop back to its base priority on taking a GPU, the
    job it displaced would preempt it straight back, over and over); None when it never waited
    (not pending, never started).
    """
    if urgent:
        return urgent_priority
    if max_wait_s is None or waited_s is None:
        return priority
    return aged_priority(priority, waited_s - max_wait_s, rate_per_min)


def requester_priority_of(
    priority_without_urgency: float,
    *,
    urgent: bool,
    urgent_priority: float,
    quota: int,
    urgent_gpus_held: int,
    gpus: int,
) -> float:
    """A requester's priority: manual urgency counts only within its tenant's urgent quota."""
    if urgent and not over_urgent_quota(quota, urgent_gpus_held, gpus):
        return urgent_priority
    return priority_without_urgency


def over_urgent_quota(quota: int, held: int, gpus: int) -> bool:
    """Would `gpus` more urgent GPUs take a tenant holding `held` past its quota (0 = unlimited)?"""
    return quota > 0 and held + gpus > quota


def gpu_seconds_lost_of(gpus: int, start: float, checkpoint: float | None, interval: float, now: float) -> float:
    """GPU-seconds of progress lost if a job started at `start` were preempted at `now`: since
    its last checkpoint when it reports them; else, with a checkpoint interval, the run time
    modulo that interval; else all of its run time."""
    if checkpoint is not None:
        since = checkpoint if checkpoint > start else start
        return gpus * (now - since if now > since else 0.0)
    ran = now - start if now > start else 0.0
    if interval > 0:
        return gpus * (ran % interval)
    return gpus * ran


def loss_start_of(start: float, checkpoint: float | None, interval: float) -> float:
    """From when `gpu_seconds_lost_of` counts a preemption's loss: the later of the start and the
    last checkpoint; +inf when nothing can be said for sure (a checkpoint interval makes the loss
    `ran mod interval`, anything down to 0). For every `now`:
    ``gpu_seconds_lost_of(g, start, checkpoint, interval, now) >= g * max(0, now - loss_start_of(…))``."""
    if checkpoint is not None:
        return checkpoint if checkpoint > start else start
    if interval > 0:
        return math.inf
    return start


def victim_cost_of(lost_gpu_s: float, priority: float, lost_work_weight: float, priority_weight: float) -> float:
    """What preempting a victim costs: weighted lost work plus weighted effective priority."""
    cost = lost_work_weight * lost_gpu_s
    if priority_weight:
        cost += priority_weight * priority
    return cost


def outranks(requester_priority: float, victim_priority: float, delta: float) -> bool:
    """The Δ trigger: a requester may preempt only a victim it outranks by more than Δ."""
    return requester_priority - victim_priority > delta


def exempt(exempt_until: float | None, now: float) -> bool:
    return exempt_until is not None and exempt_until > now


def too_young(ran_s: float, min_runtime_s: float) -> bool:
    """Protected by the minimum runtime: ran less than `min_runtime_s` since its (re)start
    (run time: a suspension's time does not count)."""
    return min_runtime_s > 0 and ran_s < min_runtime_s


def recent_preemptions(times: Iterable[float], now: float) -> int:
    """Preemptions in the 24 hours up to `now`: times t with now - 24 h < t <= now."""
    since = now - DAY_S
    return sum(1 for t in times if since < t <= now)


def capped(recent: int, cap: int) -> bool:
    """Protected by the daily cap: preempted `cap` times in 24 h already (0 = no cap)."""
    return cap > 0 and recent >= cap


def time_protected(
    *,
    exempt_until: float | None,
    start: float,
    min_runtime_s: float,
    preemption_times: Iterable[float],
    cap: int,
    now: float,
) -> bool:
    """Whether a running job is protected at `now` by a protection that lapses with time alone
    (exemption, minimum runtime, 24 h cap): the standing protections other than its class.
    `start`: where its run's clock starts (`Job.run_origin`: time suspended is not run time)."""
    return (
        exempt(exempt_until, now)
        or too_young(now - start, min_runtime_s)
        or capped(recent_preemptions(preemption_times, now), cap)
    )


def protected_until(
    *,
    exempt_until: float | None,
    start: float,
    min_runtime_s: float,
    preemption_times: Iterable[float],
    cap: int,
    now: float,
) -> float:
    """When the time-limited protections of a running job (exemption, minimum runtime, 24 h cap)
    have all lapsed, as things stand at `now`; 0.0 when none protects it now. `start`: as for
    `time_protected`."""
    until = 0.0
    if exempt(exempt_until, now):
        until = exempt_until  # type: ignore[assignment]
    if too_young(now - start, min_runtime_s):
        until = max(until, start + min_runtime_s)
    if cap > 0:
        window = sorted(t for t in preemption_times if now - DAY_S < t <= now)
        if capped(len(window), cap):
            # protected until the oldest preemption that keeps it at the cap leaves the window
            until = max(until, window[len(window) - cap] + DAY_S)
    return until


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


def cluster_protection(victim: Job, requester: JobClass, admitted_by: str | None) -> tuple[Reason, str] | None:
    """What keeps the cluster itself from preempting `victim` for a requester of class
    `requester` (admitted by `admitted_by`), whatever gpuq's policy says: a queue manager (Kueue)
    preempts only jobs it admitted, and a class preempts only the classes the cluster lets it
    (`JobClass.may_take`). None when the cluster could take it."""
    if admitted_by is not None and victim.admitted_by != admitted_by:
        return Reason.CLUSTER, f"not admitted by {admitted_by}, which preempts only jobs it admitted"
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
) -> tuple[Reason, str] | None:
    """The first rule that protects `victim` from a preemptor of `preemptor_priority`, or None:
    a standing protection, the cluster's own rules for a requester of class `requester`
    (`cluster_protection`), else the Δ trigger."""
    standing = standing_protection(victim, cls, policy, now)
    if standing is not None:
        return standing
    if requester is not None:
        native = cluster_protection(victim, requester, admitted_by)
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
