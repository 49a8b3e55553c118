"""The simulator's state as model objects: snapshots, and what the policy engine is asked on.

The simulator keeps its own float times, on the microsecond grid; `from_epoch` turns each into
a datetime exactly, so the engine and a preview see the very numbers the event loop decided on.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from msgspec.structs import replace

from gpuq.model import Job, JobState, Node, NodeState, PreemptionEvent, Snapshot, from_epoch
from gpuq.sim.jobs import CANCELLED, COMPLETED, PENDING, RUNNING, SUSPENDED, SimJob
from gpuq.timefmt import format_time

if TYPE_CHECKING:
    from gpuq.sim.simulator import Simulator

__all__ = [
    "HELD_REASON",
    "NEW_REASON",
    "Why",
    "for_job",
    "model_job",
    "node_objects",
    "planner_snapshot",
    "preemption_events",
    "reason",
    "running_model",
    "snapshot",
]

#: The reason of a job an operator suspended (`Simulator.held`).
HELD_REASON = "Suspended by an operator: holds its GPUs until it is resumed"
#: The reason of a job the scheduler has not considered yet (`Simulator.sched_interval`).
NEW_REASON = "None (submitted: the scheduler considers it at its next pass)"

#: Why a victim was chosen: the engine's sentence, or (fast paths) its cost, phrased only when read.
Why = str | float


def for_job(preemptor: str, detail: str) -> str:
    """A policy preemption's reason: for which job, and the engine's word on the victim."""
    return f"preempted for job {preemptor}: {detail}" if detail else f"preempted for job {preemptor}"


def reason(preemptor: str | None, why: Why) -> str:
    """A logged preemption's reason as a sentence (a chosen cost in the engine's own wording)."""
    if isinstance(why, str):
        return why
    return for_job(str(preemptor), f"chosen (cost {why:.0f})")


def model_job(
    job: SimJob, now: float, reason: str | None = None, exempt: float | None = None, held_since: float | None = None
) -> Job:
    """One job as the model shows it at `now` (`exempt`: an exemption end to show instead;
    `held_since`: when an operator suspended it, for a job suspended now)."""
    # A job the scheduler suspended has lent its GPUs out and holds none, so the model (where
    # "suspended" means holding GPUs) sees it as pending; the reason says it is suspended. One
    # an operator suspended holds its GPUs (`Simulator.held`): suspended, as in the model.
    state = PENDING if job.state == SUSPENDED and not job.alloc else job.state
    start = job.began if state in (RUNNING, SUSPENDED, COMPLETED, CANCELLED) and job.run_start is not None else None
    # An operator's suspension keeps the run (`SimJob.began`): its time suspended so far, and
    # the resume its progress counts from.
    suspended = job.susp
    resumed = None
    if start is not None:
        if held_since is not None:
            suspended += now - held_since
        elif job.susp > 0 or job.run_start != job.began:
            resumed = job.run_start
    checkpoint = job.last_checkpoint(now)
    exempt_until = job.exempt_until if exempt is None else exempt
    model = Job(
        job.id,
        job.name,
        job.user,
        job.tenant,
        job.cls,
        job.priority,
        JobState(state),
        from_epoch(job.submit),
        from_epoch(job.qs),
        None if start is None else from_epoch(start),
        None if job.end is None else from_epoch(job.end),
        job.gpus,
        {node: tuple(idx) for node, idx in job.alloc.items()},
        tuple([from_epoch(t) for t in job.preempt_times]),
        None if checkpoint is None else from_epoch(checkpoint),
        None if exempt_until is None else from_epoch(exempt_until),
        reason=reason,
        urgent=job.urgent,
        checkpoint_interval_s=job.ckpt,
        duration_s=job.duration,
    )
    if suspended > 0 or resumed is not None:  # (rare: only then written, as the format's defaults are left out)
        return replace(model, suspended_s=suspended, resumed_time=None if resumed is None else from_epoch(resumed))
    return model


def node_objects(sim: Simulator) -> tuple[Node, ...]:
    per_node = sim.gpus.per_node
    out = []
    for node, free in zip(sim.nodes, sim.gpus.free_n, strict=True):
        state = NodeState.IDLE if free == per_node else NodeState.ALLOCATED if free == 0 else NodeState.MIXED
        out.append(Node(node.name, node.gpus, node.gpu_model, state))
    return tuple(out)


def running_model(sim: Simulator, job: SimJob, now: float) -> Job:
    """A running job as the engine sees it, reused while nothing about it changes."""
    checkpoint = job.last_checkpoint(now)
    key = (job.epoch, job.hver, checkpoint, job.exempt_until, job.drain_until, job.priority, job.urgent,
           len(job.preempt_times))  # fmt: skip
    cached = sim.mcache.get(job.id)
    if cached is not None and cached[0] == key:
        return cached[1]
    # A job already saving for a graceful preemption is not a victim twice.
    model = model_job(job, now, exempt=job.drain_until)
    sim.mcache[job.id] = (key, model)
    return model


def planner_snapshot(sim: Simulator, head: SimJob, now: float, nodes: Iterable[int]) -> Snapshot:
    """What the engine needs: the candidate nodes, the jobs holding GPUs there, the asking job.

    Leaving out nodes that cannot hold the optimum (`victims.candidate_nodes`) does not change
    the engine's choice, only its work; except for an urgent head, whose tenant's urgent GPUs
    the engine counts over the whole snapshot (`victims.decide` shows it every node then).
    """
    all_nodes = node_objects(sim)
    chosen = [all_nodes[i] for i in nodes]
    names = {n.name for n in chosen}
    if len(chosen) == len(all_nodes):
        running: Iterable[SimJob] = sim.running.values()
    else:
        running = [j for j in sim.running.values() if not names.isdisjoint(j.alloc)]
    jobs = [running_model(sim, j, now) for j in running]
    if sim.held:  # (an operator's suspended jobs hold GPUs too, though no one may preempt them)
        held = [sim.jobs[i] for i in sim.held]
        jobs.extend(model_job(j, now, held_since=sim.held[j.id]) for j in held
                    if len(chosen) == len(all_nodes) or not names.isdisjoint(j.alloc))  # fmt: skip
    jobs.append(model_job(head, now))
    return Snapshot(sim.name, "demo", from_epoch(now), sim.classes, tuple(chosen), tuple(jobs))


def preemption_events(sim: Simulator) -> tuple[PreemptionEvent, ...]:
    """The most recent preemptions (up to the simulator's `event_limit`), oldest first."""
    return tuple(PreemptionEvent(from_epoch(t), victim, by, gpus, lost, mode.value, reason(by, why))
                 for t, victim, by, gpus, lost, mode, why in sim.preemption_log)  # fmt: skip


def snapshot(sim: Simulator) -> Snapshot:
    """The cluster now: queue in scheduling order (then jobs the scheduler has yet to see),
    running jobs, recent finished jobs."""
    now = sim.now
    jobs: list[Job] = []
    for job in sorted(sim.running.values(), key=lambda j: (j.run_start, j.idkey)):
        reason = None
        if job.drain_until is not None:
            reason = f"Preempting: saving until the grace period ends at {format_time(job.drain_until)}"
        jobs.append(model_job(job, now, reason))
    jobs.extend(model_job(sim.jobs[job_id], now, HELD_REASON, held_since=since) for job_id, since in sim.held.items())
    for position, job in enumerate(sim.queue.ordered(now)):
        if job.claim:
            reason = "Preempting: waiting for preempted jobs to save and stop"
        elif position == 0:
            reason = "Resources"
        else:
            reason = "Priority"
        if job.state == SUSPENDED:
            reason = f"Suspended (preempted, resumes with its progress): {reason}"
        jobs.append(model_job(job, now, reason))
    jobs.extend(model_job(job, now, NEW_REASON) for job in sim.unseen.values())
    jobs.extend(model_job(job, now) for job in sim.history)
    return Snapshot(
        cluster=sim.name,
        backend="demo",
        taken_at=from_epoch(now),
        classes=sim.classes,
        nodes=node_objects(sim),
        jobs=tuple(jobs),
        preemption_events=preemption_events(sim),
    )
