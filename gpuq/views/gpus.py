"""The GPU grid: per node, which job holds each GPU (and those whose indexes are unknown)."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterable
from datetime import datetime

import msgspec

from gpuq.errors import BadInput
from gpuq.model import Job, Node, Snapshot, job_id_key

__all__ = ["UNPLACED_MARK", "GpuGrid", "NodeGrid", "gpu_grid"]

#: after a holder whose GPU index the backend does not know (Kubernetes): where it sits is a guess
UNPLACED_MARK = "*"


class NodeGrid(msgspec.Struct, frozen=True):
    node: Node
    #: the holder's job id per GPU index (None: free)
    slots: tuple[str | None, ...]
    #: jobs holding GPUs here whose indexes the backend does not know (Kubernetes), one per GPU
    unindexed: tuple[str, ...] = ()

    @property
    def free(self) -> int:
        return max(0, sum(1 for s in self.slots if s is None) - len(self.unindexed))

    @property
    def busy(self) -> int:
        return self.node.gpus - self.free

    @property
    def held(self) -> tuple[tuple[str | None, bool], ...]:
        """Per GPU from index 0, its holder's id (None: free) and whether that index is known:
        the holders whose indexes are unknown take the free GPUs from the first one on, so a
        full node shows full; more of them than free GPUs (a backend's inconsistency) are
        shown after, never dropped. The console's grid and `gpuq gpus` both show this."""
        unplaced = iter(self.unindexed)
        out: list[tuple[str | None, bool]] = []
        for job_id in self.slots:
            if job_id is not None:
                out.append((job_id, True))
            else:
                guess = next(unplaced, None)
                out.append((guess, False) if guess is not None else (None, True))
        out.extend((job_id, False) for job_id in unplaced)
        return tuple(out)


class GpuGrid(msgspec.Struct, frozen=True):
    cluster: str
    taken_at: datetime
    nodes: tuple[NodeGrid, ...]
    #: the jobs holding GPUs, by id (for the holder's user, tenant and class)
    holders: dict[str, Job]

    @property
    def busy(self) -> int:
        return sum(g.busy for g in self.nodes)

    @property
    def total(self) -> int:
        return sum(g.node.gpus for g in self.nodes)

    @property
    def width(self) -> int:
        """GPUs on the largest node (the grid's number of columns)."""
        return max((g.node.gpus for g in self.nodes), default=0)


def _matcher(patterns: Iterable[str], names: Iterable[str], cluster: str) -> Callable[[str], bool] | None:
    """Whether a node is wanted: exact names and shell globs (`gpu-0*`, `gpu-0[1-3]`). A pattern
    that matches no node is BadInput, so a typo never reads as an empty grid."""
    wanted = tuple(patterns)
    if not wanted:
        return None
    exact = {p for p in wanted if not any(ch in p for ch in "*?[")}
    globs = {p: re.compile(fnmatch.translate(p)) for p in wanted if p not in exact}
    known = set(names)
    for p in wanted:
        glob = globs.get(p)
        if glob is None and p not in known or glob is not None and not any(glob.match(n) for n in known):
            raise BadInput(f"--node: no node {'matches ' if glob else ''}{p} on cluster {cluster}")
    return lambda name: name in exact or any(g.match(name) for g in globs.values())


def gpu_grid(snapshot: Snapshot, *, nodes: Iterable[str] = (), free_only: bool = False) -> GpuGrid:
    """The grid, nodes in name order; `nodes` keeps only those (names or globs; BadInput for one
    that matches no node), `free_only` only nodes with a free GPU that take work."""
    slots = {n.name: [None] * n.gpus for n in snapshot.nodes}
    unindexed: dict[str, list[str]] = {}
    holders = {j.id: j for j in snapshot.jobs if j.holds_gpus}
    for job in holders.values():
        for node, indexes in job.allocation.items():
            grid = slots.get(node)
            if grid is None:
                continue
            for index in indexes:
                if index is not None and index < len(grid) and grid[index] is None:
                    grid[index] = job.id  # type: ignore[call-overload]
                else:
                    unindexed.setdefault(node, []).append(job.id)
    wanted = _matcher(nodes, slots, snapshot.cluster)
    grids = tuple(
        NodeGrid(n, tuple(slots[n.name]), tuple(unindexed.get(n.name, ())))
        for n in sorted(snapshot.nodes, key=lambda n: job_id_key(n.name))
        if wanted is None or wanted(n.name)
    )
    if free_only:
        grids = tuple(g for g in grids if g.free and g.node.state.takes_work)
    return GpuGrid(snapshot.cluster, snapshot.taken_at, grids, holders)
