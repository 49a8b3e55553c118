"""How a run ends: it finishes, drains after a graceful preemption, or is preempted now; and
what each of those leaves (GPUs freed, the run's accounting, the job retired or queued again).

Functions on the `Simulator` (its event loop calls `finish` and `drained`; a preemption, the
scheduler's or an operator's, calls `preempt_now`); what a preemption does to a job is
`jobs.preemption`'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpuq.policy.config import Mode
from gpuq.sim.convert import Why
from gpuq.sim.events import DRAIN
from gpuq.sim.jobs import CANCELLED, COMPLETED, NO_GPUS, PENDING, SimJob, preemption, stopped_progress

if TYPE_CHECKING:
    from gpuq.sim.simulator import Simulator

__all__ = ["add_overhead", "close_run", "drained", "finish", "preempt_now", "release", "requeue", "retire"]


def release(sim: Simulator, job: SimJob) -> None:
    """Free a job's GPUs and close its run."""
    sim.gpus.release(job.alloc)
    job.alloc = NO_GPUS
    close_run(sim, job)


def close_run(sim: Simulator, job: SimJob) -> None:
    """Close a job's run; its GPUs stay as they are (`release` frees them)."""
    start = job.run_start
    assert start is not None  # (a run has its start; compiled, the float is then subtracted as such)
    used = job.gpus * (sim.now - start)
    job.gpu_s += used
    sim.closed_gpu_s += used
    sim.victims.remove(job)
    job.drain_until = None
    job.epoch += 1
    job.hver += 1
    del sim.running[job.id]
    if sim.mcache:  # (filled only when the engine plans)
        sim.mcache.pop(job.id, None)
    if job.ckpt is not None:
        sim.ckpt_running -= 1
    for i, _ in job.place:
        del sim.on_node[i][job]
        sim.freed.add(i)
    if job.urgent:
        # Its tenant's urgent GPUs may fall (not when an operator holds it: then a look again
        # costs one decision): an urgent head of that tenant may be back within its quota, and
        # outrank jobs on any node, not only on those that freed up.
        sim.rver += 1
    if job.claimed_by is not None:
        claimant = sim.jobs.get(job.claimed_by)
        if claimant is not None and job.id in claimant.claim:
            claimant.claim = tuple([c for c in claimant.claim if c != job.id])
        job.claimed_by = None


def retire(sim: Simulator, job: SimJob, state: str) -> None:
    job.state = state
    job.end = sim.now
    del sim.jobs[job.id]
    sim.history.append(job)
    if sim.retired is not None:
        sim.retired.add(job)
    if sim.on_retire is not None:
        sim.on_retire(job)


def add_overhead(sim: Simulator, job: SimJob, seconds: float) -> None:
    """Count a closed run's checkpoint overhead (saves and restore)."""
    if seconds:
        used = job.gpus * seconds
        job.overhead_s += used
        sim.overhead_gpu_s += used


def finish(sim: Simulator, job: SimJob) -> None:
    job.last_ckpt = job.last_checkpoint(sim.now)
    if job.save_s != 0.0 or job.restore_s != 0.0:
        add_overhead(sim, job, job.progress(sim.now)[1])
    release(sim, job)
    job.done = job.duration
    if sim.observer is not None:
        sim.observer("finish", job, None)
    retire(sim, job, COMPLETED)
    if sim.trace is not None:
        sim.trace.append((sim.now, "finish", job.id, None))


def requeue(sim: Simulator, job: SimJob, state: str = PENDING) -> None:
    job.state = state
    job.qs = sim.now  # waiting again from now (Slurm resets eligibility on requeue too)
    sim.enqueue(job)


def drained(sim: Simulator, job: SimJob) -> None:
    """End of a graceful preemption's grace period: the job saved everything, then stops
    (with checkpoint costs, that last save takes a save's time out of its last work)."""
    if job.save_s != 0.0 or job.restore_s != 0.0:
        kept, overhead, lost = stopped_progress(job, sim.now, final_save=True)
        job.done += kept
        job.lost_s += lost
        sim.lost_gpu_s += lost
        add_overhead(sim, job, overhead)
    else:
        job.done += sim.now - job.run_start  # type: ignore[operator]
    if job.ckpt is not None:
        job.last_ckpt = sim.now
    release(sim, job)
    if sim.observer is not None:
        sim.observer("drain", job, None)
    requeue(sim, job)


def preempt_now(sim: Simulator, job: SimJob, mode: Mode, by: SimJob | None, why: Why) -> float:
    """Preempt a running job now as `jobs.preemption` says; returns the GPU-seconds of work
    lost. `why` as logged: a sentence, or the chosen cost of a policy preemption."""
    now = sim.now
    rules = sim.rules
    effect = preemption(job, mode, now, rules.grace, rules.default_ckpt)
    job.preempt_times = (*job.preempt_times, now)
    sim.preemptions += 1
    if sim.trace is not None:
        sim.trace.append((now, "preempt", job.id, by.id if by else None))
    if effect.grace_until is None:  # (booked before the observer hears of it: its log carries the loss)
        job.lost_s += effect.lost
        sim.lost_gpu_s += effect.lost
    if sim.observer is not None:
        sim.observer("preempt", job, by)
    if effect.grace_until is not None:
        # Signalled now; it keeps its GPUs while it saves, then is requeued without loss.
        job.drain_until = effect.grace_until
        job.hver += 1
        sim.victims.remove(job)
        sim.rver += 1
        sim.push(effect.grace_until, DRAIN, job, job.epoch)
        if by is not None:
            job.claimed_by = by.id
            by.claim = (*by.claim, job.id)
    else:
        job.done += effect.kept
        if effect.checkpoint is not None:
            job.last_ckpt = effect.checkpoint
        if effect.overhead:
            add_overhead(sim, job, effect.overhead)
        release(sim, job)
        if effect.state == CANCELLED:
            if sim.observer is not None:
                sim.observer("cancel", job, by)
            retire(sim, job, CANCELLED)
        else:
            requeue(sim, job, effect.state)
    sim.preemption_log.append((now, job.id, None if by is None else by.id, job.gpus, effect.lost, mode, why))
    return effect.lost
