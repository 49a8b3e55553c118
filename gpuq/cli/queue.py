"""`gpuq queue`: the jobs, filtered and sorted, with waits and effective priorities.

`-o json` → `{"cluster", "taken_at", "unread", "jobs": [...]}`: each job is its `gpuq.snapshot/v1`
object plus `wait_s`, `effective_priority`, `preemptions` and `preemptions_24h` (a stable
interface); `unread` what the backend could not read (`gpuq.views.unread`; `[]`: nothing), which
the table says in a `note:` line.
`--group` groups a table's pods by owner (`gpuq.views.groups`); JSON carries each job's `owner`.
"""

from __future__ import annotations

from typing import Any

import click
import msgspec

from gpuq.cli.options import (
    App,
    complete_class,
    complete_list,
    complete_state,
    complete_tenant,
    complete_user,
    global_options,
    pass_app,
    watchable,
)
from gpuq.cli.render import emit_csv, emit_json_bytes, fmt_duration, fmt_time, print_table, say_unread
from gpuq.model import Job, Snapshot
from gpuq.timefmt import format_time, round_ms
from gpuq.views.changes import format_priority
from gpuq.views.columns import QUEUE
from gpuq.views.groups import GroupRow, group_rows
from gpuq.views.queue import SORT_KEYS, QueueFilter, QueueRow, QueueView, parse_sort, parse_states, queue_view
from gpuq.views.unread import unread_document

__all__ = ["TABLE_LIMIT", "queue"]

#: Rows drawn in a table unless --limit says otherwise.
TABLE_LIMIT = 500


class _Extras(msgspec.Struct, gc=False):
    """What `queue -o json` adds to each job's own object."""

    wait_s: float | None
    effective_priority: float
    preemptions: int
    preemptions_24h: int


def queue_json(view: QueueView, snapshot: Snapshot | None = None) -> bytearray:
    """The JSON document, each job's object encoded by msgspec and its extras spliced in: the
    job's closing brace becomes a comma and the extras' object follows without its own opening
    one (no dict per job: 200,000 of them cost more than the rest of the command). Handed over as
    the buffer it was built in: a copy into `bytes` is as large as the document."""
    enc = msgspec.json.Encoder()
    unread = [] if snapshot is None else unread_document(snapshot)
    head = enc.encode({"cluster": view.cluster, "taken_at": view.taken_at, "unread": unread})
    out = bytearray(head[:-1] + b',"jobs":[')
    encode_into = enc.encode_into
    for row in view.rows:
        encode_into(row.job, out, -1)
        brace = len(out) - 1
        wait = row.wait_s
        extras = _Extras(None if wait is None else round_ms(wait), row.effective_priority, row.preemptions,
                         row.preemptions_24h)  # fmt: skip
        encode_into(extras, out, brace)
        out[brace] = 44  # ","
        out += b","
    if view.rows:
        out[-1] = 93  # "]"
    else:
        out += b"]"
    out += b"}\n"
    return out


_CSV_HEADER = (
    "id", "name", "user", "tenant", "class", "state", "priority", "effective_priority", "gpus", "nodes", "wait_s",
    "submit_time", "start_time", "preemptions", "preemptions_24h", "exempt_until", "reason",
)  # fmt: skip


