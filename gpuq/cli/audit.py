"""`gpuq audit`: show the audit log (`$XDG_STATE_HOME/gpuq/audit.jsonl`), one row per action.

`-o json` → `{"path", "records": [...]}`: each action's outcome record as written (see
`gpuq.audit`); an action whose outcome never reached the log appears as its intent record with
``"result": "unknown"`` and ``"error": "outcome unknown: check the cluster"``.
"""

from __future__ import annotations

import click

from gpuq.cli.options import App, global_options, pass_app
from gpuq.cli.output import write_text
from gpuq.cli.render import emit_csv, emit_json, print_table, warn
from gpuq.locations import audit_log_path
from gpuq.views.audit import audit_view
from gpuq.views.changes import describe_value
from gpuq.views.columns import AUDIT

__all__ = ["audit"]

#: The two clocks an operator reads (the demo's cluster runs ahead of the wall clock).
_CLOCKS = "TIME: wall time, when gpuq acted; times in CHANGE: cluster time"

_COLUMNS = ("time", "operator", "host", "backend", "cluster", "action", "target", "result", "reason")
_STYLES = {"ok": "green", "dry_run": "cyan", "error": "red", "refused": "yellow", "unknown": "bold magenta"}


@click.command("audit")
@click.option(
    "--tail", "tail", type=click.IntRange(min=0), default=50, show_default=True, help="Last N actions (0 = all)."
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
    if show_path:
        write_text(f"{audit_log_path()}\n")
        return
    view = audit_view(tail=tail, actions=actions, jobs=jobs)
    for line, _ in view.unreadable:
        warn(f"{view.path}:{line}: not a JSON object, skipped")
    records = [row.record for row in view.rows]
    if app.output == "json":
        emit_json({"path": view.path, "records": records})
    elif app.output == "csv":
        emit_csv(
            (*_COLUMNS, "dry_run", "change", "error"),
            ([*(r.record.get(c) for c in _COLUMNS), r.record.get("dry_run"), r.change, r.record.get("error")]
             for r in view.rows),
        )  # fmt: skip
    else:
        rows = [
            (describe_value(r.get("time"), "time"), str(r.get("operator")), f"{r.get('backend')}/{r.get('cluster')}",
             str(r.get("action")), str(r.get("target")), row.result, row.detail, str(r.get("reason") or ""))
            for row in view.rows
            for r in (row.record,)
        ]  # fmt: skip
        print_table(app, AUDIT, rows, title=f"{view.path}: {len(view.rows)} records ({_CLOCKS})",
                    styles={"RESULT": _STYLES})  # fmt: skip
