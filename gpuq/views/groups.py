"""The queue's rows grouped by owner: the pods of one Job, JobSet or PyTorchJob under one line.

`group_rows` keeps the queue's order: a group takes the place of its first pod, and its pods
follow it at once, in the rows' order; a job without an owner (`Job.owner`), or the only one of
its owner among the rows, stays a plain row. Pure: every front end renders the same grouping.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

import msgspec

from gpuq.model import JobState
from gpuq.views.queue import QueueRow, SlaStatus

__all__ = ["GroupRow", "group_items", "group_rows", "state_summary"]

T = TypeVar("T")
G = TypeVar("G")

_STATE_ORDER = {state: i for i, state in enumerate(JobState)}
#: worst first: a group is as late as its latest pod
_SLA_RANK = {SlaStatus.BREACH: 0, SlaStatus.AT_RISK: 1, SlaStatus.OK: 2, SlaStatus.NONE: 3}


def state_summary(states: Sequence[JobState]) -> str:
    """``2 running, 1 pending``: the most common state first, ties in `JobState`'s order."""
    counts = Counter(states)
    ordered = sorted(counts.items(), key=lambda item: (-item[1], _STATE_ORDER[item[0]]))
    return ", ".join(f"{n} {state.value}" for state, n in ordered)


def _common(values: Sequence[str]) -> str | None:
    first = values[0]
    return first if all(v == first for v in values) else None


class GroupRow(msgspec.Struct, frozen=True):
    """One owner's pods (two or more) and what they add up to."""

    owner: str
    rows: tuple[QueueRow, ...]
    gpus: int
    #: e.g. "2 running, 1 pending" (`state_summary`)
    states: str
    #: the highest of its pods'
    effective_priority: float
    #: the longest of its pods' (None: none waited)
    wait_s: float | None
    preemptions: int
    preemptions_24h: int
    #: the worst of its pods'
    sla: SlaStatus
    #: the value its pods share, None when they differ
    user: str | None
    tenant: str | None
    job_class: str | None

    @property
    def pods(self) -> int:
        return len(self.rows)

    @classmethod
    def of(cls, owner: str, rows: Sequence[QueueRow]) -> GroupRow:
        jobs = [r.job for r in rows]
        waits = [r.wait_s for r in rows if r.wait_s is not None]
        return cls(
            owner, tuple(rows), sum(j.gpus for j in jobs), state_summary([j.state for j in jobs]),
            max(r.effective_priority for r in rows), max(waits) if waits else None,
            sum(r.preemptions for r in rows), sum(r.preemptions_24h for r in rows),
            min((r.sla for r in rows), key=_SLA_RANK.__getitem__),
            _common([j.user for j in jobs]), _common([j.tenant for j in jobs]), _common([j.job_class for j in jobs]),
        )  # fmt: skip


def group_items(
    items: Sequence[T], owner_of: Callable[[T], Hashable | None], group_of: Callable[[Hashable, list[T]], G]
) -> list[T | G]:
    """`items` with each owner of two or more of them as `group_of(owner, its items)` where its
    first item was, its items right after it; every other item as it was, in order."""
    members: dict[Hashable, list[T]] = {}
    owners = [owner_of(item) for item in items]
    for item, owner in zip(items, owners, strict=True):
        if owner is not None:
            members.setdefault(owner, []).append(item)
    out: list[T | G] = []
    for item, owner in zip(items, owners, strict=True):
        pods = members.get(owner) if owner is not None else None
        if pods is None or len(pods) < 2:
            out.append(item)
        elif pods[0] is item:  # (the group goes where its first pod was; the others are pulled up)
            out.append(group_of(owner, pods))
            out.extend(pods)
    return out


def group_rows(rows: Sequence[QueueRow]) -> list[QueueRow | GroupRow]:
    """The rows with each owner of two or more of them as a `GroupRow` where its first pod was,
    its pods right after it (also in `GroupRow.rows`); every other row as it was, in order."""
    return group_items(rows, lambda row: row.job.owner, lambda owner, pods: GroupRow.of(str(owner), pods))
