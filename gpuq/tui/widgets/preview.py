"""`PreviewBody`: a preview as the console shows it (the Preview view and a bump's modal alike).

The verdict, the victims with the GPU-hours at risk, the spared candidates with their reasons,
gpuq's notes and, where the backend predicts its own scheduler (Slurm), the native plan: beside
gpuq's when the widget is wide enough, under it otherwise, and where the two differ. Every word
comes from the view layer (`gpuq.views.preview`), so the console says what `gpuq preview` says.

Tables follow the view's `TableSpec` as the console's other tables do (`FittedTable`): an id, a
number or a word is never cut; when the columns do not fit, the least important are dropped and
a line says which. All outside text goes through `visible` into `Text`, never markup.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import ClassVar

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual.widget import Widget

from gpuq.textsafe import cell_width, visible
from gpuq.tui.widgets.fitting import TEXT_MIN, choose_columns, whole_width
from gpuq.views.columns import PREVIEW_NATIVE, PREVIEW_SPARED, PREVIEW_VICTIMS, Column, Kind, TableSpec
from gpuq.views.preview import (
    PreviewView,
    native_heading,
    native_rows,
    native_summary,
    spared_rows,
    verdict,
    victim_rows,
)

__all__ = ["SIDE_BY_SIDE", "FittedTable", "PreviewBody", "preview_renderable"]

#: a cell: text, or items of a LIST column
Cell = str | tuple[str, ...]
#: from this width on, gpuq's plan and the native one are shown side by side
SIDE_BY_SIDE = 150
#: style names (component classes `previewbody--NAME`)
STYLES = ("heading", "header", "muted", "fits", "preempts", "blocked", "never", "differs")


def _text(cell: Cell, column: Column) -> str:
    if isinstance(cell, tuple):
        # ", " lets a narrow column wrap between items, never inside one
        return f"{column.sep.strip() or ''} ".join(visible(c) for c in cell) if cell else "-"
    return visible(cell)


class FittedTable:
    """A Rich table of a view's rows, fitted to the width it is drawn at (see the module docstring)."""

    def __init__(self, spec: TableSpec, rows: Sequence[Sequence[Cell]], *, title: str | None = None,
                 header: Style | None = None, muted: Style | None = None) -> None:  # fmt: skip
        self.spec, self.title = spec, title
        self.header, self.muted = header or Style(bold=True), muted or Style(dim=True)
        self.cells = [[_text(cell, col) for cell, col in zip(row, spec.columns, strict=False)] for row in rows]

    def _widths(self) -> list[int]:
        widths = [cell_width(c.name) for c in self.spec.columns]
        for row in self.cells:
            for i, text in enumerate(row):
                widths[i] = max(widths[i], cell_width(text))
        return [whole_width(c, w) for c, w in zip(self.spec.columns, widths, strict=True)]

    def shown(self, width: int) -> list[int]:
        """The columns (indexes) that fit `width`: the least important dropped first."""
        columns, widths = self.spec.columns, self._widths()
        wants = []
        for i, column in enumerate(columns):
            if column.kind is Kind.LIST:  # (wraps between its items: as wide as the widest item)
                want = max((cell_width(item) for row in self.cells for item in row[i].split(" ")), default=1)
                wants.append(max(want, cell_width(column.name)))
            else:
                wants.append(min(widths[i], TEXT_MIN) if column.kind is Kind.TEXT else widths[i])
        return choose_columns([c.rank for c in columns], wants, width)[0]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        columns = self.spec.columns
        shown = self.shown(options.max_width)
        if self.title:
            yield Text(self.title, style=self.header)
        table = Table(box=None, show_header=self.spec.header, header_style=self.header, pad_edge=False,
                      padding=(0, 1), expand=False)  # fmt: skip
        widths = self._widths()
        for i in shown:
            column = columns[i]
            fixed = column.kind in (Kind.ID, Kind.NUMBER, Kind.PLAIN)
            # (an id past LONGEST_WHOLE_ID is cut with "…": `fitting`)
            table.add_column(Text(column.name), justify="right" if column.right else "left", no_wrap=fixed,
                             overflow="ellipsis" if fixed else "fold", min_width=widths[i] if fixed else None,
                             max_width=widths[i] if fixed else None)  # fmt: skip
        for row in self.cells:
            table.add_row(*(Text(row[i]) for i in shown))
        yield table
        hidden = [columns[i].name for i in range(len(columns)) if i not in shown]
        if hidden:
            yield Text(f"({', '.join(hidden)} hidden: a wider window shows them)", style=self.muted)


def _lines(texts: Iterable[Text]) -> list[RenderableType]:
    return list(texts)


