"""Operator actions on the simulated cluster: bump, exempt, preempt, and their dry runs.

Each returns (before, after) as the demo backend reports them; a dry run computes `after` with
the very code that applies it (a preemption's effect: `jobs.preemption`) and changes nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gpuq.errors import NotFound, Refused
from gpuq.policy.config import Mode
from gpuq.sim.jobs import CANCELLED, COMPLETED, FUTURE, RUNNING, SimJob, on_grid, preemption
from gpuq.timefmt import format_time

if TYPE_CHECKING:
    from gpuq.sim.simulator import Simulator

__all__ = ["bump", "exempt", "preempt", "visible"]


def visible(sim: Simulator, job_id: str) -> SimJob:
    """A submitted job, still live or in the recent history (NotFound for unknown ids)."""
    job = sim.jobs.get(job_id)
    if job is not None and job.state != FUTURE:
        return job
    for old in sim.history:
        if old.id == job_id:
            return old
    raise NotFound(f"no job {job_id} on cluster {sim.name}")


def _live(sim: Simulator, job_id: str, action: str) -> SimJob:
    job = visible(sim, job_id)
    if job.state in (COMPLETED, CANCELLED):
        raise Refused(f"job {job_id} has already ended ({job.state}); there is nothing to {action}")
    return job


def bump(
    sim: Simulator, job_id: str, *, priority: int | None = None, urgent: bool = False, dry_run: bool = False
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Set the base priority (which also clears manual urgency) and/or mark the job urgent."""
    if priority is None and not urgent:
        raise Refused("bump needs a new priority or --urgent")
    job = _live(sim, job_id, "bump")
    new_priority = job.priority if priority is None else priority
    new_urgent = urgent or (job.urgent and priority is None)
    before: dict[str, Any] = {"priority": job.priority, "urgent": job.urgent}
    after: dict[str, Any] = {"priority": new_priority, "urgent": new_urgent}
    if dry_run or after == before:
        return before, after
    job.priority = new_priority
    job.urgent = new_urgent
    sim.changed(job)
    return before, after


def exempt(
    sim: Simulator, job_id: str, *, until: float | None, dry_run: bool = False
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Protect a job from preemption until `until` (epoch s); None lifts the exemption."""
    until = None if until is None else on_grid(until)
    job = _live(sim, job_id, "exempt")
    if until is not None and until <= sim.now:
        raise Refused(
            f"exemption end {format_time(until)} is not in the future (cluster time {format_time(sim.now)})"
        )
    before = {"exempt_until": job.exempt_until}
    after = {"exempt_until": until}
    if not dry_run and after != before:
        job.exempt_until = until
        sim.changed(job)
    return before, after


def preempt(
    sim: Simulator, job_id: str, *, mode: Mode, dry_run: bool = False
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Preempt a running job now (an operator action: no preemptor, policy protections not applied)."""
    job = visible(sim, job_id)
    if job.state != RUNNING:
        raise Refused(f"job {job_id} is {job.state}, not running; only running jobs can be preempted")
    if job.drain_until is not None:
        raise Refused(f"job {job_id} is already being preempted (saving until {format_time(job.drain_until)})")
    allocation = {n: list(i) for n, i in job.alloc.items()}
    before = {"state": RUNNING, "allocation": allocation, "preemptions": len(job.preempt_times)}
    rules = sim.rules
    effect = preemption(job, mode, sim.now, rules.grace, rules.default_ckpt)
    after: dict[str, Any] = {"state": effect.state, "allocation": allocation if effect.state == RUNNING else {},
                             "preemptions": len(job.preempt_times) + 1, "gpu_seconds_lost": effect.lost}  # fmt: skip
    if effect.grace_until is not None:
        after["grace_until"] = effect.grace_until
    if not dry_run:
        sim.preempt_now(job, mode, None, f"preempted by an operator ({mode.value})")
        sim.reconsider()
    return before, after
