"""`gpuq gpus`: per-node GPU grid — which job holds each GPU.

`-o json` → `{"cluster", "taken_at", "unread": [{"resource", "reason", "effect", "note"}],
"nodes": [{"name", "gpus", "gpu_model", "state", "free", "slots": [{"index", "job"}],
"unindexed": [job ids]}]}`; `unindexed` lists jobs whose GPU indexes the backend does not know
(Kubernetes), one entry per GPU; `unread` what the backend could not read (`[]`: nothing), and the
table says it in a `note:` line.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import click

from gpuq.cli.options import App, global_options, pass_app, watchable
from gpuq.cli.render import emit_csv, emit_json, fmt_time, print_table, say_unread
from gpuq.model import Snapshot
from gpuq.timefmt import format_time
from gpuq.views.columns import GPUS
from gpuq.views.gpus import UNPLACED_MARK, GpuGrid, gpu_grid
from gpuq.views.unread import unread_document

__all__ = ["gpus"]


def _json(grid: GpuGrid, snapshot: Snapshot) -> dict[str, Any]:
    return {
        "cluster": grid.cluster,
        "taken_at": format_time(grid.taken_at),
        "unread": unread_document(snapshot),
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


#: a free GPU in the grid
FREE = "."
_STYLES = {"GPUS": {FREE: "dim"}, "STATE": {"down": "red", "drain": "red"}}


def _cell(job_id: str | None, placed: bool) -> str:
    if job_id is None:
        return FREE
    return job_id if placed else job_id + UNPLACED_MARK


def _table(app: App, grid: GpuGrid, snapshot: Snapshot) -> None:
    """One line per node: each GPU, by index from 0, as its job's id or `.` when free (a node's
    cells go on to the next lines, under the first, where they do not fit). A holder whose GPU
    indexes are unknown takes free GPUs, marked `*`, as in the console (`NodeGrid.held`)."""
    rows = [
        (g.node.name, g.node.gpu_model or "-", g.node.state.value, str(g.free),
         tuple(_cell(job, placed) for job, placed in g.held), g.unindexed)  # fmt: skip
        for g in grid.nodes
    ]
    title = f"{grid.cluster} at {fmt_time(grid.taken_at)}: {grid.busy}/{snapshot.total_gpus} GPUs busy"
    print_table(app, GPUS, rows, title=title, styles=_STYLES)
    say_unread(app, snapshot)


@click.command("gpus")
@click.option("--node", "nodes", multiple=True, metavar="NODE",
              help="Only these nodes: names or globs such as 'gpu-0*' (repeatable).")  # fmt: skip
@click.option("--free", "free_only", is_flag=True, help="Only nodes with a free GPU that take work.")
@click.option("--local", is_flag=True,
              help="This host's own GPUs (NVML): load, memory, temperature, processes and their jobs.")  # fmt: skip
@global_options
@watchable
@pass_app
def gpus(app: App, nodes: tuple[str, ...], free_only: bool, local: bool) -> None:
    """Per-node GPU grid: which job holds each GPU.

    One line per node; under GPUS each GPU from index 0 shows the job holding it, or '.' when
    free (a node with more GPUs than fit goes on under them). UNPLACED: jobs whose GPU indexes
    the backend does not know, one entry per GPU; under GPUS they hold free GPUs, marked '*'.

    --local: the GPUs of this host instead, read through NVML, with each process on them and the
    Slurm job or pod it runs in.
    """
    if local:
        if nodes or free_only:
            raise click.UsageError("--local shows this host's GPUs: it takes neither --node nor --free")
        from gpuq.cli.localgpus import show_local_gpus

        show_local_gpus(app)
        return
    snapshot = app.snapshot(ledger=False)  # GPU holders only: no finished jobs, no ledger
    grid = gpu_grid(snapshot, nodes=nodes, free_only=free_only)
    if app.output == "json":
        emit_json(_json(grid, snapshot))
    elif app.output == "csv":
        emit_csv(("node", "gpu", "job", "user", "tenant", "class"), _csv_rows(grid))
    else:
        _table(app, grid, snapshot)
