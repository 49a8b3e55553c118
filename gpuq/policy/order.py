"""The order of the pending queue, defined once: the queue view, the overview, `gpuq job`'s "N
ahead" and the demo's incident rank jobs by it; the simulator's queue (`gpuq.sim.queue`) keeps the
same order in its own form.

Higher effective priority first; equal ones go to the earlier *tie time*, then gpuq's job-id order
(`job_id_key`, ascending). The tie time is the scheduler's: on Slurm (a snapshot whose `backend` is
"slurm") the submit time, as slurmctld's `_sort_job_queue` breaks ties (priority, submit time, job
id); elsewhere the time the job has been queued since (eligibility, else submission), as gpuq's
simulator orders its queue.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from datetime import datetime
from typing import Literal

from gpuq.model import Job, JobClass, JobIdKey, Snapshot, job_id_key
from gpuq.policy.config import Policy
from gpuq.policy.engine import class_of
from gpuq.policy.rules import effective_priority

__all__ = ["TieField", "pending_order", "queue_position", "tie_field", "tie_time"]

#: the `Job` field whose time breaks ties of effective priority
TieField = Literal["submit_time", "queued_since"]


def tie_field(snapshot: Snapshot) -> TieField:
    """Which time breaks ties in `snapshot`'s queue: Slurm's (submit time) on Slurm, gpuq's
    (queued since) elsewhere. A field name, so a hot loop can read it with `operator.attrgetter`."""
    return "submit_time" if snapshot.backend == "slurm" else "queued_since"


def tie_time(snapshot: Snapshot) -> Callable[[Job], datetime]:
    """A job's tie time in `snapshot` (`tie_field`)."""
    return operator.attrgetter(tie_field(snapshot))


def pending_order(snapshot: Snapshot, policy: Policy, now: float) -> Callable[[Job], tuple[float, datetime, JobIdKey]]:
    """Sort key of the pending queue (the module docstring): higher effective priority first, then
    the earlier tie time, then gpuq's job-id order."""
    classes: dict[str, JobClass] = {}
    tie = tie_time(snapshot)

    def key(j: Job) -> tuple[float, datetime, JobIdKey]:
        cls = classes.get(j.job_class) or classes.setdefault(j.job_class, class_of(snapshot, policy, j.job_class))
        return (-effective_priority(j, cls, policy, now), tie(j), job_id_key(j.id))

    return key


def queue_position(snapshot: Snapshot, policy: Policy, job: Job, now: float) -> int:
    """How many pending jobs are ahead of `job` in `pending_order`."""
    key = pending_order(snapshot, policy, now)
    mine = key(job)
    return sum(1 for j in snapshot.jobs if j.is_pending and j.id != job.id and key(j) < mine)
