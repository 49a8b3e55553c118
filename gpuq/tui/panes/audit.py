"""The Audit view: the audit log, newest first; an action whose outcome never reached the log
("outcome unknown: check the cluster") in the breach tone.

The log is the operator's, not one cluster's: every record is shown, whichever cluster it names.
It is read through the service (`Cluster.audit`) in the worker; clusters sharing one log file
read it once. The cursor selects the row's job on the cluster the record names, when that cluster
is one the console shows, so `enter` opens the job.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.widgets import Static

from gpuq.service import Cluster
from gpuq.textsafe import visible
from gpuq.tui.panes.base import Pane, PaneContext, Selection
from gpuq.tui.statusline import hidden_columns
from gpuq.tui.widgets.table import TableData, ViewTable
from gpuq.views.audit import AuditRow, audit_view_cached
from gpuq.views.auditcells import audit_cells, audit_tones, newest_first, row_cluster, row_job
from gpuq.views.columns import AUDIT
from gpuq.views.ledgercells import row_matches

__all__ = ["AuditModel", "AuditPane"]

#: the two clocks an operator reads (the demo's cluster runs ahead of the wall clock), as `gpuq audit` says
_LABEL = "Audit log, newest first · TIME: wall time, when gpuq acted · times in CHANGE: cluster time"


@dataclass(frozen=True, slots=True)
class Row:
    #: where in the log (path index, position): the row's key
    key: str
    row: AuditRow
    #: the console's index of the cluster the record names; None: not one shown here
    index: int | None


@dataclass(frozen=True, slots=True)
class AuditModel:
    rows: list[Row]
    total: int
    unknown: int
    unreadable: int
    paths: list[str]


class AuditPane(Pane):
    view_id = "audit"
    title = "Audit"

    def __init__(self) -> None:
        super().__init__(id="pane-audit")
        self._status = ""

    DEFAULT_CSS = """
    AuditPane { layout: vertical; }
    AuditPane > #audit-label {
        height: 1; color: $primary; text-style: bold; text-wrap: nowrap; text-overflow: ellipsis;
    }
    """

    def compose(self) -> ComposeResult:
        yield Static(Text(_LABEL), id="audit-label")
        yield ViewTable(AUDIT, empty_text="the audit log has no actions yet", id="audit-table")

    @property
    def table(self) -> ViewTable:
        return self.query_one("#audit-table", ViewTable)

    # -- worker thread

    def compute(self, ctx: PaneContext, params: Any) -> AuditModel:
        needle = ctx.filter.lower()
        by_name: dict[str, int] = {}
        for item in ctx.items:
            by_name.setdefault(item.snapshot.cluster, item.index)
            by_name.setdefault(item.cluster.name, item.index)
        logs: dict[str, Cluster] = {}
        for item in ctx.items:
            logs.setdefault(str(item.cluster.audit.path), item.cluster)
        rows: list[Row] = []
        total = unknown = unreadable = 0
        for n, cluster in enumerate(logs.values()):
            view = audit_view_cached(cluster.audit)
            unreadable += len(view.unreadable)
            total += len(view.rows)
            ordered = newest_first(view.rows)
            for i, row in enumerate(ordered):
                if not row.outcome_known:
                    unknown += 1
                if needle and not row_matches(audit_cells(row), needle):
                    continue
                rows.append(Row(f"{n}/{len(ordered) - i}", row, by_name.get(row_cluster(row))))
        if len(logs) > 1:  # (rare: clusters with their own logs) one order, by time
            rows.sort(key=lambda r: str(r.row.record.get("time") or ""), reverse=True)
        return AuditModel(rows, total, unknown, unreadable, list(logs))

    # -- UI thread

    def show(self, model: Any) -> None:
        assert isinstance(model, AuditModel)

        def cells(r: Row) -> Sequence[str]:
            return audit_cells(r.row)

        def tones(r: Row) -> Sequence[str | None]:
            return audit_tones(r.row)

        self.table.set_data(TableData(AUDIT, model.rows, cells, _key, tones))  # type: ignore[arg-type]
        shown = f"{len(model.rows)} of {model.total}" if len(model.rows) != model.total else str(model.total)
        parts = [f"{shown} actions, newest first"]
        if model.unknown:
            parts.append(f"{model.unknown} outcome unknown: check the cluster")
        if model.unreadable:
            parts.append(f"{model.unreadable} unreadable lines skipped")
        self._status = " · ".join(parts)

    def selection(self) -> Selection | None:
        row = self.table.cursor_row()
        if row is None or row.index is None or not row_job(row.row):
            return None
        return Selection(row.index, row_job(row.row))

    def status(self) -> str:
        hidden = self.table.hidden
        more = hidden_columns(hidden)
        return self._status + more

    @on(ViewTable.Opened)
    def _opened(self, event: ViewTable.Opened) -> None:
        row = self.table.cursor_row()
        if row is not None and self.selection() is None:
            event.stop()  # not the job selected earlier: say why nothing opens
            cluster = row_cluster(row.row)
            self.app.notify(f"job {visible(row_job(row.row))} is on cluster {visible(cluster)}, "
                            "which this console does not show", severity="warning", timeout=4)  # fmt: skip

    @on(ViewTable.SortAsked)
    def _sort(self, event: ViewTable.SortAsked) -> None:
        event.stop()  # a log stays newest first
        self.app.notify("the audit log stays newest first; / filters it", timeout=3)


def _key(row: Row) -> str:
    return row.key
