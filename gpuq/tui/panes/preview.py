"""The Preview view: what the selected pending job (or a what-if request) would preempt now.

For the selected job the request is the job's own (`Cluster.job_request`); `w` asks for a what-if
request instead (GPUs, priority, class, tenant, urgent: `WhatIfScreen`), previewed on the cluster
in scope until the operator goes back to the job (the form's "Selected job") or selects another.
A job that is not pending has nothing to preview: the view says so and offers the what-if.

The preview (`Cluster.preview`, which on Slurm also asks slurmctld for its own choice) runs in
the worker; a what-if the service refuses (an unknown class, a priority out of range) is shown
in the view, as the service words it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Self

from textual.app import ComposeResult
from textual.containers import VerticalScroll

from gpuq.errors import BadInput
from gpuq.textsafe import visible
from gpuq.tui.panes.base import Pane, PaneContext, Selection
from gpuq.tui.widgets.preview import PreviewBody
from gpuq.views.preview import PreviewView, from_preview, request_notes, request_summary

__all__ = ["PreviewModel", "PreviewPane", "PreviewParams", "WhatIf"]

WHAT_IF_HINT = "press w for a what-if request (GPUs, priority, class)"


@dataclass(frozen=True, slots=True)
class WhatIf:
    """A what-if request as the form took it (checked by the service when previewed)."""

    gpus: int
    priority: int | None = None
    job_class: str | None = None
    tenant: str | None = None
    urgent: bool = False
    #: the console's index of the cluster it is previewed on
    cluster: int = 0

    def describe(self) -> str:
        parts = [f"{self.gpus} GPU{'' if self.gpus == 1 else 's'}"]
        if self.priority is not None:
            parts.append(f"priority {self.priority}")
        if self.job_class:
            parts.append(f"class {self.job_class}")
        if self.tenant:
            parts.append(f"tenant {self.tenant}")
        if self.urgent:
            parts.append("urgent")
        return ", ".join(parts)


@dataclass(frozen=True, slots=True)
class PreviewParams:
    what_if: WhatIf | None = None


@dataclass(frozen=True, slots=True)
class PreviewModel:
    #: lines above the preview: what it is of, on which cluster, what was asked
    heading: tuple[str, ...]
    view: PreviewView | None = None
    #: why there is no preview (nothing selected, a running job, a refused what-if)
    note: str | None = None


class PreviewPane(Pane):
    view_id = "preview"
    title = "Preview"
    # Without a selection the view still has something to offer (the what-if): it says so itself.
    needs_selection = False

    DEFAULT_CSS = """
    PreviewPane #preview-scroll { height: 1fr; background: $surface; padding: 0 1; scrollbar-size-vertical: 1; }
    """

    def __init__(self) -> None:
        super().__init__(id="pane-preview")
        self.what_if: WhatIf | None = None
        #: the selection when the what-if was asked: selecting another job leaves what-if mode
        self._asked_at: Selection | None = None
        self.model: PreviewModel | None = None

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="preview-scroll"):
            yield PreviewBody(id="preview-body")

    @property
    def body(self) -> PreviewBody:
        return self.query_one("#preview-body", PreviewBody)

    def focus(self, scroll_visible: bool = True) -> Self:
        """The scrolling part takes the focus (arrows and page keys scroll the preview)."""
        found = self.query("#preview-scroll")
        if found:
            found.first().focus(scroll_visible)
        return self

    # -- what-if mode

    def set_what_if(self, what_if: WhatIf | None) -> None:
        """Preview `what_if` (None: the selected job again) and compute."""
        self.what_if = what_if
        self._asked_at = getattr(self.app, "selected", None)
        self.app.recompute()  # type: ignore[attr-defined]  # (now: a test or a key that follows sees it under way)

    def ask_what_if(self) -> None:
        """Open the what-if form (`w`)."""
        from gpuq.tui.screens.whatif import WhatIfScreen

        app: Any = self.app
        index = app.scope if app.scope >= 0 else (app.selected.index if app.selected is not None else 0)
        snapshot = app.snapshots[index]
        classes = sorted({c.name for c in snapshot.classes}) if snapshot is not None else []
        self.app.push_screen(WhatIfScreen(index, classes, self.what_if), callback=self._answered)

    def _answered(self, answer: object) -> None:
        if answer is None:  # cancelled: as it was
            return
        self.set_what_if(answer if isinstance(answer, WhatIf) else None)

    # -- the pane

    def params(self) -> PreviewParams:
        if self.what_if is not None and getattr(self.app, "selected", None) != self._asked_at:
            self.what_if = None  # another job was selected since: show that one
        return PreviewParams(self.what_if)

    def compute(self, ctx: PaneContext, params: Any) -> PreviewModel:
        assert isinstance(params, PreviewParams)
        if params.what_if is not None:
            return _what_if(ctx, params.what_if)
        selection = ctx.selection
        if selection is None:
            return PreviewModel(("Preview",), note=f"select a pending job in the queue (1, then the arrows), or "
                                                   f"{WHAT_IF_HINT}")  # fmt: skip
        item = ctx.item(selection.index)
        if item is None:
            return PreviewModel(("Preview",), note=f"job {selection.job_id} is on a cluster not shown now "
                                                   f"(] and [ switch clusters), or {WHAT_IF_HINT}")  # fmt: skip
        snapshot, cluster = item.snapshot, item.cluster
        heading = f"Preview of job {selection.job_id} on cluster {snapshot.cluster}"
        job = snapshot.job(selection.job_id)
        if job is None:
            return PreviewModel((heading,), note=f"job {selection.job_id} is no longer on cluster {snapshot.cluster}; "
                                                 f"select another, or {WHAT_IF_HINT}")  # fmt: skip
        if not job.is_pending:
            return PreviewModel((heading,), note=(
                f"job {job.id} is {job.state.value}, not pending: a preview shows what a pending job would preempt "
                f"to start; select a pending job, or {WHAT_IF_HINT}"))  # fmt: skip
        if job.gpus < 1:
            return PreviewModel((heading,), note=(
                f"job {job.id} asks for no GPUs (CPU-only): it preempts nobody; select a job waiting for GPUs, "
                f"or {WHAT_IF_HINT}"))  # fmt: skip
        view = from_preview(cluster.preview(cluster.job_request(job.id, snapshot), snapshot))
        return PreviewModel((heading, request_summary(view), *request_notes(view)), view)

    def show(self, model: Any) -> None:
        assert isinstance(model, PreviewModel)
        self.model = model
        self.body.set_preview(model.view, heading=model.heading, note=model.note)

    def status(self) -> str:
        model = self.model
        what = "what-if" if self.what_if is not None else "w: what-if"
        if model is None or model.view is None:
            return what
        plan = model.view.preview.plan
        return f"{len(plan.victims)} victims · {model.view.gpu_hours_at_risk:.2f} GPU-h at risk · {what}"


def _what_if(ctx: PaneContext, what_if: WhatIf) -> PreviewModel:
    item = ctx.item(what_if.cluster) or ctx.items[0]
    snapshot, cluster = item.snapshot, item.cluster
    heading = f"What-if on cluster {snapshot.cluster}: {what_if.describe()} (w: change it, or back to the job)"
    try:
        request = cluster.what_if_request(snapshot, gpus=what_if.gpus, priority=what_if.priority,
                                          job_class=what_if.job_class, tenant=what_if.tenant,
                                          urgent=what_if.urgent)  # fmt: skip
        view = from_preview(cluster.preview(request, snapshot))
    except BadInput as exc:
        return PreviewModel((heading,), note=f"cannot preview this what-if: {visible(str(exc))} (w: change it)")
    return PreviewModel((heading, request_summary(view), *request_notes(view)), view)
