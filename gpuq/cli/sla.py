"""`gpuq sla`: queue-wait percentiles per class and overall, with breach flags.

`-o json` → `{"since", "overall": {...}, "classes": {"<name>": {"count", "pending", "p50_s",
"p95_s", "p99_s", "max_s", "p95_incl_pending_s", "target_p95_s", "breach"}}, "unread": [{"resource",
"reason", "effect", "note"}]}`; without `--since` it covers every job in the snapshot; `unread`
is what the backend could not read (`[]`: nothing), said in the table's `note:` lines.

`gpuq sla --trace TRACE [--preset P | --columns …]`: the waits a recorded trace really had
(start − submit), per class and overall, of its GPU jobs (as `replay` counts them; those left
out are counted by why); jobs that never started are counted as pending, with censored waits.
`-o json` → `{"trace", "format", "jobs", "never_started", "left_out", "end", "overall": {...},
"classes": {"<name>": {"count", "never_started", "p95_incl_pending_s", "mean_s", "p50_s",
"p95_s", "p99_s", "max_s", "target_p95_s", "sla_breaches", "breach"}}}`.
"""

from __future__ import annotations

from typing import Any

import click

from gpuq.cli.options import App, global_options, pass_app, watchable
from gpuq.cli.render import emit_csv, emit_json, fmt_duration, fmt_time, print_table, say_unread
from gpuq.cli.traceopts import trace_args, trace_options
from gpuq.timefmt import parse_duration
from gpuq.views.columns import SLA
from gpuq.views.sla import sla_view
from gpuq.views.unread import unread_document

__all__ = ["VERDICTS", "VERDICT_STYLES", "sla"]

_FIELDS = ("count", "pending", "p50_s", "p95_s", "p99_s", "max_s", "p95_incl_pending_s", "target_p95_s", "breach")
#: how each verdict of `gpuq.views.sla.verdict` reads in a table, and its colour there
VERDICTS = {"breach": "BREACH", "at_risk": "at risk", "ok": "ok", "": ""}
VERDICT_STYLES = {"SLA": {"BREACH": "bold red", "at risk": "yellow", "ok": "green"}}


#: the longest SLA window: ten years of history (a longer one would start before 1970)
LONGEST_WINDOW_S = 3650 * 86400.0


def _duration(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return parse_duration(value, maximum=LONGEST_WINDOW_S)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


@click.command("sla")
@click.option(
    "--since",
    metavar="DURATION",
    callback=_duration,
    help="Only jobs queued or started in the last DURATION (e.g. 24h).",
)
@click.option(
    "--trace",
    metavar="TRACE",
    type=click.Path(dir_okay=True),
    help="The waits a recorded trace really had (a job log, sacct output, a snapshot history, a public trace).",
)
@trace_options
@global_options
@watchable
@pass_app
def sla(app: App, since: float | None, trace: str | None = None, **options: Any) -> None:
    """Queue-wait P50/P95/P99/max per class against each class's target P95."""
    if trace is not None:
        if since is not None:
            raise click.UsageError("--since reads a live cluster's queue; with --trace every recorded job counts")
        _trace_sla(app, trace, options)
        return
    if any(options.get(k) is not None for k in ("preset", "columns", "class_from")):
        raise click.UsageError("--preset, --columns and --class-from go with --trace")
    snapshot = app.snapshot()
    view = sla_view(app.cluster, snapshot, since)
    if app.output == "json":
        emit_json({**view.report.to_dict(), "unread": unread_document(snapshot)})
        return
    if app.output == "csv":
        emit_csv(("class", *_FIELDS), ([r.name, *(getattr(r.stats, f) for f in _FIELDS)] for r in view.rows))
        return
    window = f"since {fmt_time(view.report.since)}" if view.report.since is not None else "all jobs"
    rows = []
    for row in view.rows:
        s = row.stats
        durations = (s.p50_s, s.p95_s, s.p99_s, s.max_s, s.p95_incl_pending_s, s.target_p95_s)
        rows.append((row.name, str(s.count), str(s.pending), *(fmt_duration(d) for d in durations),
                     VERDICTS[row.verdict]))  # fmt: skip
    print_table(app, SLA, rows, title=f"{view.cluster} at {fmt_time(view.taken_at)}: queue waits, {window}",
                styles=VERDICT_STYLES)  # fmt: skip
    say_unread(app, snapshot)


_TRACE_FIELDS = ("count", "never_started", "mean_s", "p50_s", "p95_s", "p99_s", "max_s", "p95_incl_pending_s",
                 "target_p95_s", "sla_breaches", "breach")  # fmt: skip


def _trace_sla(app: App, trace: str, options: dict[str, Any]) -> None:
    from gpuq.config import load_policy_file
    from gpuq.service import policy_source
    from gpuq.service.tracing import NO_GPU
    from gpuq.views.tracesla import TRACE_SLA, trace_sla_view

    o = app.options
    policy = (load_policy_file(o.policy) if o.policy else policy_source(app.config, o.cluster)).policy
    view = trace_sla_view(trace, policy=policy, **trace_args(**options))
    if app.output == "json":
        emit_json(view.report.to_dict())
        return
    if app.output == "csv":
        emit_csv(("class", *_TRACE_FIELDS), ([r.name, *(getattr(r.waits, f) for f in _TRACE_FIELDS)]
                                             for r in view.rows))  # fmt: skip
        return
    rows = []
    for row in view.rows:
        w = row.waits
        durations = (w.mean_s, w.p50_s, w.p95_s, w.p99_s, w.max_s, w.p95_incl_pending_s, w.target_p95_s)
        rows.append((row.name, str(w.count), str(w.never_started), *(fmt_duration(d) for d in durations),
                     "-" if w.sla_breaches is None else str(w.sla_breaches), VERDICTS[row.verdict]))  # fmt: skip
    report = view.report
    title = (f"{report.trace} ({report.format}): recorded queue waits of {report.jobs} GPU jobs, "
             f"{report.never_started} never started (counted as waiting until "
             f"{'-' if report.end is None else fmt_time(report.end)})")  # fmt: skip
    if report.left_out.get(NO_GPU):
        title += f"; {report.left_out[NO_GPU]} without GPUs left out"
    print_table(app, TRACE_SLA, rows, title=title, styles=VERDICT_STYLES)
