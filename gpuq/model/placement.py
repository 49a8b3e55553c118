"""Placements that cannot be: GPUs on a node the snapshot does not have, an index past the node's
count, one GPU held twice, more GPUs held on a node than it has, a pending job holding GPUs, a
job whose ``gpus`` disagrees with its allocation.

A snapshot file with such a state is refused (`gpuq.model.codec`), naming the job and the node.
A live backend can show one for a moment — Slurm gives a completing job's GPUs to a new job
before the completing one is gone, and reads its nodes and its jobs at slightly different
moments — so its snapshot is not refused: `mark_conflicts` sets `Job.conflict` on every job
involved; views show the mark, previews leave those jobs out (`Snapshot.running_on`), and a file
written from such a snapshot carries the marks and loads again.

Only jobs with an allocation can conflict (and holding jobs with none, whose `gpus` must be 0):
they are picked out in C (`filter`, `list.count`), and a quick yes-or-no check (`_plausible`)
comes before the one that words each problem. (A snapshot file is checked in the codec's single
pass over its jobs instead, `codec._sound`, which calls in here only when something is wrong.)
"""

from __future__ import annotations

from itertools import chain, repeat
from operator import attrgetter
from typing import cast

import msgspec
from msgspec.structs import replace

from gpuq.model import ACTIVE_STATES, Job, JobState, Snapshot

__all__ = ["Conflict", "first_unmarked", "mark_conflicts", "placement_conflicts"]

_STATE = attrgetter("state")


class Conflict(msgspec.Struct, frozen=True):
    """One impossible placement: the jobs involved, the node, the job field where it shows
    (``allocation.gpu-01``, ``gpus``; ``nodes`` for a node's total) and what is wrong."""

    jobs: tuple[Job, ...]
    node: str | None
    field: str
    problem: str

    def message(self, snapshot: Snapshot) -> str:
        """``jobs[3].allocation.gpu-01: ...``: the file's path first, as every snapshot error."""
        if self.field == "nodes":
            at = next(i for i, n in enumerate(snapshot.nodes) if n.name == self.node)
            return f"nodes[{at}].gpus: {self.problem}"
        return f"jobs[{_position(snapshot, self.jobs[-1])}].{self.field}: {self.problem}"


def _position(snapshot: Snapshot, job: Job) -> int:
    return next(i for i, j in enumerate(snapshot.jobs) if j is job)


def _plausible(snapshot: Snapshot, placed: list[Job]) -> bool:
    """True when `placement_conflicts` would find nothing among the jobs with an allocation;
    False: look closely. The sound case costs one Python-level step per node entry, the rest is
    done in C (map, chain, set)."""
    states = list(map(_STATE, placed))
    if sum(map(states.count, ACTIVE_STATES)) != len(states):  # a placed job that holds no GPUs
        return False
    allocations = list(map(attrgetter("allocation"), placed))
    sizes = list(map(sum, map(map, repeat(len), map(dict.values, allocations))))
    if list(map(attrgetter("gpus"), placed)) != sizes:
        return False
    capacity = {n.name: n.gpus for n in snapshot.nodes}
    by_node: dict[str, list[int | None]] = {}
    for node, indexes in chain.from_iterable(map(dict.items, allocations)):
        found = by_node.get(node)
        if found is None:
            by_node[node] = list(indexes)
        else:
            found.extend(indexes)
    for node, held in by_node.items():
        cap = capacity.get(node)
        # Unknown indexes (None, as on Kubernetes) need a close look; known ones must be below
        # the node's count and each held once (then no node holds more than it has either).
        if cap is None or None in held:
            return False
        known = cast("list[int]", held)
        if known and (max(known) >= cap or len(set(known)) != len(known)):
            return False
    return True


