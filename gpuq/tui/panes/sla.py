"""The SLA view: per class the queue-wait percentiles against the class's target, the verdict,
the pending jobs and the oldest of them, a trend of P95 over the session, and for the class under
the cursor its P95 trend across the width and a histogram of its waits.

The trend is kept by the pane (`P95History`: the last 300 points per cluster and class), a point
per snapshot shown: it grows while the view is on screen.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rich.style import Style
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.widget import Widget

from gpuq.textsafe import cell_width, visible
from gpuq.timefmt import format_duration, format_time
from gpuq.tui.panes.base import Pane, PaneContext
from gpuq.tui.statusline import hidden_columns
from gpuq.tui.widgets.table import TableData, ViewTable
from gpuq.tui.widgets.tones import component_style
from gpuq.views.columns import CONSOLE_SLA, TableSpec
from gpuq.views.sla import SlaRow, sla_view
from gpuq.views.slacells import (
    ALL,
    VERDICT_TEXT,
    VERDICT_TONE,
    ClassWaits,
    HistogramBin,
    P95History,
    class_waits,
    judged_p95,
    sla_cells,
    sla_tones,
    sparkline,
    wait_histogram,
)

__all__ = ["SlaDetail", "SlaModel", "SlaPane", "SlaRowModel"]

#: bins of the waits histogram (the view has room for them at 80×24)
BINS = 8
#: the longest bar: on a wide screen a count stays near its bar
BAR_MAX = 72


@dataclass(frozen=True, slots=True)
class SlaRowModel:
    index: int
    cluster: str
    row: SlaRow
    waits: ClassWaits
    bins: tuple[HistogramBin, ...]
    #: the snapshot's cluster time (the trend's clock)
    now: float

    @property
    def key(self) -> str:
        return f"{self.index}/{self.row.name}"


@dataclass(frozen=True, slots=True)
class SlaModel:
    rows: list[SlaRowModel]
    total: int
    combined: bool


class SlaDetail(Widget):
    """The class under the cursor: its P95 trend as wide as the screen, and its waits histogram
    (drawn at the widget's width on every render: a resize redraws it)."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "sladetail--title", "sladetail--muted", "sladetail--bar", "sladetail--pending", "sladetail--ok",
        "sladetail--risk", "sladetail--breach",
    }  # fmt: skip
    DEFAULT_CSS = """
    SlaDetail { height: 1fr; padding: 0 1; }
    SlaDetail > .sladetail--title { color: $primary; text-style: bold; }
    SlaDetail > .sladetail--muted { color: $foreground-muted; }
    SlaDetail > .sladetail--bar { color: $gpuq-running; }
    SlaDetail > .sladetail--pending { color: $gpuq-pending; }
    SlaDetail > .sladetail--ok { color: $gpuq-sla-ok; }
    SlaDetail > .sladetail--risk { color: $gpuq-sla-risk; text-style: bold; }
    SlaDetail > .sladetail--breach { color: $gpuq-sla-breach; text-style: bold; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.row: SlaRowModel | None = None
        self.trend: tuple[tuple[float, float | None], ...] = ()
        self.combined = False

    def show(self, row: SlaRowModel | None, trend: tuple[tuple[float, float | None], ...], combined: bool) -> None:
        self.row, self.trend, self.combined = row, trend, combined
        self.refresh()

    def _style(self, name: str) -> Style:
        return component_style(self, f"sladetail--{name}")

    def render(self) -> Text:
        width = max(20, self.content_region.width or self.size.width or 80)
        text = Text(no_wrap=False, overflow="fold")
        model = self.row
        if model is None:
            text.append("no class", self._style("muted"))
            return text
        self._trend(text, model, width)
        text.append("\n")
        self._histogram(text, model, width)
        return text

    def _label(self, model: SlaRowModel) -> str:
        name = visible(model.row.name)
        return f"{name} ({visible(model.cluster)})" if self.combined else name

    def _trend(self, text: Text, model: SlaRowModel, width: int) -> None:
        stats = model.row.stats
        values = [v for _, v in self.trend]
        known = [v for v in values if v is not None]
        text.append(f"{self._label(model)}: P95 with pending", self._style("title"))
        if self.trend:
            points = f"{len(values)} point{'s' if len(values) != 1 else ''}"
            text.append(f", {points} since {format_time(float(int(self.trend[0][0])))}", self._style("muted"))
        text.append("\n")
        tone = VERDICT_TONE[model.row.verdict]
        text.append(sparkline(values, width) or " ", self._style(tone) if tone else self._style("bar"))
        text.append("\n")
        d = format_duration
        parts = [f"now {d(judged_p95(stats))}"]
        if known:
            parts += [f"lowest {d(min(known))}", f"highest {d(max(known))}"]
        parts.append(f"target {d(stats.target_p95_s)}")
        if model.row.verdict:
            parts.append(VERDICT_TEXT[model.row.verdict])
        text.append(" · ".join(parts))

    def _histogram(self, text: Text, model: SlaRowModel, width: int) -> None:
        waits, bins = model.waits, model.bins
        text.append(f"waits of {self._label(model)}: {waits.count} jobs ({len(waits.started)} started, "
                    f"{len(waits.pending)} pending)", self._style("title"))  # fmt: skip
        text.append("  █ started ", self._style("bar"))
        text.append("▒ pending", self._style("pending"))
        if not waits.count:
            return
        labels = [b.label for b in bins]
        counts = [str(b.count) if not b.pending else f"{b.count} ({b.pending} pending)" for b in bins]
        label_w = max(cell_width(s) for s in labels)
        count_w = max(cell_width(s) for s in counts)
        bar_w = max(1, min(BAR_MAX, width - label_w - count_w - 2))
        top = max(b.count for b in bins) or 1
        target = model.row.stats.target_p95_s
        for b, label, count in zip(bins, labels, counts, strict=True):
            text.append("\n" + label.rjust(label_w) + " ")
            # (the bin's whole bar split: a pending cell whenever the bin has pending jobs, taken
            # from the started part, never added past the bar's width)
            whole = _bar(b.count, top, bar_w)
            pending = min(whole, max(whole - _bar(b.started, top, bar_w), 1 if b.pending else 0))
            started = whole - pending
            late = target is not None and b.low >= target
            text.append("█" * started, self._style("breach" if late else "bar"))
            text.append("▒" * pending, self._style("pending"))
            text.append(" " * (bar_w - started - pending) + " " + count)


def _bar(count: int, top: int, width: int) -> int:
    """A bar's length: proportional, and at least one cell for a bin that is not empty."""
    return 0 if count <= 0 else max(1, round(count / top * width))