class _PreviewRenderable:
    """gpuq's plan and the native one, side by side when there is room (decided at draw time)."""

    def __init__(self, view: PreviewView, styles: Mapping[str, Style], *, spared: bool) -> None:
        self.view, self.styles, self.spared = view, styles, spared

    def _ours(self) -> list[RenderableType]:
        view, styles = self.view, self.styles
        plan = view.preview.plan
        answer = verdict(view)
        parts: list[RenderableType] = [Text.assemble((answer.head, styles[answer.kind]), visible(answer.text))]
        if plan.victims:
            title = (f"victims: {len(plan.victims)} job(s), {view.gpu_hours_at_risk:.2f} GPU-hours at risk, "
                     f"{plan.freed_gpus} GPUs freed")  # fmt: skip
            parts += [Text(""), FittedTable(PREVIEW_VICTIMS, victim_rows(view), title=title,
                                            header=styles["header"], muted=styles["muted"])]  # fmt: skip
        else:
            parts.append(Text("no victims: nothing would be preempted (0.00 GPU-hours at risk)", style=styles["muted"]))
        if plan.spared and self.spared:
            parts += [Text(""), FittedTable(PREVIEW_SPARED, spared_rows(view),
                                            title=f"spared: {len(plan.spared)} candidate(s), and why",
                                            header=styles["header"], muted=styles["muted"])]  # fmt: skip
        elif plan.spared:
            parts.append(Text(f"{len(plan.spared)} candidate(s) spared (the Preview view, 6, says why)",
                              style=styles["muted"]))  # fmt: skip
        parts += _lines(Text(f"note: {visible(note)}", style=styles["muted"]) for note in plan.notes)
        return parts

    def _native(self) -> list[RenderableType]:
        result, styles = self.view.preview, self.styles
        if result.native_error is not None:
            return [Text(f"native scheduler: {visible(result.native_error)}", style=styles["muted"])]
        native = result.native
        if native is None:
            return []
        parts: list[RenderableType] = [Text.assemble((f"{native_heading(native)}: ", styles["heading"]),
                                                     visible(native_summary(native)))]  # fmt: skip
        if native.victims:
            parts.append(FittedTable(PREVIEW_NATIVE, native_rows(native), header=styles["header"],
                                     muted=styles["muted"]))  # fmt: skip
        parts += _lines(Text(f"  {visible(note)}", style=styles["muted"]) for note in native.notes)
        return parts

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        ours, native = self._ours(), self._native()
        differs = self.view.differs
        if native and options.max_width >= SIDE_BY_SIDE:
            grid = Table.grid(expand=True, padding=(0, 2))
            grid.add_column(ratio=1)
            grid.add_column(ratio=1)
            grid.add_row(Group(Text("gpuq's policy", style=self.styles["heading"]), *ours), Group(*native))
            yield grid
        else:
            yield from ours
            if native:
                yield Text("")
                yield from native
        if self.view.preview.native is not None:
            if differs:
                yield Text.assemble(("where they differ: ", self.styles["differs"]), visible(differs))
            else:
                yield Text("gpuq's policy and the native scheduler choose the same victims", style=self.styles["muted"])


def preview_renderable(view: PreviewView, styles: Mapping[str, Style], *, spared: bool = True) -> RenderableType:
    """A preview for a Rich surface; `styles`: a Style for each name in `STYLES`."""
    return _PreviewRenderable(view, styles, spared=spared)


class PreviewBody(Widget):
    """A heading, an optional note (why there is no preview) and the preview itself."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {f"previewbody--{name}" for name in STYLES}
    DEFAULT_CSS = """
    PreviewBody { height: auto; }
    PreviewBody > .previewbody--heading { color: $primary; text-style: bold; }
    PreviewBody > .previewbody--header { color: $primary; text-style: bold; }
    PreviewBody > .previewbody--muted { color: $foreground-muted; }
    PreviewBody > .previewbody--fits { color: $gpuq-sla-ok; text-style: bold; }
    PreviewBody > .previewbody--preempts { color: $gpuq-sla-risk; text-style: bold; }
    PreviewBody > .previewbody--blocked { color: $gpuq-pending; text-style: bold; }
    PreviewBody > .previewbody--never { color: $gpuq-sla-breach; text-style: bold; }
    PreviewBody > .previewbody--differs { color: $warning; text-style: bold; }
    """

    def __init__(self, *, spared: bool = True, id: str | None = None) -> None:
        super().__init__(id=id)
        self.spared = spared
        self.heading: list[str] = []
        self.note: str | None = None
        self.view: PreviewView | None = None

    def set_preview(self, view: PreviewView | None, *, heading: Sequence[str] = (), note: str | None = None) -> None:
        """Show `view` under `heading` (lines of outside text, shown as data); `note`: why there
        is no preview, or what to do next."""
        self.view, self.heading, self.note = view, list(heading), note
        self.refresh(layout=True)

    def styles_by_name(self) -> dict[str, Style]:
        return {name: self.get_component_rich_style(f"previewbody--{name}", partial=True) for name in STYLES}

    def render(self) -> RenderableType:
        styles = self.styles_by_name()
        parts: list[RenderableType] = []
        for n, line in enumerate(self.heading):
            parts.append(Text(visible(line), style=styles["heading"] if n == 0 else ""))
        if self.note:
            parts.append(Text(visible(self.note), style=styles["blocked"]))
        if self.view is not None:
            parts.append(preview_renderable(self.view, styles, spared=self.spared))
        return Group(*parts)
