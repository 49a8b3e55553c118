"""`GpuGridView`: the node × GPU grid, one node per line, each GPU cell its holder's id in its
tenant's colour, drawn line by line (Line API) so a cluster of thousands of nodes costs only the
lines on screen.

A holder's id is never cut: every cell is as wide as the widest id, and a node whose cells do not
fit on one line goes on under them, its cells split evenly over the lines. The cursor is on one
GPU cell (arrows or h/j/k/l); the job holding it is the selection, so actions and the job detail
work from here as from the queue. Cells are plain text from the views, drawn as segments, never
read as markup.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from gpuq.textsafe import cell_width, visible
from gpuq.tui.keymap import bindings
from gpuq.tui.widgets.table import STYLE_NAMES, ViewTable
from gpuq.tui.widgets.tones import component_style
from gpuq.views.gpucells import GpuCell, GridWidths, NodeRow, grid_widths

__all__ = ["GridRow", "GpuGridView"]

#: a row of the grid: the console's index of the node's cluster, and the node's cells
GridRow = tuple[int, NodeRow]
GAP = 2


class GpuGridView(ScrollView, can_focus=True):
    """See the module docstring."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "gpugrid--header", "gpugrid--cursor", "gpugrid--row", "gpugrid--match", "gpugrid--host",
        "gpugrid--empty", *(f"gpugrid--{name}" for name in STYLE_NAMES),
    }  # fmt: skip
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "move(-1, 0)", "Up", show=False),
        Binding("down,j", "move(1, 0)", "Down", show=False),
        Binding("left,h", "move(0, -1)", "Left", show=False),
        Binding("right,l", "move(0, 1)", "Right", show=False),
        Binding("pageup,ctrl+b", "page(-1)", "Page up", show=False),
        Binding("pagedown,ctrl+f", "page(1)", "Page down", show=False),
        Binding("home", "edge(0)", "First", show=False),
        Binding("end,G", "edge(1)", "Last", show=False),
        *bindings("table", ids=("open",)),
    ]
    DEFAULT_CSS = """
    GpuGridView { height: 1fr; background: $surface; scrollbar-size-vertical: 1; }
    GpuGridView > .gpugrid--header { color: $primary; text-style: bold; background: $panel; }
    GpuGridView > .gpugrid--cursor { background: $primary 40%; text-style: bold reverse; }
    GpuGridView > .gpugrid--row { background: $secondary 20%; }
    GpuGridView > .gpugrid--match { text-style: bold underline; }
    GpuGridView > .gpugrid--host { text-style: bold underline; }
    GpuGridView > .gpugrid--empty { color: $foreground-muted; text-style: italic; }
    GpuGridView > .gpugrid--idle { color: $gpuq-gpu-idle; }
    GpuGridView > .gpugrid--down { color: $gpuq-gpu-down; }
    GpuGridView > .gpugrid--muted { color: $foreground-muted; }
    GpuGridView > .gpugrid--tenant-0 { color: $gpuq-tenant-0; }
    GpuGridView > .gpugrid--tenant-1 { color: $gpuq-tenant-1; }
    GpuGridView > .gpugrid--tenant-2 { color: $gpuq-tenant-2; }
    GpuGridView > .gpugrid--tenant-3 { color: $gpuq-tenant-3; }
    GpuGridView > .gpugrid--tenant-4 { color: $gpuq-tenant-4; }
    GpuGridView > .gpugrid--tenant-5 { color: $gpuq-tenant-5; }
    GpuGridView > .gpugrid--tenant-6 { color: $gpuq-tenant-6; }
    GpuGridView > .gpugrid--tenant-7 { color: $gpuq-tenant-7; }
    """

    class Moved(ViewTable.Moved):
        """The cursor is on another GPU cell (the app takes the selection from the pane)."""

        def __init__(self, grid: GpuGridView, key: str | None) -> None:
            Message.__init__(self)
            self.grid, self.key = grid, key

    class Opened(ViewTable.Opened):
        """Enter on a cell that a job holds: the app opens that job's detail."""

        def __init__(self, grid: GpuGridView, key: str) -> None:
            Message.__init__(self)
            self.grid, self.key = grid, key

    def __init__(self, *, empty_text: str = "no nodes", id: str | None = None) -> None:
        super().__init__(id=id)
        self.rows: Sequence[GridRow] = ()
        self.combined = False
        self.needle = ""
        #: the node this host is (its name in the grid), drawn underlined
        self.host_node: str | None = None
        self.empty_text = empty_text
        #: (row, cell) of the cursor
        self.cursor = (0, 0)
        self._lines: list[tuple[int, int, int]] = []
        self._first_line: list[int] = []
        self._prefix: list[tuple[str, int, bool]] = []
        self._cell_w = 1
        self._widths = grid_widths(())
        self._laid_out_for = -1

    # -- data

    def set_data(self, rows: Sequence[GridRow], *, combined: bool = False, needle: str = "",
                 host_node: str | None = None, widths: GridWidths | None = None) -> None:  # fmt: skip
        """Show new rows, the cursor kept on the same node and GPU (the nearest row if gone).
        `widths`: `grid_widths` of the rows, measured off the UI thread (measured here if None)."""
        old, old_key = self._cursor_id(), self.cursor_key
        self.rows, self.combined, self.needle, self.host_node = rows, combined, needle.lower(), host_node
        self._widths = widths or grid_widths(r for _, r in rows)
        row, cell = self.cursor
        if old is not None:
            found = next((i for i, (index, r) in enumerate(rows) if (index, r.node) == old[:2]), -1)
            row, cell = (found, old[2]) if found >= 0 else (row, cell)
        self.cursor = self._clamp(row, cell)
        self._laid_out_for = -1
        self._layout()
        self._scroll_cursor_into_view()
        self.refresh()
        if self.cursor_key != old_key:
            self.post_message(self.Moved(self, self.cursor_key))

    def _cursor_id(self) -> tuple[int, str, int] | None:
        row, cell = self.cursor
        if 0 <= row < len(self.rows):
            index, r = self.rows[row]
            return index, r.node, cell
        return None

    def _clamp(self, row: int, cell: int) -> tuple[int, int]:
        if not self.rows:
            return (0, 0)
        row = max(0, min(len(self.rows) - 1, row))
        cells = len(self.rows[row][1].cells)
        return (row, max(0, min(max(0, cells - 1), cell)))

    def cursor_cell(self) -> tuple[GridRow, GpuCell | None] | None:
        """The row and GPU cell under the cursor (None: no rows; the cell None: a node without GPUs)."""
        row, cell = self.cursor
        if not 0 <= row < len(self.rows):
            return None
        grid_row = self.rows[row]
        cells = grid_row[1].cells
        return grid_row, cells[cell] if 0 <= cell < len(cells) else None

    @property
    def cursor_key(self) -> str | None:
        """`index/job id` of the job holding the GPU under the cursor (None: a free GPU)."""
        found = self.cursor_cell()
        if found is None or found[1] is None or found[1].job_id is None:
            return None
        return f"{found[0][0]}/{found[1].job_id}"

    # -- layout

    def _headers(self) -> list[tuple[str, bool]]:
        """(name, right-aligned) of the columns before the cells."""
        return [*([("CLUSTER", False)] if self.combined else []), ("NODE", False), ("STATE", False), ("BUSY", True)]

    def _prefix_cells(self, r: NodeRow) -> list[tuple[str, str | None]]:
        """(text, style name) of the columns before the cells."""
        node_tone = "host" if r.node == self.host_node else None
        return [*([(visible(r.cluster), None)] if self.combined else []), (visible(r.node), node_tone),
                (r.state, r.state_tone), (r.occupancy, None)]  # fmt: skip

    def _layout(self) -> None:
        """Column widths over every row (a node's line never moves when the cursor does), then
        how many cells go on a line, and the lines each node takes."""
        heads = self._headers()
        w = self._widths
        widths = [*([w.cluster] if self.combined else []), w.node, w.state, w.occupancy]
        cell_w = w.cell
        self._prefix = [(h, w, right) for (h, right), w in zip(heads, widths, strict=True)]
        self._cell_w = cell_w
        width = self.scrollable_content_region.width or self.size.width
        prefix_w = sum(widths) + GAP * len(widths)
        per_line = max(1, (width - prefix_w + 1) // (cell_w + 1))
        lines: list[tuple[int, int, int]] = []
        first: list[int] = []
        for n, (_, r) in enumerate(self.rows):
            count = len(r.cells)
            first.append(len(lines))
            if count <= per_line:
                lines.append((n, 0, count))
                continue
            per = math.ceil(count / math.ceil(count / per_line))
            lines.extend((n, start, min(count, start + per)) for start in range(0, count, per))
        self._lines, self._first_line = lines, first
        self._laid_out_for = width
        self.virtual_size = Size(max(width, prefix_w + cell_w), len(lines) + 1)

    @property
    def prefix_width(self) -> int:
        return sum(w for _, w, _ in self._prefix) + GAP * len(self._prefix)

    def _ensure_layout(self) -> None:
        if (self.scrollable_content_region.width or self.size.width) != self._laid_out_for:
            self._layout()

    # -- drawing

    def _style(self, name: str) -> Style:
        return component_style(self, f"gpugrid--{name}")

    def render_line(self, y: int) -> Strip:
        self._ensure_layout()
        width = self.scrollable_content_region.width or self.size.width
        base = self.rich_style
        x = int(self.scroll_x)
        if y == 0:
            return self._header_strip(base).crop(x, x + width).adjust_cell_length(width, base)
        if not self.rows:
            if y == 1:
                return Strip([Segment(self.empty_text.ljust(width)[:width], base + self._style("empty"))], width)
            return Strip.blank(width, base)
        line = int(self.scroll_y) + y - 1
        if line >= len(self._lines):
            return Strip.blank(width, base)
        strip = self._line_strip(line, base)
        return strip.crop(x, x + width).adjust_cell_length(width, base)

    def _header_strip(self, base: Style) -> Strip:
        style = base + self._style("header")
        segments = []
        for name, w, right in self._prefix:
            segments.append(Segment((name.rjust(w) if right else name.ljust(w)) + " " * GAP, style))
        segments.append(Segment("GPUS (holder job, by index from 0)", style))
        return Strip(segments)

    def _line_strip(self, line: int, base: Style) -> Strip:
        row_n, start, end = self._lines[line]
        index, r = self.rows[row_n]
        at_cursor = row_n == self.cursor[0]
        row_style = base + self._style("row") if at_cursor else base
        segments: list[Segment] = []
        if start == 0:
            for (_, w, right), (text, tone) in zip(self._prefix, self._prefix_cells(r), strict=True):
                pad = " " * max(0, w - cell_width(text))
                style = row_style + self._style(tone) if tone else row_style
                segments.append(Segment(pad + text if right else text + pad, style))
                segments.append(Segment(" " * GAP, row_style))
        else:
            segments.append(Segment(" " * self.prefix_width, row_style))
        cursor_style = self._style("cursor") if self.has_focus else self._style("row") + Style(reverse=True)
        for n in range(start, end):
            cell = r.cells[n]
            text = visible(cell.text)
            style = row_style + self._style(cell.tone)
            if self.needle and cell.job_id is not None and self.needle in cell.job_id.lower():
                style = style + self._style("match")
            if at_cursor and n == self.cursor[1]:
                style = style + cursor_style
            if n > start:
                segments.append(Segment(" ", row_style))
            segments.append(Segment(text + " " * (self._cell_w - cell_width(text)), style))
        return Strip(segments)

    # -- moving

    def _cursor_line(self) -> int:
        row, cell = self.cursor
        if not self._lines or row >= len(self._first_line):
            return 0
        line = self._first_line[row]
        while line + 1 < len(self._lines) and self._lines[line + 1][0] == row and self._lines[line + 1][1] <= cell:
            line += 1
        return line

    def _scroll_cursor_into_view(self) -> None:
        page = max(1, self.size.height - 1)
        top = int(self.scroll_y)
        line = self._cursor_line()
        if line < top:
            self.scroll_to(y=line, animate=False, immediate=True)
        elif line >= top + page:
            self.scroll_to(y=line - page + 1, animate=False, immediate=True)

    def _set_cursor(self, row: int, cell: int) -> None:
        if not self.rows:
            return
        new = self._clamp(row, cell)
        if new == self.cursor:
            return
        self.cursor = new
        self._scroll_cursor_into_view()
        self.refresh()
        self.post_message(self.Moved(self, self.cursor_key))

    def action_move(self, rows: int, cells: int) -> None:
        row, cell = self.cursor
        if cells and self.rows:
            count = len(self.rows[row][1].cells)
            cell += cells
            # past a node's last GPU: the next node's first (and back)
            if cell >= count and row + 1 < len(self.rows):
                row, cell = row + 1, 0
            elif cell < 0 and row > 0:
                row, cell = row - 1, len(self.rows[row - 1][1].cells) - 1
        self._set_cursor(row + rows, cell)

    def action_page(self, direction: int) -> None:
        self.action_move(direction * max(1, self.size.height - 2), 0)

    def action_edge(self, end: int) -> None:
        self._set_cursor(len(self.rows) - 1 if end else 0, self.cursor[1])

    def action_open_selected(self) -> None:
        key = self.cursor_key
        if key is not None:
            self.post_message(self.Opened(self, key))

    def on_click(self, event: events.Click) -> None:
        line = int(self.scroll_y) + event.y - 1
        if event.y == 0 or not 0 <= line < len(self._lines):
            return
        row_n, start, end = self._lines[line]
        offset = event.x + int(self.scroll_x) - self.prefix_width
        cell = start + offset // (self._cell_w + 1) if offset >= 0 else self.cursor[1]
        if row_n == self.cursor[0] and cell == self.cursor[1] and event.chain == 2:
            self.action_open_selected()
        self._set_cursor(row_n, min(cell, end - 1))

    def on_resize(self, event: events.Resize) -> None:
        self._laid_out_for = -1
        self._layout()
        self._scroll_cursor_into_view()

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()
