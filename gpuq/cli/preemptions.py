"""`gpuq preemptions`: who gets preempted, how often (total and last 24 h), and recent events.

`-o json` → `{"cluster", "taken_at", "jobs": [{"id", "name", "user", "tenant", "class", "state",
"preemptions", "preemptions_24h", "last_preempted"}], "events": [{"time", "victim", "preemptor",
"gpus", "gpu_seconds_lost", "mode", "reason"}], "unread": [{"resource", "reason", "effect",
"note"}]}` (`unread`: what the backend could not read, `[]` when nothing; the table says it in
`note:` lines at its end). Events come from the snapshot's
`preemption_events`; when a backend records only per-job times, they are derived from those
(preemptor, loss and mode then null). `-o csv` has both sections in one table, a `section`
column first (`CSV_HEADER`, README "CSV output").
"""

from __future__ import annotations

from itertools import chain
from typing import Any

import click

from gpuq.cli.csvsections import keyed_rows, section_rows
from gpuq.cli.options import App, global_options, pass_app, watchable
from gpuq.cli.render import emit_csv, emit_json, fmt_duration, fmt_time, print_table, say, say_unread, warn
from gpuq.model import Snapshot
from gpuq.timefmt import format_time
from gpuq.views.columns import PREEMPTION_EVENTS, PREEMPTION_JOBS
from gpuq.views.preemptions import LedgerEvent, LedgerView, ledger_thrash, ledger_view
from gpuq.views.unread import unread_document

__all__ = ["event_document", "preemptions"]


def event_document(e: LedgerEvent) -> dict[str, Any]:
    return {"time": format_time(e.time), "victim": e.victim, "preemptor": e.preemptor, "gpus": e.gpus,
            "gpu_seconds_lost": e.gpu_seconds_lost, "mode": e.mode, "reason": e.reason}  # fmt: skip


def ledger_document(view: LedgerView, snapshot: Snapshot | None = None) -> dict[str, Any]:
    """The `-o json` document (the CSV has the same sections)."""
    return {
        "cluster": view.cluster,
        "taken_at": format_time(view.taken_at),
        "jobs": [
            {
                "id": r.job.id, "name": r.job.name, "user": r.job.user, "tenant": r.job.tenant,
                "class": r.job.job_class, "state": r.job.state.value, "preemptions": r.total,
                "preemptions_24h": r.last_24h, "last_preempted": format_time(r.last),
            }  # fmt: skip
            for r in view.jobs
        ],
        "events": [event_document(e) for e in view.events],
        "unread": [] if snapshot is None else unread_document(snapshot),
    }


#: `preemptions -o csv`: `snapshot` rows (cluster, taken_at as key, value), then the `jobs` and
#: the `events` sections, each row filling its own columns (gpuq/cli/csvsections.py)
CSV_HEADER = (
    "section", "key", "value", "id", "name", "user", "tenant", "class", "state", "preemptions",
    "preemptions_24h", "last_preempted", "time", "victim", "preemptor", "gpus", "gpu_seconds_lost", "mode", "reason",
)  # fmt: skip


@click.command("preemptions")
@click.option("--limit", type=click.IntRange(min=0), default=20, show_default=True, help="Recent events to show.")
@global_options
@watchable
@pass_app
def preemptions(app: App, limit: int) -> None:
    """Per-job preemption counts (total / last 24h) and the most recent preemption events."""
    snapshot = app.snapshot()
    view = ledger_view(snapshot, limit=limit)
    thrash = ledger_thrash(app.cluster, snapshot)
    if thrash.flagged:
        warn(f"{snapshot.cluster}: {thrash.summary()}")
    if app.output == "json":
        emit_json(ledger_document(view, snapshot))
        return
    if app.output == "csv":
        doc = ledger_document(view)
        h = CSV_HEADER
        emit_csv(h, chain(keyed_rows(h, "snapshot", {"cluster": doc["cluster"], "taken_at": doc["taken_at"]}),
                          section_rows(h, "jobs", doc["jobs"]), section_rows(h, "events", doc["events"])))
        return
    jobs = [
        (r.job.id, r.job.user, r.job.tenant, r.job.job_class, r.job.state.value, str(r.last_24h), str(r.total),
         f"{fmt_time(r.last)} ({fmt_duration(r.since_last_s)} ago)")  # fmt: skip
        for r in view.jobs
    ]
    print_table(app, PREEMPTION_JOBS, jobs,
                title=f"{view.cluster} at {fmt_time(view.taken_at)}: {len(view.jobs)} jobs preempted at least once")
    events = []
    for e in view.events:
        lost = e.gpu_seconds_lost
        events.append((fmt_time(e.time), e.victim, e.preemptor or "-", str(e.gpus),
                       "-" if lost is None else f"{lost / 3600:.2f}", e.mode or "-", e.reason or ""))  # fmt: skip
    say(app, "")
    print_table(app, PREEMPTION_EVENTS, events, title=f"last {len(view.events)} preemption events")
    say_unread(app, snapshot)
