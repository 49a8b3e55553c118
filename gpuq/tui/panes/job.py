"""The Job detail view: every field of the selected job, why it is pending in plain words, its
preemption history and its audit entries (newest first, an outcome never logged marked).

The job is the one selected in any table (`ctx.selection`: cluster index and id). A job that has
left the snapshot (finished and forgotten by the backend, or never there) is said in a line, not
raised: the operator keeps the console.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Self

from rich.console import Group, RenderableType
from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from gpuq.errors import GpuqError, NotFound
from gpuq.textsafe import visible
from gpuq.tui.panes.base import Pane, PaneContext
from gpuq.views.job import JobView, job_view
from gpuq.views.jobcells import AuditLine, audit_lines, history_lines, job_fields
from gpuq.views.preemptions import job_preemptions

__all__ = ["JobModel", "JobPane"]


@dataclass(frozen=True, slots=True)
class JobModel:
    cluster: str
    job_id: str
    #: None: the job is not in the cluster's snapshot (`missing` says why, in a line)
    view: JobView | None
    missing: str = ""
    fields: tuple[tuple[str, str], ...] = ()
    history: tuple[str, ...] = ()
    audit: tuple[AuditLine, ...] = ()
    audit_error: str = ""


class JobPane(Pane):
    view_id = "job"
    title = "Job"
    needs_selection = True

    COMPONENT_CLASSES: ClassVar[set[str]] = {"job--heading", "job--key", "job--unknown", "job--idle", "job--empty"}
    DEFAULT_CSS = """
    JobPane > VerticalScroll { height: 1fr; background: $surface; padding: 0 1; }
    JobPane > .job--heading { color: $primary; text-style: bold; }
    JobPane > .job--key { color: $foreground; text-style: bold; }
    JobPane > .job--unknown { color: $gpuq-sla-breach; text-style: bold; }
    JobPane > .job--idle { color: $foreground-muted; }
    JobPane > .job--empty { color: $foreground-muted; text-style: italic; }
    """

    def __init__(self) -> None:
        super().__init__(id="pane-job")
        self._status = ""
        self._shown: tuple[str, str] | None = None

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="job-scroll"):
            yield Static(id="job-body")

    def focus(self, scroll_visible: bool = True) -> Self:
        """The keys (arrows, page up/down) scroll the detail."""
        self.query_one("#job-scroll", VerticalScroll).focus(scroll_visible)
        return self

    # -- worker thread

    def compute(self, ctx: PaneContext, params: Any) -> JobModel:
        chosen = ctx.selection
        assert chosen is not None  # the app shows "select a job" instead (needs_selection)
        item = ctx.item(chosen.index)
        if item is None:
            why = f"job {chosen.job_id} is on a cluster not shown now: switch to it with ] or :cluster"
            return JobModel("", chosen.job_id, None, why)
        name = item.snapshot.cluster
        try:
            view = job_view(item.cluster, item.snapshot, chosen.job_id, with_audit=True)
        except NotFound:
            return JobModel(name, chosen.job_id, None, f"job {chosen.job_id} is no longer in the queue of {name}")
        except GpuqError as exc:  # the audit log unreadable: the job is still worth showing
            view = job_view(item.cluster, item.snapshot, chosen.job_id)
            error = str(exc)
        else:
            error = ""
        victim, preemptor = job_preemptions(item.snapshot, chosen.job_id)
        history = history_lines(victim, preemptor, item.snapshot.now)
        return JobModel(name, chosen.job_id, view, "", tuple(job_fields(view)), tuple(history),
                        tuple(audit_lines(view)), error)  # fmt: skip

    # -- UI thread

    def _style(self, name: str) -> Style:
        return self.get_component_rich_style(f"job--{name}", partial=True)

    def _heading(self, text: str) -> Text:
        return Text(f"\n{text}", style=self._style("heading"))

    def _bullets(self, lines: Sequence[tuple[str, str]], empty: str) -> RenderableType:
        """(text, style name) lines as a list; a long one wraps under its own start."""
        if not lines:
            return Text(f"  {empty}", style=self._style("empty"))
        grid = Table.grid(padding=(0, 1))
        grid.add_column(no_wrap=True, width=3, justify="right")
        grid.add_column(overflow="fold")
        for text, style in lines:
            grid.add_row(Text("-"), Text(visible(text), style=self._style(style) if style else ""))
        return grid

    def show(self, model: Any) -> None:
        assert isinstance(model, JobModel)
        body = self.query_one("#job-body", Static)
        scroll = self.query_one("#job-scroll", VerticalScroll)
        moved = (model.cluster, model.job_id) != self._shown
        self._shown = (model.cluster, model.job_id)
        view = model.view
        if view is None:
            body.update(Text(visible(model.missing), style=self._style("key")))
            self._status = visible(model.missing)
            return
        fields = Table.grid(padding=(0, 2))
        fields.add_column(no_wrap=True, style=self._style("key"))
        fields.add_column(overflow="fold")
        for key, value in model.fields:
            fields.add_row(Text(key), Text(visible(value)))
        parts: list[RenderableType] = [fields]
        parts.append(self._heading("Why pending" if view.job.is_pending else "Status"))
        parts.append(self._bullets([(line, "") for line in view.explanation], "nothing to explain"))
        counts = f"{view.preemptions}x total, {view.preemptions_24h}x in the last 24 h"
        parts.append(self._heading(f"Preemptions ({counts}; cluster time)"))
        parts.append(self._bullets([(line, "") for line in model.history], "never preempted, and it preempted no job"))
        unknown = sum(1 for a in model.audit if a.unknown)
        more = f": {unknown} outcome unknown, check the cluster" if unknown else ""
        parts.append(self._heading(f"Audit (this job's actions, newest first, wall time){more}"))
        if model.audit_error:
            parts.append(Text(f"  {visible(model.audit_error)}", style=self._style("unknown")))
        lines = [(a.text, "unknown" if a.unknown else "idle" if a.idle else "") for a in model.audit]
        parts.append(self._bullets(lines, "no action on this job in the audit log"))
        body.update(Group(*parts))
        self._status = f"job {visible(view.job.id)} on {visible(model.cluster)}: {view.job.state.value}"
        if moved:
            scroll.scroll_home(animate=False)

    def status(self) -> str:
        return self._status
