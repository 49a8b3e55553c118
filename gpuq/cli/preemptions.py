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
from gpuq.cli.render import emit_csv, emit_json, fmt_duration, make_table, natural_key
from gpuq.model import DAY_S, Snapshot
from gpuq.timefmt import format_time

__all__ = ["preemption_events", "preemptions"]


def preemption_events(snapshot: Snapshot) -> list[dict[str, Any]]:
    """Every preemption event, newest first."""
    events: list[dict[str, Any]]
    if snapshot.preemption_events:
        events = [
            {
                "time": e.time,
                "victim": e.victim,
                "preemptor": e.preemptor,
                "gpus": e.gpus,
                "gpu_seconds_lost": e.gpu_seconds_lost,
                "mode": e.mode,
                "reason": e.reason,
            }
            for e in snapshot.preemption_events
        ]
    else:
        events = [
            {
                "time": t,
                "victim": j.id,
                "preemptor": None,
                "gpus": j.gpus,
                "gpu_seconds_lost": None,
                "mode": None,
                "reason": "",
            }
            for j in snapshot.jobs
            for t in j.preemption_times
        ]
    events.sort(key=lambda e: (-float(e["time"]), natural_key(str(e["victim"]))))
    return events


@click.command("preemptions")
@click.option("--limit", type=click.IntRange(min=0), default=20, show_default=True, help="Recent events to show.")
@global_options
@pass_app
def preemptions(app: App, limit: int) -> None:
    """Per-job preemption counts (total / last 24h) and the most recent preemption events."""
    snapshot = app.cluster.snapshot()
    now = app.cluster.now(snapshot)
    jobs = [j for j in snapshot.jobs if j.preemption_times]
    counted = [(j, len(j.preemption_times), j.preemptions_since(now - DAY_S, now)) for j in jobs]
    counted.sort(key=lambda c: (-c[2], -c[1], natural_key(c[0].id)))
    events = preemption_events(snapshot)[:limit]
    if app.output == "json":
        emit_json(
            {
                "cluster": snapshot.cluster,
                "taken_at": format_time(snapshot.taken_at),
                "jobs": [
                    {
                        "id": j.id,
                        "name": j.name,
                        "user": j.user,
                        "tenant": j.tenant,
                        "class": j.job_class,
                        "state": j.state.value,
                        "preemptions": total,
                        "preemptions_24h": day,
                        "last_preempted": format_time(max(j.preemption_times)),
                    }
                    for j, total, day in counted
                ],
                "events": [{**e, "time": format_time(e["time"])} for e in events],
            }
        )
        return
    if app.output == "csv":
        emit_csv(
            ("id", "user", "tenant", "class", "state", "preemptions", "preemptions_24h", "last_preempted"),
            (
                [j.id, j.user, j.tenant, j.job_class, j.state.value, total, day, format_time(max(j.preemption_times))]
                for j, total, day in counted
            ),
        )
        return
    jobs_table = make_table(
        f"{snapshot.cluster} at {format_time(snapshot.taken_at)}: {len(counted)} jobs preempted at least once",
        ["ID", "USER", "TENANT", "CLASS", "STATE", "24H", "TOTAL", "LAST"],
        right=("24H", "TOTAL"),
    )
    for j, total, day in counted:
        last = max(j.preemption_times)
        jobs_table.add_row(
            j.id,
            j.user,
            j.tenant,
            j.job_class,
            j.state.value,
            str(day),
            str(total),
            f"{format_time(last)} ({fmt_duration(now - last)} ago)",
        )
    events_table = make_table(
        f"last {len(events)} preemption events",
        ["TIME", "VICTIM", "BY", "GPUS", "GPU-H LOST", "MODE", "REASON"],
        right=("GPUS", "GPU-H LOST"),
    )
    for e in events:
        lost = e["gpu_seconds_lost"]
        events_table.add_row(
            format_time(e["time"]),
            e["victim"],
            e["preemptor"] or "-",
            str(e["gpus"]),
            "-" if lost is None else f"{lost / 3600:.2f}",
            e["mode"] or "-",
            e["reason"] or "",
        )
    from gpuq.cli.render import make_console

    console = make_console(app)
    console.print(jobs_table)
    console.print(events_table)
