"""`gpuq gpus`: per-node GPU grid — which job holds each GPU.

`-o json` → `{"cluster", "taken_at", "nodes": [{"name", "gpus", "gpu_model", "state", "free",
"slots": [{"index", "job"}], "unindexed": [job ids]}]}`; `unindexed` lists jobs whose GPU indexes
the backend does not know (Kubernetes), one entry per GPU.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import click

from gpuq.cli.options import App, global_options, pass_app
from gpuq.cli.render import emit_csv, emit_json, make_table, natural_key, print_table
from gpuq.model import Job, Node, Snapshot
from gpuq.timefmt import format_time

__all__ = ["NodeGrid", "gpu_grid", "gpus"]


@dataclass(slots=True)
class NodeGrid:
    node: Node
    slots: list[str | None]
    unindexed: list[str] = field(default_factory=list)

    @property
    def free(self) -> int:
        return sum(1 for s in self.slots if s is None) - len(self.unindexed)


def gpu_grid(snapshot: Snapshot) -> list[NodeGrid]:
    grids = {n.name: NodeGrid(n, [None] * n.gpus) for n in snapshot.nodes}
    holders: list[Job] = [j for j in snapshot.jobs if j.holds_gpus]
    for job in holders:
        for node, indexes in job.allocation.items():
            grid = grids.get(node)
            if grid is None:
                continue
            for index in indexes:
                if index is not None and index < len(grid.slots) and grid.slots[index] is None:
                    grid.slots[index] = job.id
                else:
                    grid.unindexed.append(job.id)
    return sorted(grids.values(), key=lambda g: natural_key(g.node.name))


def _json(snapshot: Snapshot, grids: list[NodeGrid]) -> dict[str, Any]:
    return {
        "cluster": snapshot.cluster,
        "taken_at": format_time(snapshot.taken_at),
        "nodes": [
            {
                "name": g.node.name,
                "gpus": g.node.gpus,
                "gpu_model": g.node.gpu_model,
                "state": g.node.state.value,
                "free": max(0, g.free),
                "slots": [{"index": i, "job": job} for i, job in enumerate(g.slots)],
                "unindexed": g.unindexed,
            }
            for g in grids
        ],
    }


def _table(app: App, snapshot: Snapshot, grids: list[NodeGrid]) -> None:
    width = max((g.node.gpus for g in grids), default=0)
    busy = sum(g.node.gpus - max(0, g.free) for g in grids)
    table = make_table(
        f"{snapshot.cluster} at {format_time(snapshot.taken_at)}: {busy}/{snapshot.total_gpus} GPUs busy",
        ["NODE", "MODEL", "STATE", "FREE", *[str(i) for i in range(width)], "UNPLACED"],
        right=("FREE",),
    )
    for g in grids:
        cells = [job if job is not None else "[dim]·[/]" for job in g.slots]
        cells += [""] * (width - len(cells))
        state = g.node.state.value
        if not g.node.state.takes_work:
            state = f"[red]{state}[/]"
        table.add_row(g.node.name, g.node.gpu_model or "-", state, str(max(0, g.free)), *cells, " ".join(g.unindexed))
    print_table(app, table)


@click.command("gpus")
@click.option("--node", "nodes", multiple=True, metavar="NODE", help="Only these nodes (repeatable).")
@global_options
@pass_app
def gpus(app: App, nodes: tuple[str, ...]) -> None:
    """Per-node GPU grid: which job holds each GPU."""
    snapshot = app.cluster.snapshot(ledger=False)  # GPU holders only: no finished jobs, no ledger
    grids = gpu_grid(snapshot)
    if nodes:
        unknown = sorted(set(nodes) - {g.node.name for g in grids})
        if unknown:
            raise click.BadParameter(f"no node {unknown[0]} on cluster {snapshot.cluster}", param_hint="--node")
        grids = [g for g in grids if g.node.name in set(nodes)]
    if app.output == "json":
        emit_json(_json(snapshot, grids))
    elif app.output == "csv":
        jobs = {j.id: j for j in snapshot.jobs if j.holds_gpus}

        def rows() -> Any:
            for g in grids:
                for index, job_id in enumerate(g.slots):
                    job = jobs.get(job_id) if job_id else None
                    yield [g.node.name, index, job_id, job and job.user, job and job.tenant, job and job.job_class]
                for job_id in g.unindexed:
                    job = jobs.get(job_id)
                    yield [g.node.name, None, job_id, job and job.user, job and job.tenant, job and job.job_class]

        emit_csv(("node", "gpu", "job", "user", "tenant", "class"), rows())
    else:
        _table(app, snapshot, grids)
