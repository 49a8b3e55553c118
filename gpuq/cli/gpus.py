"""`gpuq gpus`: per-node GPU grid — which job holds each GPU.

`-o json` → `{"cluster", "taken_at", "nodes": [{"name", "gpus", "gpu_model", "state", "free",
"slots": [{"index", "job"}], "unindexed": [job ids]}]}`; `unindexed` lists jobs whose GPU indexes
the backend does not know (Kubernetes), one entry per GPU.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import click

from gpuq.cli.options import App, global_options, pass_app
from gpuq.cli.render import emit_csv, emit_json, make_table, print_table
from gpuq.timefmt import format_time
from gpuq.views.gpus import GpuGrid, gpu_grid

__all__ = ["gpus"]


def _json(grid: GpuGrid) -> dict[str, Any]:
    return {
        "cluster": grid.cluster,
        "taken_at": format_time(grid.taken_at),
        "nodes": [
            {
                "name": g.node.name,
                "gpus": g.node.gpus,
                "gpu_model": g.node.gpu_model,
                "state": g.node.state.value,
                "free": g.free,
                "slots": [{"index": i, "job": job} for i, job in enumerate(g.slots)],
                "unindexed": list(g.unindexed),
            }
            for g in grid.nodes
        ],
    }


def _csv_rows(grid: GpuGrid) -> Iterator[list[Any]]:
    holders = grid.holders
    for g in grid.nodes:
        cells = [*((i, job_id) for i, job_id in enumerate(g.slots)), *((None, job_id) for job_id in g.unindexed)]
        for index, job_id in cells:
            job = holders.get(job_id) if job_id else None
            yield [g.node.name, index, job_id, job and job.user, job and job.tenant, job and job.job_class]


def _table(app: App, grid: GpuGrid, total_gpus: int) -> None:
    width = grid.width
    table = make_table(
        f"{grid.cluster} at {format_time(grid.taken_at)}: {grid.busy}/{total_gpus} GPUs busy",
        ["NODE", "MODEL", "STATE", "FREE", *[str(i) for i in range(width)], "UNPLACED"],
        right=("FREE",),
    )
    for g in grid.nodes:
        cells = [job if job is not None else "[dim]·[/]" for job in g.slots]
        cells += [""] * (width - len(cells))
        state = g.node.state.value
        if not g.node.state.takes_work:
            state = f"[red]{state}[/]"
        table.add_row(g.node.name, g.node.gpu_model or "-", state, str(g.free), *cells, " ".join(g.unindexed))
    print_table(app, table)


@click.command("gpus")
@click.option("--node", "nodes", multiple=True, metavar="NODE", help="Only these nodes (repeatable).")
@global_options
@pass_app
def gpus(app: App, nodes: tuple[str, ...]) -> None:
    """Per-node GPU grid: which job holds each GPU."""
    snapshot = app.snapshot(ledger=False)  # GPU holders only: no finished jobs, no ledger
    grid = gpu_grid(snapshot, nodes=nodes)
    if app.output == "json":
        emit_json(_json(grid))
    elif app.output == "csv":
        emit_csv(("node", "gpu", "job", "user", "tenant", "class"), _csv_rows(grid))
    else:
        _table(app, grid, snapshot.total_gpus)
