"""`gpuq overview` (also plain `gpuq`): the 3 a.m. screen in one command.

Capacity, the SLA per class (counting jobs still waiting), the pending jobs that rank highest with
what each would preempt, and the latest preemptions.

`-o json` → `{"cluster", "backend", "taken_at", "gpus": {"total", "busy", "free", "unavailable"},
"jobs": {"<state>": count}, "sla": {"<class>": {"p95_incl_pending_s", "target_p95_s", "breach"}},
"top_pending": [{"id", "gpus", "class", "effective_priority", "wait_s", "fits_now",
"would_preempt", "victims"}], "recent_preemptions": [{"time", "victim", "preemptor", "gpus",
"gpu_seconds_lost", "mode", "reason"}], "unread": [{"resource", "reason", "effect", "note"}]}`
(`unread`: what the backend could not read, `[]` when nothing; the table says it in `note:`
lines under its first line, the capacity they qualify). `-o csv` has every section in one table, a `section`
column first (`CSV_HEADER`, README "CSV output").
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import click

from gpuq.cli.csvsections import keyed_rows, section_rows
from gpuq.cli.options import App, global_options, pass_app, watchable
from gpuq.cli.preemptions import event_document
from gpuq.cli.render import emit_csv, emit_json, fmt_duration, fmt_time, print_table, say, say_unread
from gpuq.cli.sla import VERDICT_STYLES, VERDICTS
from gpuq.model import Snapshot
from gpuq.timefmt import format_time
from gpuq.views.changes import format_priority
from gpuq.views.columns import OVERVIEW_EVENTS, OVERVIEW_SLA, OVERVIEW_TOP
from gpuq.views.overview import OverviewView, TopPending, overview_view
from gpuq.views.sla import verdict
from gpuq.views.unread import unread_document

__all__ = ["overview", "overview_document"]


def overview_document(view: OverviewView, snapshot: Snapshot | None = None) -> dict[str, Any]:
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
        "unread": [] if snapshot is None else unread_document(snapshot),
    }


#: `overview -o csv`: every section of the JSON document in one table (gpuq/cli/csvsections.py)
CSV_HEADER = (
    "section", "key", "value", "class", "pending", "p95_incl_pending_s", "target_p95_s", "breach", "id", "tenant",
    "gpus", "effective_priority", "wait_s", "fits_now", "would_preempt", "victims", "blocked", "time", "victim",
    "preemptor", "gpu_seconds_lost", "mode", "reason",
)  # fmt: skip


def overview_csv_rows(doc: dict[str, Any]) -> Iterator[list[Any]]:
    """The JSON document's sections as CSV rows: `snapshot` (cluster, backend, taken_at), `gpus`,
    `jobs` (count per state), `sla` (one row per class), `top_pending`, `recent_preemptions`."""
    h = CSV_HEADER
    yield from keyed_rows(h, "snapshot", {k: doc[k] for k in ("cluster", "backend", "taken_at")})
    yield from keyed_rows(h, "gpus", doc["gpus"])
    yield from keyed_rows(h, "jobs", doc["jobs"])
    yield from section_rows(h, "sla", ({"class": name, **fields} for name, fields in doc["sla"].items()))
    yield from section_rows(h, "top_pending", doc["top_pending"])
    yield from section_rows(h, "recent_preemptions", doc["recent_preemptions"])


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
@watchable
@pass_app
def overview(app: App, top: int) -> None:
    """Capacity, SLA per class, the most urgent pending jobs and the latest preemptions."""
    snapshot = app.snapshot()
    view = overview_view(app.cluster, snapshot, top=top)
    if app.output == "json":
        emit_json(overview_document(view, snapshot))
        return
    if app.output == "csv":
        emit_csv(CSV_HEADER, overview_csv_rows(overview_document(view)))
        return
    cap = view.capacity
    jobs = ", ".join(f"{count} {state}" for state, count in view.jobs.items())
    say(app, (view.cluster, "bold"), f" ({view.backend}) at {fmt_time(view.taken_at)}: "
        f"{cap.busy}/{cap.total} GPUs busy ({100 * cap.busy_share:.0f}%), {cap.free} free, "
        f"{cap.unavailable} down or draining; jobs: {jobs or 'none'}")  # fmt: skip
    say_unread(app, snapshot)
    say(app, "")
    sla = [(name, str(s.pending), fmt_duration(s.p95_incl_pending_s), fmt_duration(s.target_p95_s),
            VERDICTS[verdict(s)]) for name, s in view.sla.items()]  # fmt: skip
    print_table(app, OVERVIEW_SLA, sla, title="SLA (P95 including pending jobs)", styles=VERDICT_STYLES)
    say(app, "")
    top_rows = [(row.id, row.job_class, str(row.gpus), format_priority(row.effective_priority),
                 fmt_duration(row.wait_s), _next(row)) for row in view.top_pending]  # fmt: skip
    print_table(app, OVERVIEW_TOP, top_rows, title="Most urgent pending jobs")
    say(app, "")
    events = []
    for e in view.recent_preemptions:
        lost = e.gpu_seconds_lost
        events.append((fmt_time(e.time), e.victim, e.preemptor or "-", str(e.gpus),
                       "-" if lost is None else f"{lost / 3600:.1f}", e.mode or "-"))  # fmt: skip
    print_table(app, OVERVIEW_EVENTS, events, title="Recent preemptions")