def _csv_row(row: QueueRow) -> list[Any]:
    job = row.job
    return [
        job.id, job.name, job.user, job.tenant, job.job_class, job.state.value, job.priority,
        row.effective_priority, job.gpus, " ".join(job.nodes), None if row.wait_s is None else round_ms(row.wait_s),
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
    if job.conflict:  # a placement the backend showed for a moment (gpuq.model.placement)
        notes.append(f"conflict: {job.conflict}")
    return ", ".join(notes)


_STATE_STYLES = {"STATE": {"pending": "yellow", "running": "green", "suspended": "magenta"}}


#: before each pod of a group, under its group's line
POD_MARK = "  └ "


def _cells(row: QueueRow, now: float, mark: str = "") -> tuple[str | tuple[str, ...], ...]:
    job = row.job
    return (
        mark + job.id, job.name, job.user, job.tenant, job.job_class, job.state.value, str(job.gpus),
        str(job.priority), format_priority(row.effective_priority), fmt_duration(row.wait_s),
        f"{row.preemptions_24h}/{row.preemptions}" if row.preemptions else "", tuple(job.nodes), _note(job, now),
    )  # fmt: skip


def _group_cells(group: GroupRow) -> tuple[str | tuple[str, ...], ...]:
    return (
        group.owner, f"{group.pods} pods", group.user or "", group.tenant or "", group.job_class or "",
        group.states, str(group.gpus), "", format_priority(group.effective_priority), fmt_duration(group.wait_s),
        f"{group.preemptions_24h}/{group.preemptions}" if group.preemptions else "", (), "",
    )  # fmt: skip


def _table(app: App, view: QueueView, snapshot: Snapshot, group: bool = False) -> None:
    rows, total = view.rows, view.total
    shown = f"{total} jobs" if len(rows) == total else f"first {len(rows)} of {total} jobs (--limit 0 for all)"
    now = view.now
    if group:
        cells, members = [], 0
        for item in group_rows(rows):
            if isinstance(item, GroupRow):
                cells.append(_group_cells(item))
                members = item.pods  # (its pods follow it)
            else:
                cells.append(_cells(item, now, POD_MARK if members else ""))
                members = max(0, members - 1)
    else:
        cells = [_cells(row, now) for row in rows]
    print_table(app, QUEUE, cells, title=f"{view.cluster} at {fmt_time(view.taken_at)}: {shown}",
                styles=_STATE_STYLES)  # fmt: skip
    say_unread(app, snapshot)


@click.command("queue")
@click.option("-u", "--user", "users", multiple=True, metavar="USER", shell_complete=complete_user,
              help="Only jobs of USER (repeatable).")  # fmt: skip
@click.option("--tenant", "tenants", multiple=True, metavar="TENANT", shell_complete=complete_tenant,
              help="Only jobs of TENANT (repeatable).")  # fmt: skip
@click.option("--class", "classes", multiple=True, metavar="CLASS", shell_complete=complete_class,
              help="Only jobs of CLASS (repeatable).")  # fmt: skip
@click.option(
    "-t",
    "--state",
    "states",
    multiple=True,
    metavar="STATE[,STATE]",
    shell_complete=complete_state,
    help="Only jobs in these states, or 'all' (default: pending,running,suspended,completing); "
    "Slurm's codes work too (PD, R, S, CG, CD, F, ...).",
)
@click.option("--min-gpus", type=click.IntRange(min=0), default=0, help="Only jobs with at least N GPUs.")
@click.option(
    "--sort",
    "sort",
    multiple=True,
    metavar="KEY[,KEY]",
    shell_complete=complete_list([*sorted(SORT_KEYS), *(f"-{k}" for k in sorted(SORT_KEYS))]),
    help=f"Sort by these keys in turn (repeatable), -KEY descending: {', '.join(sorted(SORT_KEYS))} "
    "(class: by class rank, highest first). Default: -effective.",
)
@click.option("--reverse", is_flag=True, help="Reverse the sort order.")
@click.option(
    "--group",
    is_flag=True,
    help="In a table, the pods of one owner (Job, JobSet, PyTorchJob...) under one line for them all.",
)
@click.option(
    "--limit",
    type=click.IntRange(min=0),
    help=f"Show only the first N jobs; 0 = all (default: all for json/csv, {TABLE_LIMIT} for a table).",
)
@global_options
@watchable
@pass_app
def queue(
    app: App,
    users: tuple[str, ...],
    tenants: tuple[str, ...],
    classes: tuple[str, ...],
    states: tuple[str, ...],
    min_gpus: int,
    sort: tuple[str, ...],
    reverse: bool,
    group: bool,
    limit: int | None,
) -> None:
    """List jobs with wait, effective priority and preemption counts (24h/total)."""
    wanted = QueueFilter(frozenset(users), frozenset(tenants), frozenset(classes), parse_states(states), min_gpus,
                         parse_sort(sort), reverse)  # fmt: skip
    snapshot = app.snapshot(ledger=not wanted.only_queued)
    if limit is None and app.output == "table":
        limit = TABLE_LIMIT  # a terminal cannot show 200,000 rows usefully; json/csv get them all
    view = queue_view(app.cluster, snapshot, wanted, limit=limit)
    app.keep(view)
    if app.output == "json":
        emit_json_bytes(queue_json(view, snapshot))
    elif app.output == "csv":
        emit_csv(_CSV_HEADER, (_csv_row(r) for r in view.rows))
    else:
        _table(app, view, snapshot, group)
