"""The Policy lab: a trace (or the built-in workload) replayed under cancel, requeue (from
checkpoint) and graceful side by side, re-simulated in the compute worker whenever the operator
moves Δ, the grace period, the checkpoint interval or the SLA limit with a key; below, one job's
life under each strategy (the most preempted first; `n`/`N` step through the jobs).

The last result stays on screen, marked "re-simulating…", while the next one is computed;
results are kept by settings (`gpuq.service.policylab.Lab`), so a setting seen before is shown
at once. `:lab PATH` (or `:trace PATH`) loads a trace instead; one that cannot be read is said
in a notification and the lab keeps what it had.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Self

from rich.console import Group, RenderableType
from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import VerticalScroll
from textual.widgets import Static

from gpuq.errors import GpuqError
from gpuq.service.policylab import (
    STRATEGIES,
    Lab,
    LabResult,
    LabSettings,
    TraceRequest,
    builtin_trace,
    load_trace,
    parse_lab_command,
    parse_shape,
)
from gpuq.textsafe import visible
from gpuq.tui.keymap import bindings, keys_of
from gpuq.tui.panes.base import Pane, PaneContext
from gpuq.views.policylab import (
    LIFE_COLUMNS,
    JobTimeline,
    LabRow,
    StrategyLife,
    job_order,
    job_timeline,
    lab_table,
    preempted_count,
    settings_line,
)

__all__ = ["LabModel", "LabPane", "LabParams"]

#: from this width on the three strategies' steps stand side by side; narrower, one under another
SIDE_BY_SIDE = 120
#: the knobs' key actions, in the order the settings line shows them
_KNOB_KEYS = (("delta", "lab_delta"), ("grace", "lab_grace"), ("checkpoint", "lab_checkpoint"), ("sla", "lab_sla"))


@dataclass(frozen=True, slots=True)
class LabParams:
    request: TraceRequest = TraceRequest()
    settings: LabSettings = LabSettings()
    #: the timeline's job; None: the most preempted
    job: str | None = None


@dataclass(frozen=True, slots=True)
class LabModel:
    params: LabParams
    #: None: `error` says why nothing was replayed (the trace could not be read or run)
    result: LabResult | None
    rows: tuple[LabRow, ...] = ()
    order: tuple[str, ...] = ()
    preempted: int = 0
    timeline: JobTimeline | None = None
    error: str = ""


class LabPane(Pane):
    view_id = "lab"
    title = "Policy lab"

    BINDINGS: ClassVar[list[BindingType]] = [*bindings("lab")]
    COMPONENT_CLASSES: ClassVar[set[str]] = {"lab--heading", "lab--key", "lab--value", "lab--muted", "lab--best",
                                             "lab--busy", "lab--lost"}  # fmt: skip
    DEFAULT_CSS = """
    LabPane > VerticalScroll { height: 1fr; background: $surface; padding: 0 1; }
    LabPane > .lab--heading { color: $primary; text-style: bold; }
    LabPane > .lab--key { color: $accent; text-style: bold; }
    LabPane > .lab--value { color: $foreground; text-style: bold; }
    LabPane > .lab--muted { color: $foreground-muted; }
    LabPane > .lab--best { color: $gpuq-sla-ok; text-style: bold; }
    LabPane > .lab--busy { color: $gpuq-sla-risk; text-style: bold; }
    LabPane > .lab--lost { color: $gpuq-sla-breach; }
    """

    def __init__(self) -> None:
        super().__init__(id="pane-lab")
        self._params = LabParams()
        #: the model on screen (UI thread)
        self._model: LabModel | None = None
        #: the last good trace request: where a failed load goes back to (UI thread)
        self._good = TraceRequest()
        #: the traces opened, by request and (the built-in workload fits it) the cluster's shape
        #: (compute worker; one compute runs at a time)
        self._labs: dict[tuple[TraceRequest, int, int], Lab] = {}
        #: (result, its job order): ordering every job is done once per result (compute worker)
        self._order: tuple[LabResult, tuple[str, ...], int] | None = None

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="lab-scroll"):
            yield Static(id="lab-settings")
            yield Static(id="lab-table")
            yield Static(id="lab-timeline")

    def focus(self, scroll_visible: bool = True) -> Self:
        """Arrows and page up/down scroll the lab; its keys work from there."""
        self.query_one("#lab-scroll", VerticalScroll).focus(scroll_visible)
        return self

    # -- keys and commands (UI thread)

    def action_lab_step(self, knob: str, steps: int) -> None:
        settings = self._params.settings.stepped(knob, steps)
        if settings == self._params.settings:
            self.app.notify(f"{knob}: already at its {'highest' if steps > 0 else 'lowest'} stop", timeout=2)
            return
        self._params = replace(self._params, settings=settings)
        self._changed()

    def action_lab_job(self, steps: int) -> None:
        model = self._model
        if model is None or not model.order:
            return
        current = model.timeline.job_id if model.timeline is not None else model.order[0]
        at = model.order.index(current) if current in model.order else 0
        self._params = replace(self._params, job=model.order[(at + steps) % len(model.order)])
        self._changed()

    def load(self, text: str) -> None:
        """`:lab …`/`:trace …`: replay another trace (or `builtin`), maybe on another shape."""
        try:
            request = parse_lab_command(text)
        except GpuqError as exc:
            self.app.notify(str(exc), title="Policy lab", severity="error")
            return
        settings = self._params.settings
        if request.shape is not None:
            nodes, gpus = parse_shape(request.shape)
            settings = replace(settings, nodes=nodes, gpus_per_node=gpus)
        self._params = LabParams(request, settings, None)
        self._changed()

    def _changed(self) -> None:
        self._paint_settings()
        self.app.recompute()  # type: ignore[attr-defined]

    def params(self) -> LabParams:
        return self._params

    # -- worker thread

    def _lab(self, request: TraceRequest, settings: LabSettings) -> Lab:
        key = (request, settings.nodes, settings.gpus_per_node) if request.path is None else (request, 0, 0)
        lab = self._labs.get(key)
        if lab is None:
            if request.path is None:
                trace = builtin_trace(nodes=settings.nodes, gpus_per_node=settings.gpus_per_node)
            else:
                trace = load_trace(request.path, preset=request.preset)
            lab = self._labs[key] = Lab(trace)
        return lab

    def compute(self, ctx: PaneContext, params: Any) -> LabModel:
        assert isinstance(params, LabParams)
        policy = ctx.items[0].cluster.policy if ctx.items else None
        try:
            result = self._lab(params.request, params.settings).result(params.settings, policy)
        except GpuqError as exc:
            return LabModel(params, None, error=str(exc))
        known = self._order
        if known is None or known[0] is not result:
            known = self._order = (result, job_order(result), preempted_count(result))
        order = known[1]
        job = params.job if params.job is not None and params.job in result.trace.by_id else None
        if job is None and order:
            job = order[0]
        timeline = job_timeline(result, job) if job is not None else None
        return LabModel(params, result, lab_table(result), order, known[2], timeline)

    # -- UI thread

    def show(self, model: Any) -> None:
        assert isinstance(model, LabModel)
        if model.error:
            self.app.notify(visible(model.error), title="Policy lab", severity="error")
            if self._params.request == model.params.request:  # back to what the lab had
                self._params = replace(self._params, request=self._good, job=None)
                if self._model is not None:
                    self._params = replace(self._params, settings=self._model.params.settings)
            self._paint_settings()
            return
        self._good = model.params.request
        self._model = model
        self._paint()

    def on_resize(self, event: events.Resize) -> None:
        if self._model is not None:
            self._paint()

    def _keys(self) -> Mapping[str, str]:
        """The config's rebinds (`[console.keys]`), to name the keys as they are bound."""
        settings = getattr(self.app, "settings", None)
        return getattr(settings, "keys", None) or {}

    def _style(self, name: str) -> Style:
        return self.get_component_rich_style(f"lab--{name}", partial=True)

    def _busy(self) -> str:
        """What is being computed that the screen does not show yet ("" when it shows it all)."""
        model = self._model
        if model is None:
            return "simulating…"
        if model.params.request != self._params.request:
            return "loading the trace…"
        if model.params.settings != self._params.settings:
            return "re-simulating…"
        return ""

    def _paint(self) -> None:
        self._paint_settings()
        model = self._model
        assert model is not None and model.result is not None
        self.query_one("#lab-table", Static).update(self._table(model))
        self.query_one("#lab-timeline", Static).update(self._timeline(model))

    def _paint_settings(self) -> None:
        if not self.is_mounted:
            return
        settings = self._params.settings
        model = self._model
        line = Text()
        name = model.result.trace.name if model is not None and model.result is not None else "built-in workload"
        line.append("Replaying ", style=self._style("muted"))
        line.append(visible(name), style=self._style("value"))
        line.append(f" on {settings.nodes}×{settings.gpus_per_node} GPUs", style=self._style("muted"))
        knobs = Text()
        keys = self._keys()
        for (label, value), (_, action) in zip(settings_line(settings), _KNOB_KEYS, strict=True):
            if knobs:
                knobs.append("  ")
            knobs.append(f"{label} ", style=self._style("muted"))
            knobs.append(value, style=self._style("value"))
            down, up = keys_of(f"{action}_down", keys), keys_of(f"{action}_up", keys)
            knobs.append(f" {down}/{up}", style=self._style("key"))
        busy = self._busy()
        if busy:
            knobs.append("  ")
            knobs.append(busy, style=self._style("busy"))
        self.query_one("#lab-settings", Static).update(Group(line, knobs))

    def _table(self, model: LabModel) -> RenderableType:
        table = Table(box=None, pad_edge=False, padding=(0, 2), show_edge=False, expand=False,
                      header_style=self._style("heading"))  # fmt: skip
        table.add_column("", no_wrap=True, style=self._style("muted"))
        for strategy in STRATEGIES:
            table.add_column("requeue (ckpt)" if strategy == "requeue" else strategy, justify="right", no_wrap=True)
        for row in model.rows:
            best = self._style("best")
            table.add_row(
                Text(row.label), *(Text(c, style=best if b else "") for c, b in zip(row.cells, row.best, strict=True))
            )
        return table

    def _timeline(self, model: LabModel) -> RenderableType:
        timeline = model.timeline
        keys = self._keys()
        next_key, previous_key = keys_of("lab_next_job", keys), keys_of("lab_previous_job", keys)
        if timeline is None:
            return Text("\nno job was replayed", style=self._style("muted"))
        heading = Text("\n")
        heading.append(f"Timeline of {timeline.heading}", style=self._style("heading"))
        at = model.order.index(timeline.job_id) + 1 if timeline.job_id in model.order else 0
        heading.append(f"\n{next_key}/{previous_key}", style=self._style("key"))
        heading.append(f": job {at:,} of {len(model.order):,} ({model.preempted:,} preempted, most first) · "
                       "times since its submit", style=self._style("muted"))  # fmt: skip
        summary = Table(box=None, pad_edge=False, padding=(0, 1), show_edge=False, header_style=self._style("heading"))
        summary.add_column("", no_wrap=True)
        for name, right in LIFE_COLUMNS:
            summary.add_column(name, justify="right" if right else "left", no_wrap=True)
        lost_style = self._style("lost")
        for life in timeline.lives:
            wait, preempted, lost, end, others = life.cells()
            lost_text = Text(lost, style=lost_style if life.lost_gpu_s else "")
            summary.add_row(Text(life.strategy, style=self._style("value")), Text(wait), Text(preempted), lost_text,
                            Text(end), Text(others))  # fmt: skip
        return Group(heading, summary, Text(""), self._steps(timeline))

    def _step_lines(self, life: StrategyLife) -> Text:
        text = Text()
        for step in life.steps:
            if text:
                text.append("\n")
            text.append(f"{step.when:>8} ", style=self._style("muted"))
            text.append(step.text, style=self._style("lost") if step.lost_gpu_s else "")
        if life.more:
            text.append(f"\n   … {life.more} more steps", style=self._style("muted"))
        return text

    def _steps(self, timeline: JobTimeline) -> RenderableType:
        if self.size.width >= SIDE_BY_SIDE:
            table = Table(box=None, pad_edge=False, padding=(0, 2), show_edge=False, expand=True,
                          header_style=self._style("heading"))  # fmt: skip
            for life in timeline.lives:
                table.add_column(life.strategy, ratio=1, overflow="fold")
            table.add_row(*(self._step_lines(life) for life in timeline.lives))
            return table
        parts: list[RenderableType] = []
        for life in timeline.lives:
            line = Text()
            line.append(f"{life.strategy}: ", style=self._style("heading"))
            for i, step in enumerate(life.steps):
                if i:
                    line.append(" · ", style=self._style("muted"))
                line.append(f"{step.when} ", style=self._style("muted"))
                line.append(step.text, style=self._style("lost") if step.lost_gpu_s else "")
            if life.more:
                line.append(f" · … {life.more} more", style=self._style("muted"))
            parts.append(line)
        return Group(*parts)

    def status(self) -> str:
        model = self._model
        if model is None or model.result is None:
            return self._busy()
        busy = self._busy()
        jobs = f"{len(model.result.trace.jobs):,} jobs"
        return f"{jobs} · {busy}" if busy else jobs
