"""`gpuq gpus --local`: the GPUs of the host gpuq runs on (NVML), with the processes on each and
the Slurm job or pod each runs in.

`-o json` → `{"host", "available", "reason", "read_at", "cluster", "unchecked", "gpus": [{"index",
"uuid", "name", "utilisation_pct", "memory_used_bytes", "memory_total_bytes", "temperature_c",
"error", "processes": [{"pid", "command", "used_memory_bytes", "job_id", "pod_uid", "in_cluster",
"user"}]}]}`; `cluster` is the cluster the job ids were checked against (null: not checked) and
`in_cluster` whether it has the job. Without NVML (no driver): exit 0, one line on stderr, no GPU
columns in a table, `"available": false` in JSON, a CSV header alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import click

from gpuq.cli.options import App
from gpuq.cli.render import emit_csv, emit_json, fmt_time, print_table, say, warn
from gpuq.errors import GpuqError
from gpuq.service import HostGpuReport, host_gpus
from gpuq.timefmt import format_time
from gpuq.views.columns import HOST_GPUS
from gpuq.views.hostgpus import HostGpuView, host_gpu_view

if TYPE_CHECKING:
    from gpuq.model import Snapshot

__all__ = ["CSV_HEADER", "show_local_gpus"]

CSV_HEADER = ("host", "gpu", "uuid", "name", "utilisation_pct", "memory_used_bytes", "memory_total_bytes",
              "temperature_c", "error", "pid", "job", "pod", "user", "in_cluster", "process_memory_bytes",
              "command")  # fmt: skip
_TOLD = "gpuq.nvml.told"


def _json(view: HostGpuView, reason: str | None) -> dict[str, Any]:
    return {
        "host": view.host,
        "available": view.available,
        "reason": reason,
        "read_at": format_time(view.read_at),
        "cluster": view.cluster,
        "unchecked": view.unchecked,
        "gpus": [
            {
                "index": r.gpu.index,
                "uuid": r.gpu.uuid or None,
                "name": r.gpu.name or None,
                "utilisation_pct": r.gpu.utilisation_pct,
                "memory_used_bytes": r.gpu.memory_used_bytes,
                "memory_total_bytes": r.gpu.memory_total_bytes,
                "temperature_c": r.gpu.temperature_c,
                "error": r.gpu.error,
                "processes": [
                    {
                        "pid": p.process.pid,
                        "command": p.process.command,
                        "used_memory_bytes": p.process.used_memory_bytes,
                        "job_id": p.process.job_id,
                        "pod_uid": p.process.pod_uid,
                        "in_cluster": p.in_cluster,
                        "user": p.user,
                    }
                    for p in r.processes
                ],
            }
            for r in view.rows
        ],
    }


def _csv_rows(view: HostGpuView) -> Iterator[list[Any]]:
    for r in view.rows:
        g = r.gpu
        gpu = [view.host, g.index, g.uuid, g.name, g.utilisation_pct, g.memory_used_bytes, g.memory_total_bytes,
               g.temperature_c, g.error]  # fmt: skip
        if not r.processes:
            yield [*gpu, *[None] * 7]
        for p in r.processes:
            yield [*gpu, p.process.pid, p.process.job_id, p.process.pod_uid, p.user,
                   None if p.in_cluster is None else str(p.in_cluster).lower(), p.process.used_memory_bytes,
                   p.process.command]  # fmt: skip


def _table(app: App, view: HostGpuView) -> None:
    rows = [
        (
            str(r.gpu.index),
            r.gpu.name or "-",
            r.utilisation,
            r.memory,
            r.temperature,
            tuple(p.label for p in r.processes),
            r.gpu.error or "",
            r.gpu.uuid or "-",
        )
        for r in view.rows
    ]
    title = (f"{view.host}: {len(view.rows)} GPUs, {view.busy} with processes "
             f"(NVML at {fmt_time(view.read_at)})")  # fmt: skip
    print_table(app, HOST_GPUS, rows, title=title)


def _snapshot_for(app: App, report: HostGpuReport) -> Snapshot | None:
    """The cluster's snapshot when a process names a Slurm job (to check its id and find its user);
    None when none does or the cluster cannot be read (said in a warning: the GPUs still show)."""
    if not any(p.job_id for g in report.gpus for p in g.processes):
        return None
    try:
        return app.snapshot(ledger=False)
    except GpuqError as exc:
        _tell_once(f"job ids not checked against the cluster: {exc}")
        return None


def _tell_once(message: str) -> None:
    """A warning on stderr, once per invocation (not once per `--watch` frame)."""
    told: set[str] = click.get_current_context().find_root().meta.setdefault(_TOLD, set())
    if message not in told:
        told.add(message)
        warn(message)


def show_local_gpus(app: App) -> None:
    """Print this host's GPUs in the chosen output format."""
    report = host_gpus()
    view = host_gpu_view(report, _snapshot_for(app, report))
    for message in (view.note, view.unchecked):
        if message is not None:
            _tell_once(message)
    if app.output == "json":
        emit_json(_json(view, report.reason))
    elif app.output == "csv":
        emit_csv(CSV_HEADER, _csv_rows(view))
    elif view.available:
        _table(app, view)
    elif app.watching:  # a frame of its own says why it is empty
        say(app, view.note or "")
