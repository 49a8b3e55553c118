"""The order of the pending queue: the one the simulated scheduler starts jobs in."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from gpuq.model import Job, JobClass, JobIdKey, Snapshot, job_id_key
from gpuq.policy.config import Policy
from gpuq.policy.engine import class_of
from gpuq.policy.rules import effective_priority

__all__ = ["pending_order", "queue_position"]


def pending_order(
    snapshot: Snapshot, policy: Policy, now: float
) -> Callable[[Job], tuple[float, datetime, JobIdKey]]:
    """Sort key of the pending queue: higher effective priority first, then waiting longer, then
    gpuq's job-id order (the simulator's queue order)."""
    classes: dict[str, JobClass] = {}

    def key(j: Job) -> tuple[float, datetime, JobIdKey]:
        cls = classes.get(j.job_class) or classes.setdefault(j.job_class, class_of(snapshot, policy, j.job_class))
        return (-effective_priority(j, cls, policy, now), j.queued_since, job_id_key(j.id))

    return key


def queue_position(snapshot: Snapshot, policy: Policy, job: Job, now: float) -> int:
    """How many pending jobs are ahead of `job` in `pending_order`."""
    key = pending_order(snapshot, policy, now)
    mine = key(job)
    return sum(1 for j in snapshot.jobs if j.is_pending and j.id != job.id and key(j) < mine)
