"""`gpuq sla`: queue-wait percentiles per class and overall, with breach flags.

`-o json` → `{"since", "overall": {...}, "classes": {"<name>": {"count", "pending", "p50_s",
"p95_s", "p99_s", "max_s", "p95_incl_pending_s", "target_p95_s", "breach"}}}`; without `--since`
it covers every job in the snapshot.
"""

from __future__ import annotations

from typing import Any

import click

from gpuq.cli.options import App, global_options, pass_app
from gpuq.cli.render import emit_csv, emit_json, fmt_duration, make_table, print_table
from gpuq.timefmt import format_time, parse_duration

__all__ = ["sla"]

_FIELDS = ("count", "pending", "p50_s", "p95_s", "p99_s", "max_s", "p95_incl_pending_s", "target_p95_s", "breach")


def _duration(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


@click.command("sla")
@click.option(
    "--since",
    metavar="DURATION",
    callback=_duration,
    help="Only jobs queued or started in the last DURATION (e.g. 24h).",
)
@global_options
@pass_app
def sla(app: App, since: float | None) -> None:
    """Queue-wait P50/P95/P99/max per class against each class's target P95."""
    cluster = app.cluster
    snapshot = cluster.snapshot()
    doc: dict[str, Any] = cluster.sla(snapshot, since).to_dict()
    if app.output == "json":
        emit_json(doc)
        return
    rows = [("(all)", doc["overall"])] + list(doc["classes"].items())
    if app.output == "csv":
        emit_csv(("class", *_FIELDS), ([name, *(stats[f] for f in _FIELDS)] for name, stats in rows))
        return
    window = f"since {doc['since']}" if doc["since"] else "all jobs"
    table = make_table(
        f"{snapshot.cluster} at {format_time(snapshot.taken_at)}: queue waits, {window}",
        ["CLASS", "STARTED", "PENDING", "P50", "P95", "P99", "MAX", "P95+PENDING", "TARGET", "SLA"],
        right=("STARTED", "PENDING", "P50", "P95", "P99", "MAX", "P95+PENDING", "TARGET"),
    )
    for name, s in rows:
        verdict = "" if s["target_p95_s"] is None else ("[bold red]BREACH[/]" if s["breach"] else "[green]ok[/]")
        table.add_row(
            name,
            str(s["count"]),
            str(s["pending"]),
            *(fmt_duration(s[k]) for k in ("p50_s", "p95_s", "p99_s", "max_s", "p95_incl_pending_s", "target_p95_s")),
            verdict,
        )
    print_table(app, table)