def placement_conflicts(snapshot: Snapshot) -> tuple[Conflict, ...]:
    """Every impossible placement in `snapshot`."""
    jobs = snapshot.jobs
    placed = list(filter(attrgetter("allocation"), jobs))
    out: list[Conflict] = []
    holding = sum(map(list(map(_STATE, jobs)).count, ACTIVE_STATES))
    unplaced_holding = holding > sum(map(list(map(_STATE, placed)).count, ACTIVE_STATES))
    if not unplaced_holding and _plausible(snapshot, placed):
        return ()
    if unplaced_holding:
        for job in jobs:  # a job holds GPUs and lists none: its `gpus` must say 0
            if not job.allocation and job.gpus and job.state in ACTIVE_STATES:
                problem = f"job {job.id} is {job.state.value} with gpus {job.gpus} but holds none"
                out.append(Conflict((job,), None, "allocation", problem))
    capacity = {n.name: n.gpus for n in snapshot.nodes}
    holder: dict[str, dict[int, Job]] = {}  # node -> GPU index -> the job holding it
    held: dict[str, int] = {}  # node -> GPUs held there (each known index once, unknown ones each)
    on_node: dict[str, list[Job]] = {}
    active, pending = ACTIVE_STATES, JobState.PENDING
    for job in placed:
        allocation = job.allocation
        state = job.state
        if state not in active:
            if state is pending:
                problem = f"job {job.id} is pending but holds GPUs on {', '.join(allocation)}"
                out.append(Conflict((job,), next(iter(allocation)), "allocation", problem))
            continue
        total = 0
        for node, indexes in allocation.items():
            total += len(indexes)
            cap = capacity.get(node)
            if cap is None:
                problem = f"job {job.id} holds GPUs on {node}, a node the snapshot does not have"
                out.append(Conflict((job,), node, f"allocation.{node}", problem))
                continue
            on_node.setdefault(node, []).append(job)
            taken = holder.setdefault(node, {})
            past: list[int] = []
            twice: list[int] = []
            shared: dict[int, list[int]] = {}  # id(other job) -> indexes it holds too
            others: dict[int, Job] = {}
            for index in indexes:
                if index is None:
                    held[node] = held.get(node, 0) + 1
                elif index >= cap:
                    past.append(index)
                elif (other := taken.get(index)) is None:
                    taken[index] = job
                    held[node] = held.get(node, 0) + 1
                elif other is job:
                    twice.append(index)
                else:
                    shared.setdefault(id(other), []).append(index)
                    others[id(other)] = other
            field = f"allocation.{node}"
            if past:
                span = f" (0-{cap - 1})" if cap else ""
                out.append(
                    Conflict((job,), node, field, f"job {job.id} holds {_gpus(past)} on {node}, which has {cap}{span}")
                )
            if twice:
                out.append(Conflict((job,), node, field, f"job {job.id} lists {_gpus(twice)} on {node} twice"))
            for key, same in shared.items():
                other = others[key]
                verb = "is" if len(same) == 1 else "are"
                problem = (f"{_gpus(same)} on {node} {verb} held by job {other.id} ({other.state.value}) "
                           f"and by job {job.id} ({state.value})")  # fmt: skip
                out.append(Conflict((other, job), node, field, problem))
        if total != job.gpus:
            problem = f"job {job.id} has gpus {job.gpus} but its allocation holds {total}"
            out.append(Conflict((job,), next(iter(allocation)), "gpus", problem))
    for node, count in held.items():
        if count > capacity[node]:
            on = on_node[node]
            out.append(Conflict(tuple(on), node, "nodes", f"{count} GPUs allocated on {node}, which has "
                                f"{capacity[node]} (jobs {', '.join(j.id for j in on)})"))  # fmt: skip
    return tuple(out)


def _gpus(indexes: list[int]) -> str:
    return f"GPU {indexes[0]}" if len(indexes) == 1 else f"GPUs {','.join(map(str, indexes))}"


def first_unmarked(conflicts: tuple[Conflict, ...], snapshot: Snapshot) -> Conflict | None:
    """The conflict, first in file order, that involves a job without a `Job.conflict` mark (in
    a file, only a live backend's marked conflicts may stand)."""
    found = [c for c in conflicts if any(j.conflict is None for j in c.jobs)]
    if not found:
        return None
    order = {id(j): i for i, j in enumerate(snapshot.jobs)}
    return min(found, key=lambda c: max(order[id(j)] for j in c.jobs))


def mark_conflicts(snapshot: Snapshot) -> Snapshot:
    """`snapshot` with `Job.conflict` set on every job in an impossible placement (its problems,
    joined); the same snapshot when there is none. For live backends, which must not refuse a
    state their cluster shows for a moment."""
    conflicts = placement_conflicts(snapshot)
    if not conflicts:
        return snapshot
    notes: dict[int, list[str]] = {}
    for conflict in conflicts:
        for job in conflict.jobs:
            found = notes.setdefault(id(job), [])
            if conflict.problem not in found:
                found.append(conflict.problem)
    jobs = tuple(replace(j, conflict="; ".join(notes[id(j)])) if id(j) in notes else j for j in snapshot.jobs)
    return Snapshot(snapshot.cluster, snapshot.backend, snapshot.taken_at, snapshot.classes, snapshot.nodes,
                    jobs, snapshot.preemption_events, snapshot.queues, snapshot.unread)  # fmt: skip
