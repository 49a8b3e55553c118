"""The GPUs view: occupancy per cluster and GPU pool, the node × GPU grid (each GPU's holder job
in its tenant's colour), and this host's own GPUs when gpuq runs on a GPU node (NVML).

The cursor on a GPU selects the job holding it, so actions (b, e, x, r) and the job detail
(enter) work from here as from the queue.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from gpuq.service import host_gpus
from gpuq.textsafe import visible
from gpuq.tui.panes.base import Pane, PaneContext, Selection
from gpuq.tui.widgets.gpugrid import GpuGridView, GridRow
from gpuq.tui.widgets.hostgpus import HostGpusView
from gpuq.tui.widgets.tones import component_style
from gpuq.views.gpucells import (
    DOWN_CELL,
    FREE_CELL,
    UNPLACED_MARK,
    GridWidths,
    Occupancy,
    grid_matches,
    grid_rows,
    grid_widths,
    occupancy,
    tenant_legend,
)
from gpuq.views.gpus import gpu_grid
from gpuq.views.hostgpus import HostGpuView, host_gpu_view

__all__ = ["GpusModel", "GpusPane"]

#: why this host's GPUs are not shown during a replay
REPLAYING = "this host's GPUs are not shown while replaying a recording"
#: tenants named in the legend (one per colour); the rest are counted
LEGEND_TENANTS = 8


@dataclass(frozen=True, slots=True)
class GpusModel:
    #: the rows the filter keeps
    rows: list[GridRow]
    #: every node's, before the filter: the occupancy is the cluster's, not the filter's
    totals: list[Occupancy]
    pools: dict[str, list[Occupancy]]
    nodes: int
    combined: bool
    needle: str
    #: None: not read (a recording is replayed)
    host: HostGpuView | None
    #: this host's node in the grid (None: it is none of the clusters' nodes)
    host_node: str | None
    unplaced: bool
    #: (tenant, tone, GPUs) of the rows shown
    tenants: list[tuple[str, str, int]]
    widths: GridWidths


def _host_view(report: Any, ctx: PaneContext) -> tuple[HostGpuView, int | None]:
    """This host's GPUs, their jobs checked against the cluster this host is a node of (None:
    none of those in scope; one cluster shown: its view says why not)."""
    for item in ctx.items:
        view = host_gpu_view(report, item.snapshot)
        if view.unchecked is None:
            return view, item.index
    if len(ctx.items) == 1:
        return host_gpu_view(report, ctx.items[0].snapshot), None
    return host_gpu_view(report, None), None


class GpusPane(Pane, can_focus=True):
    view_id = "gpus"
    title = "GPUs"

    COMPONENT_CLASSES: ClassVar[set[str]] = {"gpus--muted", "gpus--title"}
    DEFAULT_CSS = """
    GpusPane { layout: vertical; }
    GpusPane > #gpus-summary { height: auto; padding: 0 1; background: $panel; }
    GpusPane > #gpus-host-box { height: auto; max-height: 50%; }
    GpusPane > .gpus--muted { color: $foreground-muted; }
    GpusPane > .gpus--title { color: $primary; text-style: bold; }
    """

    def __init__(self) -> None:
        super().__init__(id="pane-gpus")
        self._model: GpusModel | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="gpus-summary")
        yield GpuGridView(empty_text="no nodes", id="gpus-grid")
        with VerticalScroll(id="gpus-host-box", can_focus=False):
            yield HostGpusView(id="gpus-host")

    @property
    def grid(self) -> GpuGridView:
        return self.query_one("#gpus-grid", GpuGridView)

    def on_focus(self) -> None:
        self.grid.focus()

    def params(self) -> bool:
        """Whether to read this host's GPUs: not while replaying a recording (they are now's,
        not the recording's)."""
        return getattr(self.app, "replay", None) is None

    def compute(self, ctx: PaneContext, params: Any) -> GpusModel:
        needle = ctx.filter.lower()
        rows: list[GridRow] = []
        every = []
        pause = ctx.pause
        for item in ctx.items:
            grid = gpu_grid(item.snapshot)
            pause()
            found = grid_rows(grid, pause)
            every.extend(found)
            rows.extend((item.index, r) for r in found if not needle or grid_matches(r, needle))
            pause()
        totals, pools = occupancy(every)
        host, host_index = _host_view(host_gpus(), ctx) if params is not False else (None, None)
        host_node = None
        if host is not None and host_index is not None and host.available:
            short = host.host.split(".", 1)[0]
            host_node = next((r.node for i, r in rows if i == host_index and r.node.split(".", 1)[0] == short), None)
        unplaced = any(c.job_id is not None and c.text != c.job_id for _, r in rows for c in r.cells)
        pause()
        return GpusModel(rows, totals, pools, len(every), ctx.combined, needle, host, host_node, unplaced,
                         tenant_legend(r for _, r in rows), grid_widths(r for _, r in rows))  # fmt: skip

    # -- showing

    def _style(self, name: str) -> Any:
        return component_style(self, f"gpus--{name}")

    def show(self, model: Any) -> None:
        assert isinstance(model, GpusModel)
        self._model = model
        self.query_one("#gpus-summary", Static).update(self._summary(model))
        self.grid.set_data(model.rows, combined=model.combined, needle=model.needle, host_node=model.host_node,
                           widths=model.widths)  # fmt: skip
        note = REPLAYING if model.host is None else ""
        self.query_one("#gpus-host", HostGpusView).show(model.host, note, model.host_node)

    def _summary(self, model: GpusModel) -> Text:
        """One line per cluster: its occupancy, then each GPU pool's; a legend last."""
        text = Text()
        for n, total in enumerate(model.totals):
            if n:
                text.append("\n")
            text.append(visible(total.name), self._style("title"))
            text.append(f": {total.text}")
            for pool in model.pools.get(total.name, ()):
                text.append(" · ")
                text.append(visible(pool.name), self._style("title"))
                text.append(f" {pool.busy}/{pool.total} ({pool.percent}%)")
        legend = f"\n{FREE_CELL} free  {DOWN_CELL} down/drain"
        if model.unplaced:
            legend += f"  {UNPLACED_MARK} GPU index unknown"
        text.append(legend + "  ", self._style("muted"))
        shown = model.tenants[:LEGEND_TENANTS]
        for tenant, tone, gpus in shown:
            text.append(visible(tenant), self._grid_style(tone))
            text.append(f" {gpus}  ")
        if len(model.tenants) > len(shown):
            text.append(f"+{len(model.tenants) - len(shown)} more tenants", self._style("muted"))
        text.rstrip()
        return text

    def _grid_style(self, tone: str) -> Any:
        """A tenant's colour as the grid draws it."""
        return component_style(self.grid, f"gpugrid--{tone}")

    def selection(self) -> Selection | None:
        found = self.grid.cursor_cell()
        if found is None or found[1] is None or found[1].job_id is None:
            return None
        return Selection(found[0][0], found[1].job_id)

    def status(self) -> str:
        model = self._model
        if model is None:
            return ""
        shown = len(model.rows)
        return f"{shown} of {model.nodes} nodes" if shown != model.nodes else f"{model.nodes} nodes"
