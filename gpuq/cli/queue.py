"""`gpuq queue`: the jobs, filtered and sorted, with waits and effective priorities.

`-o json` → `{"cluster", "taken_at", "jobs": [...]}`: each job is its `gpuq.snapshot/v1` object
plus `wait_s`, `effective_priority`, `preemptions` and `preemptions_24h` (a stable interface).
"""

from __future__ import annotations

from typing import Any

import click
import msgspec

from gpuq.cli.options import App, global_options, pass_app
from gpuq.cli.render import emit_csv, emit_json_bytes, fmt_duration, make_table, print_table
from gpuq.model import Job, JobState
from gpuq.timefmt import format_time
from gpuq.views.queue import SORT_KEYS, QueueFilter, QueueRow, QueueView, parse_states, queue_view

__all__ = ["TABLE_LIMIT", "queue"]

#: Rows drawn in a table unless --limit says otherwise.
TABLE_LIMIT = 500


class _Extras(msgspec.Struct, gc=False):
    """What `queue -o json` adds to each job's own object."""

    wait_s: float | None
    effective_priority: float
    preemptions: int
    preemptions_24h: int


def queue_json(view: QueueView) -> bytes:
    """The JSON document, each job's object encoded by msgspec and its extras spliced in: the
    job's closing brace becomes a comma and the extras' object follows without its own opening
    one (no dict per job: 200,000 of them cost more than the rest of the command)."""
    enc = msgspec.json.Encoder()
    head = enc.encode({"cluster": view.cluster, "taken_at": view.taken_at})
    out = bytearray(head[:-1] + b',"jobs":[')
    encode_into = enc.encode_into
    for job, wait, effective, preemptions, recent, _ in view.rows:
        encode_into(job, out, -1)
        brace = len(out) - 1
        encode_into(_Extras(None if wait is None else round(wait, 3), effective, preemptions, recent), out, brace)
        out[brace] = 44  # ","
        out += b","
    if view.rows:
        out[-1] = 93  # "]"
    else:
        out += b"]"
    out += b"}\n"
    return bytes(out)


_CSV_HEADER = (
    "id", "name", "user", "tenant", "class", "state", "priority", "effective_priority", "gpus", "nodes", "wait_s",
    "submit_time", "start_time", "preemptions", "preemptions_24h", "exempt_until", "reason",
)  # fmt: skip


def _csv_row(row: QueueRow) -> list[Any]:
    job = row.job
    return [
        job.id, job.name, job.user, job.tenant, job.job_class, job.state.value, job.priority,
        row.effective_priority, job.gpus, " ".join(job.nodes), None if row.wait_s is None else round(row.wait_s, 3),
        format_time(job.submit_time), None if job.start_time is None else format_time(job.start_time),
        row.preemptions, row.preemptions_24h, None if job.exempt_until is None else format_time(job.exempt_until),
        job.reason,
    ]  # fmt: skip


def _note(job: Job, now: float) -> str:
    notes = []
    if job.urgent:
        notes.append("urgent")
    if job.exempt_until is not None and job.exempt_at(now):
        notes.append(f"exempt {fmt_duration(job.exempt_until.timestamp() - now)}")
    if job.reason:
        notes.append(job.reason)
    return ", ".join(notes)


def _table(app: App, view: QueueView) -> None:
    rows, total = view.rows, view.total
    shown = f"{total} jobs" if len(rows) == total else f"first {len(rows)} of {total} jobs (--limit 0 for all)"
    table = make_table(
        f"{view.cluster} at {format_time(view.taken_at)}: {shown}",
        ["ID", "NAME", "USER", "TENANT", "CLASS", "STATE", "GPUS", "PRIO", "EFF", "WAIT", "PREEMPT", "NODES", "NOTE"],
        right=("GPUS", "PRIO", "EFF", "WAIT", "PREEMPT"),
    )
    styles = {JobState.PENDING: "yellow", JobState.RUNNING: "green", JobState.SUSPENDED: "magenta"}
    for row in rows:
        job = row.job
        state = job.state.value
        table.add_row(
            job.id, job.name, job.user, job.tenant, job.job_class,
            f"[{styles[job.state]}]{state}[/]" if job.state in styles else state,
            str(job.gpus), str(job.priority), f"{row.effective_priority:g}", fmt_duration(row.wait_s),
            f"{row.preemptions_24h}/{row.preemptions}" if row.preemptions else "", ",".join(job.nodes),
            _note(job, view.now),
        )  # fmt: skip
    print_table(app, table)


@click.command("queue")
@click.option("--user", "users", multiple=True, metavar="USER", help="Only jobs of USER (repeatable).")
@click.option("--tenant", "tenants", multiple=True, metavar="TENANT", help="Only jobs of TENANT (repeatable).")
@click.option("--class", "classes", multiple=True, metavar="CLASS", help="Only jobs of CLASS (repeatable).")
@click.option(
    "--state",
    "states",
    multiple=True,
    metavar="STATE[,STATE]",
    help="Only jobs in these states, or 'all' (default: pending,running,suspended,completing).",
)
@click.option("--min-gpus", type=click.IntRange(min=0), default=0, help="Only jobs with at least N GPUs.")
@click.option("--sort", type=click.Choice(sorted(SORT_KEYS)), default="effective", show_default=True, help="Sort key.")
@click.option("--reverse", is_flag=True, help="Reverse the sort order.")
@click.option(
    "--limit",
    type=click.IntRange(min=0),
    help=f"Show only the first N jobs; 0 = all (default: all for json/csv, {TABLE_LIMIT} for a table).",
)
@global_options
@pass_app
def queue(
    app: App,
    users: tuple[str, ...],
    tenants: tuple[str, ...],
    classes: tuple[str, ...],
    states: tuple[str, ...],
    min_gpus: int,
    sort: str,
    reverse: bool,
    limit: int | None,
) -> None:
    """List jobs with wait, effective priority and preemption counts (24h/total)."""
    wanted = QueueFilter(frozenset(users), frozenset(tenants), frozenset(classes), parse_states(states), min_gpus,
                         sort, reverse)  # fmt: skip
    snapshot = app.snapshot(ledger=not wanted.only_queued)
    if limit is None and app.output == "table":
        limit = TABLE_LIMIT  # a terminal cannot show 200,000 rows usefully; json/csv get them all
    view = queue_view(app.cluster, snapshot, wanted, limit=limit)
    if app.output == "json":
        emit_json_bytes(queue_json(view))
    elif app.output == "csv":
        emit_csv(_CSV_HEADER, (_csv_row(r) for r in view.rows))
    else:
        _table(app, view)
