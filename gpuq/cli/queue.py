"""`gpuq queue`: the jobs, filtered and sorted, with waits and effective priorities.

`-o json` → `{"cluster", "taken_at", "jobs": [...]}`: each job is its `gpuq.snapshot/v1` object
plus `wait_s`, `effective_priority`, `preemptions` and `preemptions_24h` (a stable interface).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import click

from gpuq.cli.options import App, global_options, pass_app
from gpuq.cli.render import emit_csv, emit_json, fmt_duration, make_table, natural_key, print_table
from gpuq.model import DAY_S, QUEUED_STATES, Job, JobClass, JobState, Snapshot
from gpuq.snapshot_io import job_to_dict
from gpuq.timefmt import format_time

__all__ = ["TABLE_LIMIT", "QueueRow", "queue", "queue_rows"]

#: Rows drawn in a table unless --limit says otherwise.
TABLE_LIMIT = 500
_STATE_NAMES = [s.value for s in JobState]


class QueueRow(NamedTuple):
    """A job with what every format shows beside it (a NamedTuple: 200,000 are built per call)."""

    job: Job
    wait_s: float | None
    effective_priority: float
    preemptions: int
    preemptions_24h: int


# Each key sorts in its natural direction (largest priority/wait first); --reverse flips it.
_SORTS: dict[str, tuple[Callable[[QueueRow], Any], bool]] = {
    "effective": (lambda r: (r.effective_priority, -r.job.submit_time), True),
    "priority": (lambda r: (r.job.priority, -r.job.submit_time), True),
    "wait": (lambda r: r.wait_s if r.wait_s is not None else -1.0, True),
    "gpus": (lambda r: r.job.gpus, True),
    "submit": (lambda r: r.job.submit_time, False),
    "preemptions": (lambda r: (r.preemptions_24h, r.preemptions), True),
    "id": (lambda r: natural_key(r.job.id), False),
    "user": (lambda r: (r.job.user, natural_key(r.job.id)), False),
    "tenant": (lambda r: (r.job.tenant, natural_key(r.job.id)), False),
    "class": (lambda r: (r.job.job_class, natural_key(r.job.id)), False),
    "state": (lambda r: (_STATE_NAMES.index(r.job.state.value), natural_key(r.job.id)), False),
}


def _submit_time(row: QueueRow) -> float:
    return row.job.submit_time


_effective = operator.itemgetter(2)


def _parse_states(values: Sequence[str]) -> frozenset[JobState] | None:
    names = [v.strip().lower() for value in values for v in value.split(",") if v.strip()]
    if not names:
        return QUEUED_STATES  # what is waiting or holding GPUs
    if "all" in names:
        return None
    unknown = [n for n in names if n not in _STATE_NAMES]
    if unknown:
        raise click.BadParameter(
            f"unknown state {unknown[0]!r} (one of {', '.join(_STATE_NAMES)}, or all)", param_hint="--state"
        )
    return frozenset(JobState(n) for n in names)


def queue_rows(
    app: App,
    snapshot: Snapshot,
    *,
    users: Sequence[str] = (),
    tenants: Sequence[str] = (),
    classes: Sequence[str] = (),
    states: frozenset[JobState] | None = QUEUED_STATES,
    min_gpus: int = 0,
    sort: str = "effective",
    reverse: bool = False,
) -> list[QueueRow]:
    """Filtered, sorted rows with the derived fields every output format shows."""
    from gpuq.policy.rules import effective_priority

    cluster = app.cluster
    policy = cluster.policy
    now = cluster.now(snapshot)
    day_ago = now - DAY_S
    user_set, tenant_set, class_set = set(users), set(tenants), set(classes)
    rows: list[QueueRow] = []
    append = rows.append
    resolved: dict[str, JobClass] = {}

    def class_of(name: str) -> JobClass:
        resolved[name] = cluster.resolved_class(snapshot, name)
        return resolved[name]

    pending = JobState.PENDING
    # Inlined wait and priority arithmetic (Job.wait_s, rules.effective_priority for the common
    # cases): this loop runs once per job, 200,000 times on a large cluster.
    for job in snapshot.jobs:
        state = job.state
        if states is not None and state not in states:
            continue
        if (user_set and job.user not in user_set) or (tenant_set and job.tenant not in tenant_set):
            continue
        if (class_set and job.job_class not in class_set) or job.gpus < min_gpus:
            continue
        times = job.preemption_times
        since = job.eligible_time if job.eligible_time is not None else job.submit_time
        if job.start_time is not None:
            wait: float | None = max(0.0, job.start_time - since)
        elif state is pending:
            wait = max(0.0, now - since)
        else:
            wait = None
        cls = resolved.get(job.job_class) or class_of(job.job_class)
        max_wait = cls.max_wait_s
        if state is pending or job.urgent or (max_wait is not None and wait is not None and wait > max_wait):
            # Pending jobs age; started ones keep what they earned (rules.effective_priority).
            effective = effective_priority(job, cls, policy, now)
        else:
            effective = float(job.priority)
        append(
            QueueRow(
                job,
                wait,
                effective,
                len(times),
                job.preemptions_since(day_ago, now) if times else 0,
            )
        )
    if sort == "effective":
        # Same order as the "effective" key, (effective desc, submit asc), in two stable passes on
        # plain floats: no key tuple per row, which matters at 200,000 rows.
        rows.sort(key=_submit_time, reverse=reverse)
        rows.sort(key=_effective, reverse=not reverse)
    else:
        key, descending = _SORTS[sort]
        rows.sort(key=key, reverse=descending != reverse)
    return rows


def _json_job(row: QueueRow) -> dict[str, Any]:
    job, wait, effective, preemptions, preemptions_24h = row  # unpacking beats 4 attribute reads
    doc = job_to_dict(job)
    doc["wait_s"] = None if wait is None else round(wait, 3)
    doc["effective_priority"] = effective
    doc["preemptions"] = preemptions
    doc["preemptions_24h"] = preemptions_24h
    return doc


_CSV_HEADER = (
    "id",
    "name",
    "user",
    "tenant",
    "class",
    "state",
    "priority",
    "effective_priority",
    "gpus",
    "nodes",
    "wait_s",
    "submit_time",
    "start_time",
    "preemptions",
    "preemptions_24h",
    "exempt_until",
    "reason",
)


def _csv_row(row: QueueRow) -> list[Any]:
    job = row.job
    return [
        job.id,
        job.name,
        job.user,
        job.tenant,
        job.job_class,
        job.state.value,
        job.priority,
        row.effective_priority,
        job.gpus,
        " ".join(job.nodes),
        None if row.wait_s is None else round(row.wait_s, 3),
        format_time(job.submit_time),
        None if job.start_time is None else format_time(job.start_time),
        row.preemptions,
        row.preemptions_24h,
        None if job.exempt_until is None else format_time(job.exempt_until),
        job.reason,
    ]


def _note(job: Job, now: float) -> str:
    notes = []
    if job.urgent:
        notes.append("urgent")
    if job.exempt_at(now):
        notes.append(f"exempt {fmt_duration((job.exempt_until or now) - now)}")
    if job.reason:
        notes.append(job.reason)
    return ", ".join(notes)


def _table(app: App, snapshot: Snapshot, rows: list[QueueRow], total: int) -> None:
    now = app.cluster.now(snapshot)
    shown = f"{total} jobs" if len(rows) == total else f"first {len(rows)} of {total} jobs (--limit 0 for all)"
    table = make_table(
        f"{snapshot.cluster} at {format_time(snapshot.taken_at)}: {shown}",
        ["ID", "NAME", "USER", "TENANT", "CLASS", "STATE", "GPUS", "PRIO", "EFF", "WAIT", "PREEMPT", "NODES", "NOTE"],
        right=("GPUS", "PRIO", "EFF", "WAIT", "PREEMPT"),
    )
    styles = {JobState.PENDING: "yellow", JobState.RUNNING: "green", JobState.SUSPENDED: "magenta"}
    for row in rows:
        job = row.job
        state = job.state.value
        table.add_row(
            job.id,
            job.name,
            job.user,
            job.tenant,
            job.job_class,
            f"[{styles[job.state]}]{state}[/]" if job.state in styles else state,
            str(job.gpus),
            str(job.priority),
            f"{row.effective_priority:g}",
            fmt_duration(row.wait_s),
            f"{row.preemptions_24h}/{row.preemptions}" if row.preemptions else "",
            ",".join(job.nodes),
            _note(job, now),
        )
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
@click.option("--sort", type=click.Choice(sorted(_SORTS)), default="effective", show_default=True, help="Sort key.")
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
    wanted = _parse_states(states)
    snapshot = app.cluster.snapshot(ledger=wanted is None or not wanted <= QUEUED_STATES)
    rows = queue_rows(
        app,
        snapshot,
        users=users,
        tenants=tenants,
        classes=classes,
        states=wanted,
        min_gpus=min_gpus,
        sort=sort,
        reverse=reverse,
    )
    total = len(rows)
    if limit is None and app.output == "table":
        limit = TABLE_LIMIT  # a terminal cannot show 200,000 rows usefully; json/csv get them all
    if limit:
        del rows[limit:]
    if app.output == "json":
        emit_json(
            {
                "cluster": snapshot.cluster,
                "taken_at": format_time(snapshot.taken_at),
                "jobs": [_json_job(r) for r in rows],
            }
        )
    elif app.output == "csv":
        emit_csv(_CSV_HEADER, (_csv_row(r) for r in rows))
    else:
        _table(app, snapshot, rows, total)
