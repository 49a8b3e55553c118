"""When queued jobs start to age: lined up per class, instead of an event each in the heap.

A job that waits past its class's max_wait starts to age (`Simulator.enqueue`). Most jobs start
long before that moment, so an event per queued job would mostly be popped stale, and would
double the event heap that every other event is pushed through. Within a class every job waits
the same max_wait from the moment it is queued, and jobs are queued as time goes on, so those
moments come in the order the jobs were queued: a first-in first-out line per class holds them,
and the heap holds one wake-up, for the earliest one still waiting (`Simulator` keeps it). A
job queued out of that order (restored state, a policy change that queues every job again with
its old queueing time) gets an event of its own, as every job did before.

An entry is (tick, sequence number, job, queue version): stale once the job's queue version
moved (it started, or was queued anew), as an event of its own would be.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Final

from gpuq.sim.events import let_taken_go
from gpuq.sim.jobs import SimJob

__all__ = ["AgingLines", "Entry"]

_INF: Final = math.inf

#: (the tick it starts to age at, sequence number, job, its queue version then)
Entry = tuple[float, int, SimJob, int]


class _Line:
    """One class's entries, in order; those before `head` are done with. (A list and an index,
    not a deque: compiled, a list is read and appended to as such, a deque through method calls
    looked up by name.)"""

    __slots__ = ("items", "head")

    def __init__(self) -> None:
        self.items: list[Entry] = []
        self.head = 0


class AgingLines:
    """Queued jobs in the order they start to age, one line per class."""

    __slots__ = ("lines",)

    def __init__(self) -> None:
        self.lines: dict[str, _Line] = {}

    def add(self, job: SimJob, when: float, seq: int) -> bool:
        """Line `job` up to start aging at tick `when`; False (nothing lined up) when that comes
        before the last job lined up in its class: the caller gives it an event of its own."""
        line = self.lines.get(job.cls)
        if line is None:
            line = self.lines[job.cls] = _Line()
        elif line.head < len(line.items) and line.items[-1][0] > when:
            return False
        line.items.append((when, seq, job, job.qver))
        return True

    def next_due(self) -> float:
        """The earliest tick at which a lined-up job still waiting starts to age (inf: none);
        stale entries at the front of the lines are dropped on the way."""
        due = _INF
        for line in self.lines.values():
            items = line.items
            head = line.head
            while head < len(items):
                when, _, job, ver = items[head]
                if job.qver == ver:
                    if when < due:
                        due = when
                    break
                head += 1
            line.head = let_taken_go(items, head)
        return due

    def pop_due(self, now: float) -> list[SimJob]:
        """The jobs still waiting that start to age at or before `now`, out of the lines."""
        due: list[SimJob] = []
        for line in self.lines.values():
            items = line.items
            head = line.head
            while head < len(items):
                when, _, job, ver = items[head]
                if job.qver != ver:
                    head += 1
                elif when <= now:
                    head += 1
                    due.append(job)
                else:
                    break
            line.head = let_taken_go(items, head)
        return due

    def entries(self) -> Iterator[Entry]:
        """Every entry still standing (saved state writes them as events of their own)."""
        for line in self.lines.values():
            for entry in line.items[line.head :]:
                if entry[2].qver == entry[3]:
                    yield entry
