"""Plain-words answers to "why is this job still pending?"."""

from __future__ import annotations

from collections.abc import Callable

from gpuq.model import Job, JobClass, JobState, Snapshot
from gpuq.policy.config import Policy
from gpuq.policy.engine import Plan, class_of, plan_preemption, request_for_job
from gpuq.policy.rules import effective_priority
from gpuq.timefmt import format_duration

__all__ = ["pending_order", "pending_reasons", "queue_position"]


def pending_order(snapshot: Snapshot, policy: Policy, now: float) -> Callable[[Job], tuple[float, float, str]]:
    """Sort key of the pending queue: higher effective priority first, then earlier, then id."""
    classes: dict[str, JobClass] = {}

    def key(j: Job) -> tuple[float, float, str]:
        cls = classes.get(j.job_class) or classes.setdefault(j.job_class, class_of(snapshot, policy, j.job_class))
        return (-effective_priority(j, cls, policy, now), j.queued_since, j.id)

    return key


def queue_position(snapshot: Snapshot, policy: Policy, job: Job, now: float) -> int:
    """How many pending jobs are ahead of `job` in `pending_order`."""
    key = pending_order(snapshot, policy, now)
    mine = key(job)
    return sum(1 for j in snapshot.jobs if j.is_pending and j.id != job.id and key(j) < mine)


def pending_reasons(snapshot: Snapshot, policy: Policy, job: Job, now: float) -> tuple[list[str], Plan | None]:
    """Sentences explaining the job's state, and the preemption plan they were derived from."""
    if job.state is not JobState.PENDING:
        return [f"it is not pending: it is {job.state.value}"], None
    cls = class_of(snapshot, policy, job.job_class)
    lines: list[str] = []
    wait = job.wait_s(now) or 0.0
    sla = []
    if cls.target_p95_s is not None:
        sla.append(f"target P95 {format_duration(cls.target_p95_s)}")
    if cls.max_wait_s is not None:
        overdue = wait - cls.max_wait_s
        sla.append(
            f"aging for {format_duration(overdue)} past max_wait {format_duration(cls.max_wait_s)}"
            if overdue > 0
            else f"aging starts after {format_duration(cls.max_wait_s)}"
        )
    eff = effective_priority(job, cls, policy, now)
    lines.append(
        f"waiting {format_duration(wait)} in class {cls.name}"
        + (f" ({', '.join(sla)})" if sla else "")
        + f"; effective priority {eff:g} (base {job.priority})"
    )
    if job.reason:
        lines.append(f"the scheduler gives the reason: {job.reason}")
    plan = plan_preemption(snapshot, policy, request_for_job(job), now)
    ahead = queue_position(snapshot, policy, job, now)
    if not plan.feasible:
        lines.append(f"it can never start here: it {plan.blocked}")
    elif plan.fits_without_preemption:
        then = (
            f"{ahead} higher-priority pending jobs are ahead of it"
            if ahead
            else "it should start at the next scheduling pass"
        )
        lines.append(f"{job.gpus} GPUs are free now on {', '.join(plan.nodes)}; {then}")
    else:
        lines.append(f"no free space for {job.gpus} GPUs" + (" on one node" if len(plan.nodes) <= 1 else ""))
        if ahead:
            lines.append(f"{ahead} pending jobs rank ahead of it")
        if plan.would_preempt:
            ids = ", ".join(v.job_id for v in plan.victims)
            lines.append(
                f"under gpuq's policy it could preempt {len(plan.victims)} job(s) ({ids}) on "
                f"{', '.join(plan.nodes)}, losing {sum(v.gpu_seconds_lost for v in plan.victims) / 3600:.1f} GPU-hours"
            )
        else:
            lines.append(f"it cannot preempt anything: {plan.blocked}")
    lines.extend(plan.notes)
    return lines, plan
