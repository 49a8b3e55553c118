"""`gpuq preemptions`: who gets preempted, how often (total and last 24 h), and recent events.

`-o json` → `{"cluster", "taken_at", "jobs": [{"id", "name", "user", "tenant", "class", "state",
"preemptions", "preemptions_24h", "last_preempted"}], "events": [{"time", "victim", "preemptor",
"gpus", "gpu_seconds_lost", "mode", "reason"}]}`. Events come from the snapshot's
`preemption_events`; when a backend records only per-job times, they are derived from those
(preemptor, loss and mode then null).
"""

from __future__ import annotations

from typing import Any

import click

from gpuq.cli.options import App, global_options, pass_app
from gpuq.cli.render import emit_csv, emit_json, fmt_duration, make_console, make_table, say_none
from gpuq.timefmt import format_time
from gpuq.views.preemptions import LedgerEvent, ledger_view

__all__ = ["event_document", "preemptions"]


def event_document(e: LedgerEvent) -> dict[str, Any]:
    return {"time": format_time(e.time), "victim": e.victim, "preemptor": e.preemptor, "gpus": e.gpus,
            "gpu_seconds_lost": e.gpu_seconds_lost, "mode": e.mode, "reason": e.reason}  # fmt: skip


@click.command("preemptions")
@click.option("--limit", type=click.IntRange(min=0), default=20, show_default=True, help="Recent events to show.")
@global_options
@pass_app
def preemptions(app: App, limit: int) -> None:
    """Per-job preemption counts (total / last 24h) and the most recent preemption events."""
    view = ledger_view(app.snapshot(), limit=limit)
    if app.output == "json":
        emit_json(
            {
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
            }
        )
        return
    if app.output == "csv":
        emit_csv(
            ("id", "user", "tenant", "class", "state", "preemptions", "preemptions_24h", "last_preempted"),
            ([r.job.id, r.job.user, r.job.tenant, r.job.job_class, r.job.state.value, r.total, r.last_24h,
              format_time(r.last)] for r in view.jobs),
        )  # fmt: skip
        return
    jobs_table = make_table(
        f"{view.cluster} at {format_time(view.taken_at)}: {len(view.jobs)} jobs preempted at least once",
        ["ID", "USER", "TENANT", "CLASS", "STATE", "24H", "TOTAL", "LAST"],
        right=("24H", "TOTAL"),
    )
    for r in view.jobs:
        jobs_table.add_row(r.job.id, r.job.user, r.job.tenant, r.job.job_class, r.job.state.value, str(r.last_24h),
                           str(r.total), f"{format_time(r.last)} ({fmt_duration(r.since_last_s)} ago)")  # fmt: skip
    events_table = make_table(
        f"last {len(view.events)} preemption events",
        ["TIME", "VICTIM", "BY", "GPUS", "GPU-H LOST", "MODE", "REASON"],
        right=("GPUS", "GPU-H LOST"),
    )
    for e in view.events:
        lost = e.gpu_seconds_lost
        events_table.add_row(format_time(e.time), e.victim, e.preemptor or "-", str(e.gpus),
                             "-" if lost is None else f"{lost / 3600:.2f}", e.mode or "-", e.reason or "")  # fmt: skip
    console = make_console(app)
    console.print(say_none(jobs_table))
    console.print(say_none(events_table))
