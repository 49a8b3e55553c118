"""A cluster that changes from frame to frame as a live one does: jobs submitted, started,
finished, preempted, bumped, reordered and dropped; nodes drained and back; a class re-prioritised;
a sliding window of preemption events. Every snapshot is sound (it loads as a snapshot file)."""

from __future__ import annotations

import random
from datetime import timedelta, timezone

import msgspec

from gpuq.model import Job, JobClass, JobState, Node, NodeState, PreemptionEvent, Snapshot
from tests.factories import at, make_job

START = 1_800_000_000.0
NODES = 4
GPUS = 8
PLUS_TWO = timezone(timedelta(hours=2))


def story(frames: int, seed: int = 1, cluster: str = "prod", step_s: float = 2.0) -> list[Snapshot]:
    rng = random.Random(seed)
    replace = msgspec.structs.replace
    classes = (JobClass("normal", 10), JobClass("high", 100, preemptible=False, target_p95_s=600.0))
    nodes = [Node(f"n{i}", GPUS, "H100") for i in range(NODES)]
    free = {n.name: list(range(GPUS)) for n in nodes}
    jobs: dict[str, Job] = {}
    finished_at: dict[str, int] = {}
    events: list[PreemptionEvent] = []
    next_id = 100
    out: list[Snapshot] = []
    for frame in range(frames):
        now = START + frame * step_s
        for _ in range(rng.randint(0, 3)):  # submissions, some with times in another UTC offset
            submit = at(now).astimezone(PLUS_TWO) if rng.random() < 0.3 else now
            jobs[str(next_id)] = make_job(str(next_id), name=f"train-{next_id}", user=f"u{rng.randint(1, 5)}",
                                          job_class=rng.choice(("normal", "high")), priority=rng.randint(0, 50),
                                          submit_time=submit, gpus=rng.randint(1, 4), reason="Priority")  # fmt: skip
            next_id += 1
        pending = [j for j in jobs.values() if j.state is JobState.PENDING]
        for job in rng.sample(pending, min(len(pending), rng.randint(0, 2))):  # starts
            node = next((n for n in nodes if n.state is not NodeState.DRAIN and len(free[n.name]) >= job.gpus), None)
            if node is not None:
                held, free[node.name] = free[node.name][: job.gpus], free[node.name][job.gpus :]
                jobs[job.id] = replace(job, state=JobState.RUNNING, start_time=at(now),
                                       allocation={node.name: tuple(held)}, reason=None)  # fmt: skip
        running = [j for j in jobs.values() if j.state is JobState.RUNNING]
        for job in rng.sample(running, min(len(running), rng.randint(0, 1))):  # finishes
            _release(free, job)
            jobs[job.id] = replace(job, state=JobState.COMPLETED, end_time=at(now), allocation={})
            finished_at[job.id] = frame
        if running and rng.random() < 0.2:  # a preemption: back to the queue, and an event
            victim = rng.choice([j for j in running if jobs[j.id].state is JobState.RUNNING] or running)
            if jobs[victim.id].state is JobState.RUNNING:
                _release(free, victim)
                times = (*victim.preemption_times, at(now))
                jobs[victim.id] = replace(victim, state=JobState.PENDING, start_time=None, allocation={},
                                          preemption_times=times, reason="Preempted")  # fmt: skip
                events.append(PreemptionEvent(at(now), victim.id, None, victim.gpus, 60.0 * victim.gpus, "requeue",
                                              "test"))  # fmt: skip
                del events[:-5]
        pending = [j for j in jobs.values() if j.state is JobState.PENDING]
        if pending and rng.random() < 0.3:  # a bump
            job = rng.choice(pending)
            jobs[job.id] = replace(job, priority=job.priority + rng.randint(1, 30))
        for job_id in [i for i, f in finished_at.items() if frame - f >= 3]:  # finished jobs age out
            del jobs[job_id], finished_at[job_id]
        if rng.random() < 0.1:  # a node drained, or back
            i = rng.randrange(NODES)
            nodes[i] = replace(nodes[i], state=NodeState.IDLE if nodes[i].state is NodeState.DRAIN else NodeState.DRAIN)
        if frame and frame % 17 == 0:  # a class re-prioritised
            classes = (replace(classes[0], priority=classes[0].priority + 1), classes[1])
        if rng.random() < 0.1 and events:  # the ledger forgets its oldest event
            del events[0]
        # Order as a scheduler lists them: running by start, then pending by priority (ties by id).
        listed = sorted(jobs.values(), key=lambda j: (j.state is not JobState.RUNNING, -j.priority, int(j.id)))
        out.append(Snapshot(cluster, "demo", at(now), classes, tuple(nodes), tuple(listed), tuple(events)))
    return out


def _release(free: dict[str, list[int]], job: Job) -> None:
    for node, indexes in job.allocation.items():
        free[node] = sorted(free[node] + [i for i in indexes if i is not None])


__all__ = ["START", "story"]
