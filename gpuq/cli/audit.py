"""`gpuq audit`: show the audit log (`$XDG_STATE_HOME/gpuq/audit.jsonl`).

`-o json` → `{"path", "records": [...]}` with each record as written (see `gpuq.audit`).
"""

from __future__ import annotations

from typing import Any

import click

from gpuq.cli.options import App, global_options, pass_app
from gpuq.cli.render import changes, emit_csv, emit_json, make_table, print_table, warn

__all__ = ["audit"]

_COLUMNS = ("time", "operator", "host", "backend", "cluster", "action", "target", "result", "reason")


def _change(record: dict[str, Any]) -> str:
    before, after = record.get("before") or {}, record.get("after") or {}
    if not isinstance(before, dict) or not isinstance(after, dict):
        return ""
    return "; ".join(f"{key}: {old} -> {new}" for key, old, new in changes(before, after))


@click.command("audit")
@click.option(
    "--tail", "tail", type=click.IntRange(min=0), default=50, show_default=True, help="Last N records (0 = all)."
)
@click.option(
    "--action", "actions", multiple=True, metavar="ACTION", help="Only these actions (bump, exempt, preempt)."
)
@click.option("--job", "jobs", multiple=True, metavar="JOB", help="Only records about these jobs.")
@click.option("--path", "show_path", is_flag=True, help="Print the log's path and exit.")
@global_options
@pass_app
def audit(app: App, tail: int, actions: tuple[str, ...], jobs: tuple[str, ...], show_path: bool) -> None:
    """Show the audit log of actions (bump, exempt, preempt), dry runs and failures included."""
    from gpuq.audit import AuditLog

    log = AuditLog()
    if show_path:
        click.echo(str(log.path))
        return
    records: list[dict[str, Any]] = []
    for entry in log.entries():
        if entry.record is None:
            warn(f"{log.path}:{entry.line}: not a JSON object, skipped")
            continue
        record = entry.record
        if actions and record.get("action") not in actions:
            continue
        if jobs and str(record.get("target")) not in jobs:
            continue
        records.append(record)
    if tail:
        records = records[-tail:]
    if app.output == "json":
        emit_json({"path": str(log.path), "records": records})
    elif app.output == "csv":
        emit_csv(
            (*_COLUMNS, "dry_run", "change", "error"),
            ([*(r.get(c) for c in _COLUMNS), r.get("dry_run"), _change(r), r.get("error")] for r in records),
        )
    else:
        table = make_table(
            f"{log.path}: {len(records)} records",
            ["TIME", "OPERATOR", "CLUSTER", "ACTION", "JOB", "RESULT", "CHANGE", "REASON"],
        )
        styles = {"ok": "green", "dry_run": "cyan", "error": "red", "refused": "yellow"}
        for r in records:
            result = str(r.get("result"))
            shown = f"[{styles[result]}]{result}[/]" if result in styles else result
            detail = r.get("error") if result in ("error", "refused") else _change(r)
            table.add_row(
                str(r.get("time")),
                str(r.get("operator")),
                f"{r.get('backend')}/{r.get('cluster')}",
                str(r.get("action")),
                str(r.get("target")),
                shown,
                str(detail or ""),
                str(r.get("reason") or ""),
            )
        print_table(app, table)
