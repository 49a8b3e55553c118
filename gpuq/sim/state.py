"""Saving and restoring a simulator as JSON-able data (the demo backend's state file).

The dump holds every live job, the recent history, the pending events (stale ones dropped) and
the counters; the queue and the free-GPU lists are rebuilt from the jobs, so a restored run
continues exactly as the original would have. Version 1 (before scheduling passes) loads as a
simulator without them.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from gpuq.model import JobClass
from gpuq.policy.config import DEFAULT_POLICY, Mode, Policy
from gpuq.sim.convert import reason
from gpuq.sim.events import AGE, AGES, DRAIN, FINISH, KIND_NAMES, RECHECK, Event
from gpuq.sim.jobs import PENDING, RUNNING, SUSPENDED, SimJob
from gpuq.sim.planner import Planner
from gpuq.sim.queue import PendingQueue
from gpuq.sim.simulator import STATE_VERSION, Simulator
from gpuq.sim.workload import ClusterSpec, WorkloadStream

__all__ = ["dump", "load"]

_READABLE = (1, STATE_VERSION)


def dump(sim: Simulator) -> dict[str, Any]:
    """Everything needed to continue exactly where this run stands, as JSON-able data."""
    return {
        "version": STATE_VERSION,
        "name": sim.name,
        "t0": sim.t0,
        "now": sim.now,
        "cluster": sim.spec.to_dict(),
        "classes": [
            {"name": c.name, "priority": c.priority, "preemptible": c.preemptible,
             "target_p95_s": c.target_p95_s, "max_wait_s": c.max_wait_s}
            for c in sim.classes
        ],  # fmt: skip
        "max_pending": sim.max_pending,
        "history_limit": sim.history.maxlen,
        "event_limit": sim.preemption_log.maxlen,
        "sched_interval": sim.sched_interval,
        "checkpoint_costs": [sim.save_cost, sim.restore_cost],
        "stream": None if sim.stream is None else sim.stream.to_dict(),
        "seq": sim.seq,
        "jobs": [j.to_dict() for j in sim.jobs.values()],
        "unseen": list(sim.unseen),
        "held": dict(sim.held),
        "history": [j.to_dict() for j in sim.history],
        "events": [
            [t, seq, KIND_NAMES[kind], None if job is None else job.id, ver]
            for t, seq, kind, job, ver in sorted(_pending(sim), key=_order)
        ],
        "preemption_events": [  # (from the log itself: no model objects just to read them back)
            [t, victim, by, gpus, lost, mode.value, reason(by, why)]
            for t, victim, by, gpus, lost, mode, why in sim.preemption_log
        ],
        "rver": sim.rver,
        "blocked": None if sim.blocked is None else list(sim.blocked),
        "recheck": [sim.recheck_ver, None if sim.recheck_at == math.inf else sim.recheck_at],
        "pass_at": None if sim.pass_at == math.inf else sim.pass_at,
        "counters": {"idle_gpu_s": sim.idle_gpu_s, "closed_gpu_s": sim.closed_gpu_s,
                     "overhead_gpu_s": sim.overhead_gpu_s, "lost_gpu_s": sim.lost_gpu_s,
                     "events": sim.events_processed, "plans": sim.plans,
                     "preemptions": sim.preemptions, "dropped": sim.dropped},  # fmt: skip
    }


def load(raw: Mapping[str, Any], *, policy: Policy = DEFAULT_POLICY, planner: Planner | None = None) -> Simulator:
    """Rebuild a simulator saved by `dump` (raises KeyError/ValueError/TypeError on bad data)."""
    if raw.get("version") not in _READABLE:
        raise ValueError(f"unsupported simulator state version {raw.get('version')!r}")
    spec = ClusterSpec.from_dict(raw["cluster"])
    classes = tuple(
        JobClass(str(c["name"]), int(c["priority"]), bool(c["preemptible"]), c["target_p95_s"], c["max_wait_s"])
        for c in raw["classes"]
    )
    sim = Simulator(policy=policy, cluster=spec, classes=classes, start=float(raw["t0"]), name=str(raw["name"]),
                    planner=planner, max_pending=raw["max_pending"], history_limit=int(raw["history_limit"]),
                    event_limit=int(raw["event_limit"]),
                    sched_interval=float(raw.get("sched_interval", 0.0)))  # fmt: skip
    sim.save_cost, sim.restore_cost = (float(c) for c in raw.get("checkpoint_costs", (0.0, 0.0)))
    sim.now = float(raw["now"])
    if raw["stream"] is not None:
        sim.stream = WorkloadStream.from_dict(raw["stream"], spec, classes)
    sim.seq = int(raw["seq"])
    held = {str(i): float(t) for i, t in raw.get("held", {}).items()}
    _restore_jobs(sim, [SimJob.from_dict(row) for row in raw["jobs"]], [str(i) for i in raw.get("unseen", ())], held)
    for row in raw["history"]:
        sim.history.append(SimJob.from_dict(row))
    kinds = {name: i for i, name in enumerate(KIND_NAMES)}
    events: list[Event] = []
    for t, seq, kind, job_id, ver in raw["events"]:
        target = None if job_id is None else sim.jobs.get(job_id)
        events.append((float(t), int(seq), kinds[kind], target, int(ver)))
    heapq.heapify(events)
    sim.events = events
    for row in raw["preemption_events"]:
        sim.preemption_log.append((float(row[0]), str(row[1]), None if row[2] is None else str(row[2]),
                                   int(row[3]), float(row[4]), Mode(str(row[5])), str(row[6])))  # fmt: skip
    sim.rver = int(raw["rver"])
    blocked = raw["blocked"]
    sim.blocked = None if blocked is None else (str(blocked[0]), int(blocked[1]), int(blocked[2]))
    sim.recheck_ver = int(raw["recheck"][0])
    sim.recheck_at = math.inf if raw["recheck"][1] is None else float(raw["recheck"][1])
    pass_at = raw.get("pass_at")
    sim.pass_at = math.inf if pass_at is None else float(pass_at)
    counters = raw["counters"]
    sim.idle_gpu_s = float(counters["idle_gpu_s"])
    sim.closed_gpu_s = float(counters["closed_gpu_s"])
    sim.overhead_gpu_s = float(counters.get("overhead_gpu_s", 0.0))
    sim.lost_gpu_s = float(counters.get("lost_gpu_s", 0.0))
    sim.events_processed = int(counters["events"])
    sim.plans = int(counters["plans"])
    sim.preemptions = int(counters["preemptions"])
    sim.dropped = int(counters["dropped"])
    return sim


def _pending(sim: Simulator) -> Iterator[Event]:
    """The events that still stand: the heap's live ones, the arrivals still in line (never
    stale), and each job lined up to start aging as an event of its own (the form a restored
    simulator takes them back in: all in its heap)."""
    for event in sim.events:
        if _live(sim, event):
            yield event
    yield from sim.arrivals.pending()
    for when, seq, job, ver in sim.aging.entries():
        if job.id in sim.queue.jobs:
            yield (when, seq, AGE, job, ver)


def _order(event: Event) -> tuple[float, int]:
    return (event[0], event[1])


def _live(sim: Simulator, event: Event) -> bool:
    """Whether a pending event still stands (saved state leaves stale ones out)."""
    _, _, kind, job, ver = event
    if kind in (FINISH, DRAIN):
        return job is not None and job.state == RUNNING and job.epoch == ver
    if kind == AGE:
        return job is not None and job.qver == ver and job.id in sim.queue.jobs
    if kind == RECHECK:
        return ver == sim.recheck_ver
    return kind != AGES  # (its jobs are saved as events of their own)


def _restore_jobs(sim: Simulator, jobs: Iterable[SimJob], unseen: Iterable[str], held: Mapping[str, float]) -> None:
    """Take saved jobs back (live ones; `unseen`: ids of those waiting for the next pass;
    `held`: those an operator suspended, and since when): running and held ones onto their
    GPUs, running ones in start order, and the others into the queue."""
    for job in jobs:
        sim.jobs[job.id] = job
    for job_id in unseen:
        sim.unseen[job_id] = sim.jobs[job_id]
    for job_id, since in held.items():
        job = sim.jobs[job_id]
        if job.state != SUSPENDED:
            raise ValueError(f"held job {job_id} is {job.state}, not suspended")
        sim.gpus.claim(job.alloc)
        sim.held[job_id] = float(since)
    for job in sorted(sim.jobs.values(), key=lambda j: (j.run_start or 0.0, j.epoch, j.idkey)):
        if job.state == RUNNING:
            sim.gpus.claim(job.alloc)
            job.place = tuple((sim.gpus.index[node], len(idx)) for node, idx in job.alloc.items())
            sim.running[job.id] = job
            for i, n in job.place:
                sim.on_node[i][job] = n
            sim.ckpt_running += job.ckpt is not None
            sim.arm(job, renew=False)
    # Queue order is rebuilt from the jobs themselves: the same total order as before.
    sim.queue = PendingQueue(sim.rules.queued_priority)
    for job in sim.jobs.values():
        if job.state in (PENDING, SUSPENDED) and job.id not in sim.unseen and job.id not in sim.held:
            sim.enqueue(job, renew=False)
