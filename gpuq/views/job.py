"""One job: every field, its effective priority and wait, why it is pending in plain words, what
protects it, its preemption history and its audit entries."""

from __future__ import annotations

from datetime import datetime

import msgspec

from gpuq.audit import AuditAction
from gpuq.model import DAY_S, Job, JobClass, JobState, Snapshot
from gpuq.policy.config import Policy
from gpuq.policy.engine import Plan, class_of, plan_preemption, request_for_job
from gpuq.policy.order import queue_position
from gpuq.policy.queueplan import admission_block
from gpuq.policy.rules import Reason, effective_priority, gpu_seconds_lost, standing_protection
from gpuq.service import Cluster
from gpuq.timefmt import format_duration
from gpuq.views.audit import audit_actions_cached
from gpuq.views.changes import format_priority

__all__ = ["JobView", "job_view", "pending_reasons"]


class JobView(msgspec.Struct, frozen=True):
    cluster: str
    taken_at: datetime
    job: Job
    job_class: JobClass
    effective_priority: float
    wait_s: float | None
    preemptions: int
    preemptions_24h: int
    #: why the job is pending (or what it is), in sentences
    explanation: tuple[str, ...]
    #: what would stop even an urgent job from preempting it (running jobs), else None
    protection: tuple[Reason, str] | None
    #: GPU-seconds it would lose if preempted now (running jobs), else None
    gpu_seconds_lost_if_preempted: float | None
    policy_source: str
    #: the audit log's entries for this job, oldest first
    audit: tuple[AuditAction, ...] = ()


def pending_reasons(snapshot: Snapshot, policy: Policy, job: Job, now: float) -> tuple[list[str], Plan | None]:
    """Sentences explaining the job's state, and the preemption plan they were derived from."""
    if job.state is JobState.SUSPENDED:
        return [f"it is not pending: it is suspended, holding its GPUs; `gpuq resume {job.id}` runs it again"], None
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
        + f"; effective priority {format_priority(eff)} (base {job.priority})"
    )
    if job.reason:
        lines.append(f"the scheduler gives the reason: {job.reason}")
    held = admission_block(snapshot, job)  # (a queue manager's: Kueue's quota, flavor, borrowing)
    if held is not None:
        lines.append(held)
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
                f"{', '.join(plan.nodes)}, losing {plan.gpu_seconds_at_risk / 3600:.1f} GPU-hours"
            )
        else:
            lines.append(f"it cannot preempt anything: {plan.blocked}")
    lines.extend(plan.notes)
    return lines, plan


def job_view(cluster: Cluster, snapshot: Snapshot, job_id: str, *, with_audit: bool = False) -> JobView:
    """The job as the snapshot shows it (NotFound for an unknown id)."""
    job = cluster.job(job_id, snapshot)
    now = snapshot.now
    policy = cluster.policy
    cls = cluster.resolved_class(snapshot, job.job_class)
    explanation, _ = pending_reasons(snapshot, policy, job, now)
    if job.conflict:  # marked by a live backend (gpuq.model.placement)
        explanation.insert(0, f"its placement cannot last: {job.conflict}; previews leave it out")
    guard = lost = None
    if job.state is JobState.RUNNING:
        lost = gpu_seconds_lost(job, policy, now)
        guard = standing_protection(job, cls, policy, now)
    audit: tuple[AuditAction, ...] = ()
    if with_audit:
        # (cached until the log changes: the console asks again at every refresh)
        actions = audit_actions_cached(cluster.audit)
        audit = tuple(a for a in actions if str(a.record.get("target")) == job.id)
    return JobView(
        cluster=snapshot.cluster,
        taken_at=snapshot.taken_at,
        job=job,
        job_class=cls,
        effective_priority=effective_priority(job, cls, policy, now),
        wait_s=job.wait_s(now),
        preemptions=len(job.preemption_times),
        preemptions_24h=job.preemptions_since(now - DAY_S, now),
        explanation=tuple(explanation),
        protection=guard,
        gpu_seconds_lost_if_preempted=lost,
        policy_source=cluster.policy_source.source,
        audit=audit,
    )
