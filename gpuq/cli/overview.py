"""`gpuq overview` (also plain `gpuq`): the 3 a.m. screen in one command.

Capacity, the SLA per class (counting jobs still waiting), the pending jobs that rank highest with
what each would preempt, and the latest preemptions.

`-o json` → `{"cluster", "backend", "taken_at", "gpus": {"total", "busy", "free", "unavailable"},
"jobs": {"<state>": count}, "sla": {"<class>": {"p95_incl_pending_s", "target_p95_s", "breach"}},
"top_pending": [{"id", "gpus", "class", "effective_priority", "wait_s", "fits_now",
"would_preempt", "victims"}], "recent_preemptions": [{"time", "victim", "preemptor", "gpus",
"gpu_seconds_lost", "mode", "reason"}]}`.
"""

from __future__ import annotations

from typing import Any

import click

from gpuq.cli.options import App, global_options, pass_app
from gpuq.cli.preemptions import event_document
from gpuq.cli.render import emit_csv, emit_json, fmt_duration, make_console, make_table, say_none
from gpuq.cli.sla import VERDICTS
from gpuq.timefmt import format_time
from gpuq.views.overview import OverviewView, TopPending, overview_view
from gpuq.views.sla import verdict

__all__ = ["overview", "overview_document"]


def overview_document(view: OverviewView) -> dict[str, Any]:
    """The overview as the JSON document (tables render the same view)."""
    cap = view.capacity
    return {
        "cluster": view.cluster,
        "backend": view.backend,
        "taken_at": format_time(view.taken_at),
        "gpus": {"total": cap.total, "busy": cap.busy, "free": cap.free, "unavailable": cap.unavailable},
        "jobs": view.jobs,
        "sla": {
            name: {"p95_incl_pending_s": s.p95_incl_pending_s, "target_p95_s": s.target_p95_s, "breach": s.breach,
                   "pending": s.pending}  # fmt: skip
            for name, s in view.sla.items()
        },
        "top_pending": [
            {"id": t.id, "gpus": t.gpus, "class": t.job_class, "tenant": t.tenant,
             "effective_priority": t.effective_priority, "wait_s": t.wait_s, "fits_now": t.fits_now,
             "would_preempt": t.would_preempt, "victims": list(t.victims), "blocked": t.blocked}  # fmt: skip
            for t in view.top_pending
        ],
        "recent_preemptions": [event_document(e) for e in view.recent_preemptions],
    }


def _next(row: TopPending) -> str:
    if row.fits_now:
        return "fits on free GPUs"
    if row.would_preempt:
        return "would preempt " + ", ".join(row.victims)
    return f"blocked: {row.blocked}" if row.blocked else "waiting"


@click.command("overview")
@click.option("--top", type=click.IntRange(min=1, max=50), default=5, show_default=True,
              help="Pending jobs and preemptions to list.")
@global_options
@pass_app
def overview(app: App, top: int) -> None:
    """Capacity, SLA per class, the most urgent pending jobs and the latest preemptions."""
    view = overview_view(app.cluster, app.snapshot(), top=top)
    if app.output == "json":
        emit_json(overview_document(view))
        return
    if app.output == "csv":
        # One flat table is what a spreadsheet wants: the per-class SLA lines.
        emit_csv(
            ("class", "pending", "p95_incl_pending_s", "target_p95_s", "breach"),
            ([name, s.pending, s.p95_incl_pending_s, s.target_p95_s, s.breach] for name, s in view.sla.items()),
        )
        return
    console = make_console(app)
    cap = view.capacity
    jobs = ", ".join(f"{count} {state}" for state, count in view.jobs.items())
    console.print(
        f"[bold]{view.cluster}[/] ({view.backend}) at {format_time(view.taken_at)}: "
        f"{cap.busy}/{cap.total} GPUs busy ({100 * cap.busy_share:.0f}%), {cap.free} free, "
        f"{cap.unavailable} down or draining; jobs: {jobs or 'none'}"
    )
    sla = make_table("SLA (P95 including pending jobs)", ["CLASS", "PENDING", "P95", "TARGET", "SLA"],
                     right=("PENDING", "P95", "TARGET"))  # fmt: skip
    for name, s in view.sla.items():
        sla.add_row(name, str(s.pending), fmt_duration(s.p95_incl_pending_s), fmt_duration(s.target_p95_s),
                    VERDICTS[verdict(s)])  # fmt: skip
    console.print(say_none(sla))
    top_table = make_table("Most urgent pending jobs", ["JOB", "CLASS", "GPUS", "EFF", "WAIT", "NEXT"],
                           right=("GPUS", "EFF", "WAIT"))  # fmt: skip
    for row in view.top_pending:
        top_table.add_row(row.id, row.job_class, str(row.gpus), f"{row.effective_priority:g}",
                          fmt_duration(row.wait_s), _next(row))  # fmt: skip
    console.print(say_none(top_table))
    events = make_table("Recent preemptions", ["TIME", "VICTIM", "BY", "GPUS", "GPU-H LOST", "MODE"],
                        right=("GPUS", "GPU-H LOST"))  # fmt: skip
    for e in view.recent_preemptions:
        lost = e.gpu_seconds_lost
        events.add_row(format_time(e.time), e.victim, e.preemptor or "-", str(e.gpus),
                       "-" if lost is None else f"{lost / 3600:.1f}", e.mode or "-")  # fmt: skip
    console.print(say_none(events))
