"""The pending queue, ordered by effective priority (desc), then queued-since, then id.

Effective priority changes with time (aging), so one static heap cannot hold the order. But
within a group of jobs of the same size that age at the same rate the order never changes:
before `max_wait` a job's priority is flat, after it `base + rate × (now − qs − max_wait) / 60`
is a line with the same slope for the whole group, so a heap keyed on its intercept stays valid.
The queue is a handful of such heaps (per GPU count × aging rate, rate 0 = not aging); the
overall head is the best of the group heads, and backfill asks only the groups that fit.
Entries are invalidated lazily with the job's `qver`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from functools import partial
from heapq import heappop, heappush

from gpuq.model import JobIdKey
from gpuq.policy.kernel import aging_intercept
from gpuq.sim.jobs import SimJob, first_tick_past, strictly_after

__all__ = ["EpFn", "PendingQueue"]

#: effective priority of a queued job at a time
EpFn = Callable[[SimJob, float], float]

_Entry = tuple[float, float, JobIdKey, int, SimJob]


class _Group:
    __slots__ = ("gpus", "rate", "heap")

    def __init__(self, gpus: int, rate: float) -> None:
        self.gpus = gpus
        self.rate = rate  # priority points per minute; 0 = the job is not (yet) aging
        self.heap: list[_Entry] = []

    def top(self) -> SimJob | None:
        heap = self.heap
        while heap:
            entry = heap[0]
            job = entry[4]
            if job.qver == entry[3]:
                return job
            heappop(heap)  # stale: the job left the queue or re-entered it
        return None


class PendingQueue:
    """Queued (pending and suspended) jobs in scheduling order."""

    def __init__(self, ep: EpFn) -> None:
        self._ep = ep
        self._groups: dict[tuple[int, float], _Group] = {}  # by (GPUs, rate); rate 0 in `_static`
        self._static: dict[int, _Group] = {}  # rate 0, by GPUs: most pushes, and no tuple key to hash
        self._list: list[_Group] = []
        self.aging_groups = 0
        self.jobs: dict[str, SimJob] = {}

    def __len__(self) -> int:
        return len(self.jobs)

    def push(self, job: SimJob, static_priority: float, rate: float, max_wait: float, renew: bool = True) -> None:
        """Enter (or re-enter) the queue. `rate` > 0 only for a job already past its max_wait.

        `renew=False` keeps the job's queue version (restoring saved state into an empty queue).
        """
        if renew:
            job.qver += 1
        self.jobs[job.id] = job
        if rate == 0.0:
            group = self._static.get(job.gpus)
            if group is None:
                group = self._static[job.gpus] = _Group(job.gpus, 0.0)
                self._list.append(group)
        else:
            key = (job.gpus, rate)
            group = self._groups.get(key)
            if group is None:
                group = self._groups[key] = _Group(job.gpus, rate)
                self._list.append(group)
                self.aging_groups += rate > 0
        if rate > 0:
            intercept = aging_intercept(static_priority, job.qs + max_wait, rate)
            heappush(group.heap, (-intercept, job.qs, job.idkey, job.qver, job))
        else:
            heappush(group.heap, (-static_priority, job.qs, job.idkey, job.qver, job))

    def remove(self, job: SimJob) -> None:
        job.qver += 1
        del self.jobs[job.id]

    def best(
        self, now: float, max_single: int | None = None, max_multi: int = 0, single_limit: int = 0
    ) -> SimJob | None:
        """The highest job in order; with `max_single`, only jobs that could fit the free GPUs.

        A job of at most `single_limit` GPUs fits when it is ≤ `max_single` (the most free GPUs on
        one node); a larger one when it is ≤ `max_multi` (free GPUs over all nodes).
        """
        ep = self._ep
        best: SimJob | None = None
        best_rank = best_qs = 0.0
        for group in self._list:
            if max_single is not None:
                g = group.gpus
                if g > (max_single if g <= single_limit else max_multi):
                    continue
            job = group.top()
            if job is None:
                continue
            # The order (minus the priority, queued since, id), compared a field at a time: the
            # floats as such, compiled (a tuple of them would be built and compared as objects).
            # A static group's heap key is minus the priority itself; aging ones need the clock.
            rank = group.heap[0][0] if group.rate == 0 else -ep(job, now)
            qs = job.qs
            if (
                best is None or rank < best_rank
                or (rank == best_rank and (qs < best_qs or (qs == best_qs and job.idkey < best.idkey)))
            ):  # fmt: skip
                best, best_rank, best_qs = job, rank, qs
        return best

    def heads(self) -> Iterator[SimJob]:
        for group in self._list:
            job = group.top()
            if job is not None:
                yield job

    def next_overtake(self, head: SimJob, now: float, rate_of: Callable[[SimJob], float]) -> float:
        """The earliest time after `now` at which an aging group head's priority passes `head`'s."""
        if not self.aging_groups:
            return math.inf  # nobody's priority is moving
        ep = self._ep
        head_ep = ep(head, now)
        head_rate = rate_of(head)
        soonest = math.inf
        for job in self.heads():
            if job is head:
                continue
            rate = rate_of(job)
            if rate <= head_rate:
                continue
            gap = head_ep - ep(job, now)
            # The lines meet after gap / (rate difference) minutes, strictly later: it must pass.
            # That arithmetic may land a tick off; the queue's own order settles the tick, so the
            # moment is the same whenever it is worked out.
            line = strictly_after(now + max(gap, 0.0) * 60.0 / (rate - head_rate))
            when = first_tick_past(line, now, partial(self._ahead, job, head))
            if when < soonest:
                soonest = when
        return soonest

    def _ahead(self, job: SimJob, head: SimJob, when: float) -> bool:
        """Whether `job` comes before `head` in the queue's order at `when`."""
        return self._place(job, when) < self._place(head, when)

    def _place(self, job: SimJob, when: float) -> tuple[float, float, JobIdKey]:
        """A job's key in the queue's order at `when` (`best` compares the same a field at a time)."""
        return (-self._ep(job, when), job.qs, job.idkey)

    def ordered(self, now: float) -> list[SimJob]:
        """Every queued job in scheduling order (for snapshots; O(n log n))."""
        return sorted(self.jobs.values(), key=lambda j: self._place(j, now))
