"""The GPU grid: per node, which job holds each GPU (and those whose indexes are unknown)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from gpuq.errors import BadInput
from gpuq.model import Job, Node, Snapshot, job_id_key

__all__ = ["GpuGrid", "NodeGrid", "gpu_grid"]


@dataclass(frozen=True, slots=True)
class NodeGrid:
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


@dataclass(frozen=True, slots=True)
class GpuGrid:
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


def gpu_grid(snapshot: Snapshot, *, nodes: Iterable[str] = ()) -> GpuGrid:
    """The grid, nodes in name order; `nodes` keeps only those (BadInput for an unknown one)."""
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
    wanted = set(nodes)
    if wanted:
        unknown = sorted(wanted - set(slots), key=job_id_key)
        if unknown:
            raise BadInput(f"--node: no node {unknown[0]} on cluster {snapshot.cluster}")
    grids = tuple(
        NodeGrid(n, tuple(slots[n.name]), tuple(unindexed.get(n.name, ())))
        for n in sorted(snapshot.nodes, key=lambda n: job_id_key(n.name))
        if not wanted or n.name in wanted
    )
    return GpuGrid(snapshot.cluster, snapshot.taken_at, grids, holders)
