"""The rule kernel: every rule of the policy model, once, as a function over plain numbers.

Aging, effective priority, the urgent quota, GPU-time lost, victim cost, the Δ trigger and the
time-limited protections (exemption, minimum runtime, 24 h cap), on epoch seconds, GPU counts and
priorities (README "Policy model"). Everything that applies a rule calls it here: the job-level
rules (`gpuq.policy.rules`, which read a `Job`'s fields), the policy engine, the views, and the
simulator's event loop, which asks some of them for every candidate victim.

This module is compiled with the simulator (setup.py, `gpuq._native`): a call from the compiled
loop is then a direct C call on unboxed floats, as cheap as the inline copies the loop used to
keep. So it keeps to plain loops (no generator
expressions: compiled, a loop is several times quicker).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from gpuq.model import DAY_S

__all__ = [
    "aged_priority",
    "aged_to",
    "aging_intercept",
    "capped",
    "effective_priority_of",
    "exempt",
    "gpu_seconds_lost_of",
    "loss_start_of",
    "outranks",
    "over_urgent_quota",
    "protected_until",
    "recent_preemptions",
    "requester_priority_of",
    "time_protected",
    "too_young",
    "victim_cost_of",
]


def aged_priority(priority: float, overdue_s: float, rate_per_min: float) -> float:
    """Aging: `rate_per_min` points per minute waited beyond the class's max_wait."""
    return priority + rate_per_min * overdue_s / 60.0 if overdue_s > 0 else priority


def aging_intercept(priority: float, aging_from: float, rate_per_min: float) -> float:
    """`aged_priority` as a line in time: from `aging_from` (queued since + max_wait) on, the
    priority at time t is this intercept plus `rate_per_min * t / 60`. Jobs that age at one rate
    keep the order of their intercepts (the simulator's queue keys its aging heaps on it)."""
    return priority - rate_per_min * aging_from / 60.0


def aged_to(priority: float, aging_from: float, rate_per_min: float, target: float) -> float:
    """When a priority aging at `rate_per_min` from `aging_from` reaches `target`: a straight
    line's moment, which floats may put a tick off (the caller settles the tick with the rule)."""
    return aging_from + (target - priority) * 60.0 / rate_per_min


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


def over_urgent_quota(quota: int, held: int, gpus: int) -> bool:
    """Would `gpus` more urgent GPUs take a tenant holding `held` past its quota (0 = unlimited)?"""
    return quota > 0 and held + gpus > quota


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
    count = 0
    for t in times:
        if since < t <= now:
            count += 1
    return count


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
    if exempt(exempt_until, now) or too_young(now - start, min_runtime_s):
        return True
    return cap > 0 and capped(recent_preemptions(preemption_times, now), cap)


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
    if exempt_until is not None and exempt(exempt_until, now):
        until = exempt_until
    if too_young(now - start, min_runtime_s):
        until = max(until, start + min_runtime_s)
    if cap > 0:
        since = now - DAY_S
        window = sorted([t for t in preemption_times if since < t <= now])
        if capped(len(window), cap):
            # protected until the oldest preemption that keeps it at the cap leaves the window
            until = max(until, window[len(window) - cap] + DAY_S)
    return until
