"""Saving and restoring a simulator as JSON-able data (the demo backend's state file).

The dump holds every live job, the recent history, the pending events (stale ones dropped) and
the counters; the queue and the free-GPU lists are rebuilt from the jobs, so a restored run
continues exactly as the original would have.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from typing import Any

from gpuq.model import JobClass
from gpuq.policy.config import DEFAULT_POLICY, Mode, Policy
from gpuq.sim.jobs import RUNNING, SimJob
from gpuq.sim.planner import Planner
from gpuq.sim.simulator import (
    _AGE,
    _DRAIN,
    _FINISH,
    _INF,
    _KIND_NAMES,
    _RECHECK,
    STATE_VERSION,
    Simulator,
    _Event,
    _reason,
)
from gpuq.sim.workload import ClusterSpec, WorkloadStream

__all__ = ["dump", "load"]


def _event_live(sim: Simulator, event: _Event) -> bool:
    _, _, kind, job, ver = event
    if kind in (_FINISH, _DRAIN):
        return job is not None and job.state == RUNNING and job.epoch == ver
    if kind == _AGE:
        return job is not None and job.qver == ver and job.id in sim._queue.jobs
    if kind == _RECHECK:
        return ver == sim._recheck_ver
    return True


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
        ],
        "max_pending": sim.max_pending,
        "history_limit": sim.history.maxlen,
        "event_limit": sim._preemption_log.maxlen,
        "stream": None if sim.stream is None else sim.stream.to_dict(),
        "seq": sim._seq,
        "jobs": [j.to_dict() for j in sim._jobs.values()],
        "history": [j.to_dict() for j in sim.history],
        "events": [
            [t, seq, _KIND_NAMES[kind], None if job is None else job.id, ver]
            for t, seq, kind, job, ver in sorted(sim._events)
            if _event_live(sim, (t, seq, kind, job, ver))
        ],
        "preemption_events": [  # (from the log itself: no model objects just to read them back)
            [t, victim, by, gpus, lost, mode.value, _reason(by, why)]
            for t, victim, by, gpus, lost, mode, why in sim._preemption_log
        ],
        "rver": sim._rver,
        "blocked": None if sim._blocked is None else list(sim._blocked),
        "recheck": [sim._recheck_ver, None if sim._recheck_at == _INF else sim._recheck_at],
        "counters": {"idle_gpu_s": sim.idle_gpu_s, "closed_gpu_s": sim.closed_gpu_s,
                     "events": sim.events_processed, "plans": sim.plans,
                     "preemptions": sim.preemptions, "dropped": sim.dropped},
    }


def load(raw: Mapping[str, Any], *, policy: Policy = DEFAULT_POLICY, planner: Planner | None = None) -> Simulator:
    """Rebuild a simulator saved by `to_dict` (raises KeyError/ValueError/TypeError on bad data)."""
    if raw.get("version") != STATE_VERSION:
        raise ValueError(f"unsupported simulator state version {raw.get('version')!r}")
    spec = ClusterSpec.from_dict(raw["cluster"])
    classes = tuple(
        JobClass(str(c["name"]), int(c["priority"]), bool(c["preemptible"]), c["target_p95_s"], c["max_wait_s"])
        for c in raw["classes"]
    )
    sim = Simulator(policy=policy, cluster=spec, classes=classes, start=float(raw["t0"]), name=str(raw["name"]),
              planner=planner, max_pending=raw["max_pending"], history_limit=int(raw["history_limit"]),
              event_limit=int(raw["event_limit"]))
    sim.now = float(raw["now"])
    if raw["stream"] is not None:
        sim.stream = WorkloadStream.from_dict(raw["stream"], spec, classes)
    sim._seq = int(raw["seq"])
    for row in raw["jobs"]:
        job = SimJob.from_dict(row)
        sim._jobs[job.id] = job
    for row in raw["history"]:
        sim.history.append(SimJob.from_dict(row))
    for job in sorted(sim._jobs.values(), key=lambda j: (j.run_start or 0.0, j.epoch, j.idkey)):
        if job.state == RUNNING:
            sim._gpus.claim(job.alloc)
            job.place = tuple((sim._gpus.index[node], len(idx)) for node, idx in job.alloc.items())
            sim._running[job.id] = job
            sim._ckpt_running += job.ckpt is not None
            sim._arm(job, renew=False)
    # Queue order is rebuilt from the jobs themselves: the same total order as before.
    sim._rebuild_queue()
    kinds = {name: i for i, name in enumerate(_KIND_NAMES)}
    events: list[_Event] = []
    for t, seq, kind, job_id, ver in raw["events"]:
        target = None if job_id is None else sim._jobs.get(job_id)
        events.append((float(t), int(seq), kinds[kind], target, int(ver)))
    heapq.heapify(events)
    sim._events = events
    for row in raw["preemption_events"]:
        sim._preemption_log.append((float(row[0]), str(row[1]), None if row[2] is None else str(row[2]),
                                    int(row[3]), float(row[4]), Mode(str(row[5])), str(row[6])))
    sim._rver = int(raw["rver"])
    blocked = raw["blocked"]
    sim._blocked = None if blocked is None else (str(blocked[0]), int(blocked[1]), int(blocked[2]))
    sim._recheck_ver = int(raw["recheck"][0])
    sim._recheck_at = _INF if raw["recheck"][1] is None else float(raw["recheck"][1])
    counters = raw["counters"]
    sim.idle_gpu_s = float(counters["idle_gpu_s"])
    sim.closed_gpu_s = float(counters["closed_gpu_s"])
    sim.events_processed = int(counters["events"])
    sim.plans = int(counters["plans"])
    sim.preemptions = int(counters["preemptions"])
    sim.dropped = int(counters["dropped"])
    return sim
