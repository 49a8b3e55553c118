"""The console's GPU grid as cells: per GPU the holder's id and tone, per node its occupancy, and
the occupancy of each cluster and GPU pool (nodes of one GPU model: the model has no partition
per node).

The grid itself comes from `gpuq.views.gpus.gpu_grid`, as for `gpuq gpus`; this module only
shapes it for a screen that colours each holder by its tenant.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gpuq.model import Job
from gpuq.textsafe import cell_width, visible
from gpuq.views import pacing
from gpuq.views.gpus import UNPLACED_MARK, GpuGrid, NodeGrid
from gpuq.views.pacing import Pause, no_pause, paced

__all__ = [
    "DOWN_CELL",
    "FREE_CELL",
    "TENANT_TONES",
    "UNPLACED_MARK",
    "GpuCell",
    "GridWidths",
    "NodeRow",
    "Occupancy",
    "grid_matches",
    "grid_rows",
    "grid_widths",
    "node_row",
    "occupancy",
    "tenant_legend",
    "tenant_tone",
]

#: how many tenant tones a theme has (`tenant-0` … `tenant-7`)
TENANT_TONES = 8
#: a free GPU, and a GPU of a node that takes no work (down, draining)
FREE_CELL = "·"
DOWN_CELL = "×"


@functools.lru_cache(maxsize=4096)
def tenant_tone(tenant: str) -> str:
    """`tenant-N`, the same for a tenant in every run and on every host (a digest of the name, not
    Python's salted `hash`), so an operator learns a tenant's colour. (MD5 rather than CRC-32:
    it gives the demo's five tenants five colours; eight colours cannot keep every cluster's
    tenants apart, so the view lists which tenant has which.)"""
    digest = hashlib.md5(tenant.encode("utf-8", "surrogatepass"), usedforsecurity=False).digest()
    return f"tenant-{int.from_bytes(digest[:8], 'big') % TENANT_TONES}"


@dataclass(frozen=True, slots=True)
class GpuCell:
    #: the holder's id (with `UNPLACED_MARK` when its index is unknown), or a free/down mark
    text: str
    #: the holding job's id (None: free)
    job_id: str | None
    #: a style name: `tenant-N`, `idle` (free) or `down` (free on a node that takes no work)
    tone: str
    #: the holder's tenant (None: free, or a holder the snapshot does not list)
    tenant: str | None = None


@dataclass(frozen=True, slots=True)
class NodeRow:
    cluster: str
    node: str
    model: str
    state: str
    busy: int
    total: int
    #: one per GPU, by index from 0
    cells: tuple[GpuCell, ...]
    #: the node takes work (not down, not draining)
    takes_work: bool

    @property
    def occupancy(self) -> str:
        return f"{self.busy}/{self.total}"

    @property
    def state_tone(self) -> str | None:
        return None if self.takes_work else "down"


def _holder_cell(job: Job | None, job_id: str, placed: bool) -> GpuCell:
    text = job_id if placed else job_id + UNPLACED_MARK
    if job is None:
        return GpuCell(text, job_id, "idle")
    return GpuCell(text, job_id, tenant_tone(job.tenant), job.tenant)


def node_row(grid: NodeGrid, holders: dict[str, Job], cluster: str,
             made: dict[tuple[str, bool], GpuCell] | None = None) -> NodeRow:  # fmt: skip
    """A node's cells: each GPU's holder by index; the holders whose indexes are unknown take
    the free GPUs from the first one on, marked, so a node shows as many cells as GPUs. `made`:
    cells already made for other nodes' GPUs, by (job id, placed), reused (a job on 8 GPUs is
    one cell 8 times)."""
    made = {} if made is None else made

    def holder(job_id: str, placed: bool) -> GpuCell:
        cell = made.get((job_id, placed))
        if cell is None:
            cell = made[job_id, placed] = _holder_cell(holders.get(job_id), job_id, placed)
        return cell

    node = grid.node
    takes_work = node.state.takes_work
    free = GpuCell(FREE_CELL if takes_work else DOWN_CELL, None, "idle" if takes_work else "down")
    cells = [free if job_id is None else holder(job_id, placed) for job_id, placed in grid.held]
    return NodeRow(cluster, node.name, node.gpu_model or "-", node.state.value, grid.busy, node.gpus,
                   tuple(cells), takes_work)  # fmt: skip


def grid_rows(grid: GpuGrid, pause: Pause = no_pause) -> list[NodeRow]:
    """One row per node of the grid, in its (name) order; `pause` is called every `STEP // 8`
    nodes (gpuq/views/pacing.py: a node is about eight cells)."""
    made: dict[tuple[str, bool], GpuCell] = {}
    return [node_row(g, grid.holders, grid.cluster, made) for g in paced(grid.nodes, pause, max(1, pacing.STEP // 8))]


def grid_matches(row: NodeRow, needle: str) -> bool:
    """The console's `/` filter: a case-insensitive part of the node's name or of a holder's id
    (`needle` already lower-case)."""
    if needle in row.node.lower():
        return True
    return any(c.job_id is not None and needle in c.job_id.lower() for c in row.cells)


def tenant_legend(rows: Iterable[NodeRow]) -> list[tuple[str, str, int]]:
    """(tenant, tone, GPUs held) of every tenant holding a GPU in `rows`, most GPUs first: which
    colour is whose (eight colours are shared as soon as there are more tenants)."""
    held: dict[str, int] = {}
    for r in rows:
        for c in r.cells:
            if c.tenant is not None:
                held[c.tenant] = held.get(c.tenant, 0) + 1
    return [(t, tenant_tone(t), n) for t, n in sorted(held.items(), key=lambda kv: (-kv[1], kv[0]))]


@dataclass(frozen=True, slots=True)
class GridWidths:
    """Terminal columns of a grid's fixed columns over all its rows, and of its widest cell (every
    cell is as wide, so GPUs line up from node to node): measured once per refresh, off the
    screen's thread, not per line drawn."""

    cluster: int
    node: int
    state: int
    occupancy: int
    cell: int


