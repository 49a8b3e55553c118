"""Operator actions on the simulated cluster: bump, exempt, preempt, resume, and their dry runs.

Each returns (before, after) as the demo backend reports them; a dry run computes `after` with
the very code that applies it (a preemption's effect: `jobs.preemption`) and changes nothing.

An operator's suspension holds the job's GPUs until `resume` (the scheduler's own suspend-mode
preemptions lend them to the preemptor instead); that hold and its release are made here, on the
simulator's public primitives. A bump may carry the plan its preview showed the operator
(`Planned`): when the bumped job is then the head of the queue and those victims may still be
preempted for it and make room on those nodes, exactly that plan is carried out; else the
scheduler decides as always. `bump_reported` also says whom it preempted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from gpuq.errors import Refused, no_job
from gpuq.policy.config import Mode
from gpuq.sim import stops
from gpuq.sim.convert import Why, for_job
from gpuq.sim.jobs import (
    CANCELLED,
    COMPLETED,
    FUTURE,
    PENDING,
    RUNNING,
    SUSPENDED,
    SimJob,
    on_grid,
    preemption,
    stopped_progress,
)
from gpuq.sim.preempting import start_with
from gpuq.sim.victims import Choice, holding, scan
from gpuq.timefmt import format_time

if TYPE_CHECKING:
    from gpuq.sim.simulator import Simulator

__all__ = ["HOLD_WHY", "Planned", "bump", "bump_reported", "exempt", "preempt", "resume", "visible"]

#: A preview's plan: the victims (id -> nodes they hold) and the nodes the job would start on.
Planned = tuple[Mapping[str, Sequence[str]], Sequence[str]]
#: The preemption log's reason for an operator's suspension.
HOLD_WHY = "suspended by an operator: holds its GPUs until resumed"
#: ... and for a victim of a bump's previewed plan.
_PLANNED_WHY = "chosen as the bump's preview showed"


def visible(sim: Simulator, job_id: str) -> SimJob:
    """A submitted job, still live or in the recent history (NotFound for unknown ids)."""
    job = _submitted(sim, job_id)
    if job is None:
        raise no_job(job_id, sim.name, lambda other: _submitted(sim, other) is not None)
    return job


def _submitted(sim: Simulator, job_id: str) -> SimJob | None:
    job = sim.jobs.get(job_id)
    if job is not None and job.state != FUTURE:
        return job
    for old in sim.history:
        if old.id == job_id:
            return old
    return None


def _live(sim: Simulator, job_id: str, action: str) -> SimJob:
    job = visible(sim, job_id)
    if job.state in (COMPLETED, CANCELLED):
        raise Refused(f"job {job_id} has already ended ({job.state}); there is nothing to {action}")
    return job


def bump(
    sim: Simulator, job_id: str, *, priority: int | None = None, urgent: bool = False, dry_run: bool = False,
    planned: Planned | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:  # fmt: skip
    """Set the base priority (which also clears manual urgency) and/or mark the job urgent;
    `planned`: the plan the operator was shown, carried out when still valid."""
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
    sim.changed(job, reconsider=planned is None)
    if planned is not None:
        _carry_out(sim, job, planned)
        sim.reconsider()
    return before, after


def bump_reported(
    sim: Simulator, job_id: str, *, priority: int | None = None, urgent: bool = False, planned: Planned | None = None
) -> tuple[dict[str, Any], dict[str, Any], dict[str, tuple[str, ...]]]:
    """`bump` (carrying out `planned` when still valid), and the jobs preempted for the bumped
    job as it took effect, with the nodes they held."""
    holding = {j.id: tuple(sorted(j.alloc)) for j in sim.running.values()}
    count = sim.preemptions
    before, after = bump(sim, job_id, priority=priority, urgent=urgent, planned=planned)
    new = sim.preemptions - count
    log = list(sim.preemption_log)[-new:] if new > 0 else []
    preempted = {victim: holding.get(victim, ()) for _, victim, by, *_ in log if by == job_id}
    return before, after, preempted


def _carry_out(sim: Simulator, job: SimJob, planned: Planned) -> bool:
    """Carry out a bumped job's previewed plan if it still holds (see the module docstring);
    True when the job started on it."""
    victims, nodes = planned
    now = sim.now
    if not victims or job.state not in (PENDING, SUSPENDED) or job.id not in sim.queue.jobs or job.claim:
        return False
    if sim.queue.best(now) is not job or sim.gpus.place(job.gpus) is not None:
        return False  # another job goes first, or it fits now: the scheduler decides as always
    rules = sim.rules
    head_ep = rules.requester_priority(job, now, holding(sim))
    allowed = {v.id for v in scan(sim, job, head_ep, now)[0]}
    if not set(victims) <= allowed:
        return False  # protected by now (an exemption, the Δ gap), or no longer running
    gpus = sim.gpus
    free = list(gpus.free_n)
    for victim in victims:
        for i, n in sim.running[victim].place:
            free[i] += n
    on = [gpus.index[n] for n in nodes if n in gpus.index]
    room = max((free[i] for i in on), default=0) if job.gpus <= gpus.per_node else sum(free[i] for i in on)
    if room < job.gpus:
        return False
    why: Why = for_job(job.id, _PLANNED_WHY)
    choice: Choice = ([(sim.running[v], why) for v in victims], tuple(nodes))
    return start_with(sim, job, choice)


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
    if mode is Mode.SUSPEND:  # paused in place: it keeps its GPUs until resumed
        held = {"state": SUSPENDED, "allocation": allocation, "preemptions": len(job.preempt_times) + 1,
                "gpu_seconds_lost": 0.0}  # fmt: skip
        if not dry_run:
            _hold(sim, job, HOLD_WHY)
            sim.reconsider()
        return before, held
    rules = sim.rules
    effect = preemption(job, mode, sim.now, rules.grace, rules.default_ckpt)
    after: dict[str, Any] = {"state": effect.state, "allocation": allocation if effect.state == RUNNING else {},
                             "preemptions": len(job.preempt_times) + 1, "gpu_seconds_lost": effect.lost}  # fmt: skip
    if effect.grace_until is not None:
        after["grace_until"] = effect.grace_until
    if not dry_run:
        stops.preempt_now(sim, job, mode, None, f"preempted by an operator ({mode.value})")
        sim.reconsider()
    return before, after


def resume(sim: Simulator, job_id: str, *, dry_run: bool = False) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run a job an operator suspended again, on the GPUs it kept."""
    job = visible(sim, job_id)
    if job.id not in sim.held:
        if job.state == SUSPENDED:
            raise Refused(f"job {job_id} was suspended by the scheduler and waits in the queue with its progress "
                          "kept: it resumes when it is scheduled")  # fmt: skip
        raise Refused(f"job {job_id} is {job.state}, not suspended: nothing to resume")
    allocation = {n: list(i) for n, i in job.alloc.items()}
    before = {"state": SUSPENDED, "allocation": allocation}
    after = {"state": RUNNING, "allocation": allocation}
    if not dry_run:
        _unhold(sim, job)
        sim.reconsider()
    return before, after