class SlaPane(Pane):
    view_id = "sla"
    title = "SLA"

    DEFAULT_CSS = """
    SlaPane { layout: vertical; }
    SlaPane > #sla-table { height: auto; max-height: 60%; }
    """

    def __init__(self) -> None:
        super().__init__(id="pane-sla")
        self.history = P95History()
        self._model: SlaModel | None = None

    def compose(self) -> ComposeResult:
        yield ViewTable(CONSOLE_SLA, empty_text="no classes", id="sla-table")
        yield SlaDetail(id="sla-detail")

    @property
    def table(self) -> ViewTable:
        return self.query_one("#sla-table", ViewTable)

    def compute(self, ctx: PaneContext, params: Any) -> SlaModel:
        needle = ctx.filter.lower()
        rows: list[SlaRowModel] = []
        total = 0
        for item in ctx.items:
            view = sla_view(item.cluster, item.snapshot)
            ctx.pause()
            waits = class_waits(item.snapshot, pause=ctx.pause)
            total += len(view.rows)
            for row in view.rows:
                if needle and needle not in row.name.lower() and needle not in item.snapshot.cluster.lower():
                    continue
                w = waits.get(row.name, ClassWaits())
                rows.append(SlaRowModel(item.index, item.snapshot.cluster, row, w, wait_histogram(w, BINS),
                                        item.snapshot.now))  # fmt: skip
        return SlaModel(rows, total, ctx.combined)

    def show(self, model: Any) -> None:
        assert isinstance(model, SlaModel)
        self._model = model
        for r in model.rows:
            self.history.add((r.index, r.row.name), r.now, judged_p95(r.row.stats))
        spec = CONSOLE_SLA
        if not model.combined:  # the CLUSTER column only where several are shown
            spec = TableSpec(spec.name, tuple(c for c in spec.columns if c.name != "CLUSTER"), spec.header)
        cluster_at = CONSOLE_SLA.names.index("CLUSTER")

        def drop(values: Sequence[Any]) -> tuple[Any, ...]:
            return tuple(values) if model.combined else (*values[:cluster_at], *values[cluster_at + 1 :])

        def cells(r: SlaRowModel) -> tuple[str, ...]:
            return drop(sla_cells(r.row, r.waits, self.history.values((r.index, r.row.name)), r.cluster))

        def tones(r: SlaRowModel) -> tuple[str | None, ...]:
            return drop(sla_tones(r.row))

        self.table.set_data(TableData(spec, model.rows, cells, _key, tones))
        self._show_detail()

    def _show_detail(self) -> None:
        model = self._model
        row = self.table.cursor_row()
        if row is None and model is not None and model.rows:
            row = model.rows[0]
        trend = self.history.points((row.index, row.row.name)) if row is not None else ()
        self.query_one("#sla-detail", SlaDetail).show(row, trend, model.combined if model else False)

    @on(ViewTable.Moved, "#sla-table")
    def _moved(self, event: ViewTable.Moved) -> None:
        self._show_detail()

    def status(self) -> str:
        model = self._model
        if model is None:
            return ""
        classes = [r for r in model.rows if r.row.name != ALL]
        breach = sum(1 for r in classes if r.row.verdict == "breach")
        risk = sum(1 for r in classes if r.row.verdict == "at_risk")
        shown = f"{len(model.rows)} of {model.total} rows" if len(model.rows) != model.total else f"{model.total} rows"
        hidden = self.table.hidden
        more = hidden_columns(hidden)
        return f"{shown} · {breach} in breach · {risk} at risk{more}"


def _key(row: SlaRowModel) -> str:
    return row.key