def grid_widths(rows: Iterable[NodeRow], headers: Sequence[str] = ("CLUSTER", "NODE", "STATE", "BUSY")) -> GridWidths:
    """The widths of `rows` as shown (`visible` text), at least those of the `headers`."""
    cluster, node, state, occupancy_w = (cell_width(h) for h in headers)
    texts: set[str] = set()
    for r in rows:
        cluster = max(cluster, cell_width(visible(r.cluster)))
        node = max(node, cell_width(visible(r.node)))
        state = max(state, len(r.state))
        occupancy_w = max(occupancy_w, len(r.occupancy))
        texts.update(c.text for c in r.cells)
    cell = max((cell_width(visible(t)) for t in texts), default=1)
    return GridWidths(cluster, node, state, occupancy_w, cell)


@dataclass(frozen=True, slots=True)
class Occupancy:
    """Busy GPUs of a cluster or a pool, with those on nodes that take no work."""

    #: the cluster, or the pool's GPU model
    name: str
    busy: int
    total: int
    nodes: int
    #: GPUs (and nodes) that are down or draining
    down_gpus: int = 0
    down_nodes: int = 0

    @property
    def percent(self) -> int:
        return round(100 * self.busy / self.total) if self.total else 0

    @property
    def text(self) -> str:
        """`120/128 GPUs busy (94%)`, with `, 8 down on 1 node` when some are down."""
        out = f"{self.busy}/{self.total} GPUs busy ({self.percent}%)"
        if self.down_nodes:
            out += f", {self.down_gpus} down/drain on {self.down_nodes} node{'s' if self.down_nodes != 1 else ''}"
        return out


def _sum(name: str, rows: Iterable[NodeRow]) -> Occupancy:
    busy = total = nodes = down_gpus = down_nodes = 0
    for r in rows:
        busy, total, nodes = busy + r.busy, total + r.total, nodes + 1
        if not r.takes_work:
            down_gpus, down_nodes = down_gpus + r.total, down_nodes + 1
    return Occupancy(name, busy, total, nodes, down_gpus, down_nodes)


def occupancy(rows: Sequence[NodeRow]) -> tuple[list[Occupancy], dict[str, list[Occupancy]]]:
    """Per cluster (in first-seen order), and per cluster its pools (GPU model, by name)."""
    clusters: dict[str, list[NodeRow]] = {}
    for r in rows:
        clusters.setdefault(r.cluster, []).append(r)
    totals = [_sum(name, members) for name, members in clusters.items()]
    pools: dict[str, list[Occupancy]] = {}
    for name, members in clusters.items():
        models: dict[str, list[NodeRow]] = {}
        for r in members:
            models.setdefault(r.model, []).append(r)
        pools[name] = [_sum(model, models[model]) for model in sorted(models)]
    return totals, pools