def _hold(sim: Simulator, job: SimJob, why: str) -> None:
    """An operator's suspension of a running job: it stops with all its progress kept and, out
    of the queue, holds its GPUs (`Simulator.held`: nobody else may use them) until `_unhold`."""
    now = sim.now
    job.last_ckpt = job.last_checkpoint(now)
    if job.save_s != 0.0 or job.restore_s != 0.0:  # (checkpoint costs: only the work is progress)
        kept, overhead, lost = stopped_progress(job, now, final_save=False)
        job.done += kept
        job.lost_s += lost
        sim.lost_gpu_s += lost
        job.overhead_s += job.gpus * overhead
        sim.overhead_gpu_s += job.gpus * overhead
    else:
        job.done += now - job.run_start  # type: ignore[operator]
    job.preempt_times = (*job.preempt_times, now)
    sim.preemptions += 1
    if sim.trace is not None:
        sim.trace.append((now, "preempt", job.id, None))
    stops.close_run(sim, job)
    job.state = SUSPENDED
    sim.held[job.id] = now
    sim.preemption_log.append((now, job.id, None, job.gpus, 0.0, Mode.SUSPEND, why))


def _unhold(sim: Simulator, job: SimJob) -> None:
    """Run a job `_hold` suspended again, on the GPUs it kept."""
    now = sim.now
    since = sim.held.pop(job.id)
    job.susp += now - since  # (neither run time nor queue wait: the run keeps its start)
    used = job.gpus * (now - since)  # the GPUs were held meanwhile
    job.gpu_s += used
    sim.closed_gpu_s += used
    job.place = tuple((sim.gpus.index[node], len(idx)) for node, idx in job.alloc.items())
    sim.set_running(job)
