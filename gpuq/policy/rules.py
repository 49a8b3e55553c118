"""Per-job policy rules: effective priority, GPU-time lost, victim cost, protections.

Pure functions of (job, class, policy, now), shared by the victim search, the simulator and the
front ends so that every view computes the same numbers. Definitions: README "Policy model".
"""

from __future__ import annotations

import math
from enum import StrEnum

from gpuq.model import DAY_S, Job, JobClass, JobState
from gpuq.policy.config import Policy
from gpuq.timefmt import format_duration, format_time

__all__ = [
    "Reason",
    "checkpoint_interval",
    "effective_priority",
    "gpu_seconds_lost",
    "loss_start",
    "protection",
    "victim_cost",
]


class Reason(StrEnum):
    """Why a candidate victim was chosen or spared (machine-readable)."""

    CHOSEN = "chosen"
    EXEMPT = "exempt"
    MIN_RUNTIME = "min_runtime"
    CAP = "cap"
    DELTA = "delta"
    CLASS = "class"
    NOT_NEEDED = "not_needed"


def effective_priority(job: Job, cls: JobClass, policy: Policy, now: float) -> float:
    """Base priority plus aging past `max_wait`; manual urgency overrides.

    A pending job ages while it waits. A job that started keeps the aging it had earned when it
    started (its wait up to `start_time`): otherwise a job promoted by aging would drop back to its
    base priority the moment it took a GPU, and the job it displaced would at once preempt it back,
    over and over.
    """
    if job.urgent:
        return float(policy.urgent_priority)
    priority = float(job.priority)
    if cls.max_wait_s is not None:
        if job.state is JobState.PENDING:
            overdue = now - job.queued_since - cls.max_wait_s
        elif job.start_time is not None:
            overdue = job.start_time - job.queued_since - cls.max_wait_s
        else:
            return priority
        if overdue > 0:
            priority += policy.aging_rate(cls.name) * overdue / 60.0
    return priority


def checkpoint_interval(job: Job, policy: Policy) -> float:
    """The job's own checkpoint interval when known, else the policy default (0 = none)."""
    if job.checkpoint_interval_s is not None:
        return job.checkpoint_interval_s
    return policy.default_checkpoint_interval_s


def gpu_seconds_lost(job: Job, policy: Policy, now: float) -> float:
    """GPU-seconds of progress lost if `job` were preempted at `now`."""
    if job.start_time is None:
        return 0.0
    ran = max(0.0, now - job.start_time)
    if job.last_checkpoint_time is not None:
        return job.gpus * max(0.0, now - max(job.start_time, job.last_checkpoint_time))
    interval = checkpoint_interval(job, policy)
    if interval > 0:
        return job.gpus * (ran % interval)
    return job.gpus * ran


def loss_start(job: Job, policy: Policy) -> float:
    """From when `gpu_seconds_lost` counts a preemption's loss: the later of the job's start and
    last checkpoint; +inf when nothing can be said for sure (not started, or a checkpoint interval
    makes the loss `ran mod interval`, anything down to 0). For every `now`:
    `gpu_seconds_lost(job, policy, now) >= job.gpus * max(0, now - loss_start(job, policy))`.
    Depends on the policy only through whether its default checkpoint interval is positive."""
    if job.start_time is None:
        return math.inf
    if job.last_checkpoint_time is not None:
        return max(job.start_time, job.last_checkpoint_time)
    if checkpoint_interval(job, policy) > 0:
        return math.inf
    return job.start_time


def victim_cost(job: Job, cls: JobClass, policy: Policy, now: float) -> float:
    cost = policy.lost_work_weight * gpu_seconds_lost(job, policy, now)
    if policy.priority_weight:
        cost += policy.priority_weight * effective_priority(job, cls, policy, now)
    return cost


def protection(
    victim: Job, cls: JobClass, preemptor_priority: float, policy: Policy, now: float
) -> tuple[Reason, str] | None:
    """The first rule that protects `victim` from a preemptor of `preemptor_priority`, or None."""
    if victim.exempt_at(now):
        assert victim.exempt_until is not None
        return Reason.EXEMPT, f"exempt until {format_time(victim.exempt_until)}"
    if not cls.preemptible:
        return Reason.CLASS, f"class {cls.name} is not preemptible"
    if policy.min_runtime_s > 0 and victim.start_time is not None:
        ran = now - victim.start_time
        if ran < policy.min_runtime_s:
            return (
                Reason.MIN_RUNTIME,
                f"too young: ran {format_duration(ran)} < min_runtime {format_duration(policy.min_runtime_s)}",
            )
    cap = policy.max_preemptions_per_day
    if cap > 0:
        recent = victim.preemptions_since(now - DAY_S, now)
        if recent >= cap:
            return Reason.CAP, f"capped: preempted {recent}x in 24h (cap {cap})"
    victim_priority = effective_priority(victim, cls, policy, now)
    gap = preemptor_priority - victim_priority
    if gap <= policy.delta:
        return (
            Reason.DELTA,
            f"priority gap {gap:g} <= delta {policy.delta:g} (requester {preemptor_priority:g}, "
            f"job {victim_priority:g})",
        )
    return None
