"""`ViewTable`: every table of the console, drawn line by line from a view's rows.

A queue of 200,000 jobs cannot be a widget per cell (Textual's DataTable builds every row up
front): this is a Line API widget (`ScrollView.render_line`) that formats only the rows on screen,
caching their cells until the data changes. A refresh hands it new rows (`set_data`): nothing is
rebuilt, the rows on screen are drawn again, and the cursor stays on the same job (rows are
matched by key), as does the selection.

Columns follow the view layer's `TableSpec` (gpuq/views/columns.py), as the CLI's tables do: an
id, a number or a word is never cut; when the columns do not fit, the least important are
dropped (`hidden` says which) and free text is cut at the end with "…". Cells are plain text from
the views, passed through `visible` and drawn as segments, so nothing from outside is ever read
as markup.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import zip_longest
from typing import Any, ClassVar, Generic, TypeVar

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.scrollbar import ScrollBar
from textual.strip import Strip
from textual.style import Style as TextualStyle

from gpuq.textsafe import cell_width, visible
from gpuq.tui.keymap import bindings
from gpuq.tui.widgets.fitting import GAP, TEXT_MIN, choose_columns, fit_cell, whole_width
from gpuq.tui.widgets.positions import find_near, thumb_start
from gpuq.tui.widgets.tones import component_style
from gpuq.views.columns import Column, Kind, TableSpec

__all__ = ["TableData", "TableMessage", "ViewTable"]

R = TypeVar("R")
#: cells of one row: one text per column of the spec
Cells = tuple[str, ...]
#: styles of one row: per column, a style name (`STYLE_NAMES`) or None
Tones = tuple[str | None, ...]

#: drawn lines kept (a few screens' worth); past it the memo starts again
STRIP_MEMO = 512
#: the style names a view may give a cell (each a component class, styled by the theme)
STYLE_NAMES = (
    "pending", "running", "suspended", "finished", "ok", "risk", "breach", "muted", "stale", "down", "idle",
    "new", *(f"tenant-{i}" for i in range(8)),
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class TableData(Generic[R]):
    """What a table shows: rows, how to turn one into cells, and its key (the job id)."""

    spec: TableSpec
    rows: Sequence[R]
    cells: Callable[[R], Cells]
    key: Callable[[R], str]
    tones: Callable[[R], Tones] | None = None
    #: the column the rows are sorted by, and whether descending (shown in the header)
    sorted_by: str | None = None
    descending: bool = False

    @staticmethod
    def empty(spec: TableSpec) -> TableData[Any]:
        return TableData(spec, (), lambda r: (), lambda r: "")


class TableMessage(Message):
    """What a `ViewTable` tells its pane; `control` is the table (for `@on(..., "#id")`)."""

    def __init__(self, table: ViewTable) -> None:
        super().__init__()
        self.table = table

    @property
    def control(self) -> ViewTable:
        return self.table


class ViewTable(ScrollView, can_focus=True):
    """See the module docstring."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "viewtable--header", "viewtable--sorted", "viewtable--cursor", "viewtable--selected", "viewtable--empty",
        *(f"viewtable--{name}" for name in STYLE_NAMES),
    }  # fmt: skip
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "cursor(-1)", "Up", show=False),
        Binding("down,j", "cursor(1)", "Down", show=False),
        Binding("pageup,ctrl+b", "page(-1)", "Page up", show=False),
        Binding("pagedown,ctrl+f", "page(1)", "Page down", show=False),
        Binding("home", "edge(0)", "First", show=False),
        Binding("end,G", "edge(1)", "Last", show=False),
        *bindings("table"),
    ]
    DEFAULT_CSS = """
    ViewTable { height: 1fr; overflow-x: hidden; }
    """

    class Moved(TableMessage):
        """The cursor is on another row (or the rows changed under it)."""

        def __init__(self, table: ViewTable, key: str | None) -> None:
            super().__init__(table)
            self.key = key

    class Hid(TableMessage):
        """Which columns are hidden changed (the status bar says how many)."""

    class Opened(TableMessage):
        """Enter on a row."""

        def __init__(self, table: ViewTable, key: str) -> None:
            super().__init__(table)
            self.key = key

    class SortAsked(TableMessage):
        """The operator asked for another sort (`column` None: reverse the current one)."""

        def __init__(self, table: ViewTable, column: str | None) -> None:
            super().__init__(table)
            self.column = column

    def __init__(self, spec: TableSpec, *, empty_text: str = "none", sortable: Sequence[str] = (),
                 id: str | None = None) -> None:  # fmt: skip
        super().__init__(id=id)
        self._data: TableData[Any] = TableData.empty(spec)
        self._cache: dict[int, tuple[Cells, Tones]] = {}
        self._widths: dict[str, int] = {}
        self._shown: list[tuple[Column, int]] = []
        #: per column shown: its cell's place in a row's cells, its width, the column
        self._plan: list[tuple[int, int, Column]] = []
        #: per (row style, under a focused cursor): the cells' styles by tone (`_cell_styles`)
        self._tone_styles: dict[tuple[Style, bool], dict[str | None, Style]] = {}
        self._laid_out_for = -1
        #: (width, top row, height) whose rows `_ensure_layout` last measured
        self._checked: tuple[int, int, int] | None = None
        #: rows whose widths the current layout has seen (a scroll measures only the rows it adds)
        self._measured: set[int] = set()
        self.cursor = 0
        self.selected: set[str] = set()
        self.hidden: tuple[str, ...] = ()
        self.empty_text = empty_text
        #: columns the sort key cycles through (names of the spec)
        self.sortable = tuple(sortable)
        self._cursor_key: str | None = None
        self._styles: dict[str, Style] = {}
        #: the widget's own style, blended once (Textual walks the ancestors for it)
        self._base: Style | None = None
        #: drawn lines by (row, width, selected, under the cursor, focused): scrolling by a row
        #: draws one new line and hands Textual the same strips, whose crops it has cached
        self._strips: dict[tuple[int, int, bool, bool, bool], Strip] = {}
        #: the same lines by what they show (cells, tones, selected, under the cursor, focused), for
        #: the current columns and width: new data whose rows on screen read as before (a refresh
        #: that changed 1% of a queue) draws no line again, and hands Textual the strips whose
        #: padding, filters and cuts it has cached
        self._by_content: dict[tuple[Cells, Tones, bool, bool, bool], Strip] = {}
        self._content_for: tuple[list[tuple[int, int, Column]], int] = ([], -1)
        #: while a frame is drawn (`render_lines`): its width, top row and focus
        self._frame: tuple[int, int, bool] | None = None
        #: whether the last frame was drawn by `_unboxed_lines`, past Textual's styles cache
        self._drew_unboxed = False

    # -- data

    @property
    def data(self) -> TableData[Any]:
        return self._data

    @property
    def row_count(self) -> int:
        return len(self._data.rows)

    @property
    def cursor_key(self) -> str | None:
        return self._cursor_key

    def cursor_row(self) -> Any | None:
        rows = self._data.rows
        return rows[self.cursor] if 0 <= self.cursor < len(rows) else None

    def set_data(self, data: TableData[Any]) -> None:
        """Show new rows, keeping the cursor on the same key (the nearest row if it is gone)."""
        old_key, old_cursor = self._cursor_key, self.cursor
        self._data, self._cache = data, {}
        self._widths = {}
        self._laid_out_for = -1
        rows = data.rows
        index = -1
        if old_key is not None:
            key = data.key
            # the row is usually where it was, or near: look there first, then everywhere
            index = find_near(rows, key, old_key, old_cursor)
        self.cursor = index if index >= 0 else min(old_cursor, max(0, len(rows) - 1))
        self._cursor_key = data.key(rows[self.cursor]) if rows else None
        live = {data.key(r) for r in rows} if self.selected else set()
        self.selected &= live
        self.virtual_size = Size(self.size.width, len(rows) + 1)
        self._scroll_cursor_into_view()
        self.refresh()
        if self._cursor_key != old_key:
            self.post_message(self.Moved(self, self._cursor_key))

    def move_to(self, key: str) -> bool:
        rows, get = self._data.rows, self._data.key
        for i, row in enumerate(rows):
            if get(row) == key:
                self._set_cursor(i)
                return True
        return False

    # -- cells and layout

    def _row(self, index: int) -> tuple[Cells, Tones]:
        found = self._cache.get(index)
        if found is None:
            data = self._data
            row = data.rows[index]
            cells = tuple(visible(c) for c in data.cells(row))
            tones = data.tones(row) if data.tones else ()
            found = self._cache[index] = (cells, tones)
        return found

    def _visible_range(self) -> range:
        top = int(self.scroll_y)
        return range(top, min(self.row_count, top + max(1, self.size.height - 1)))

    def _layout(self) -> None:
        """Widths from the header and the rows on screen (kept while scrolling, so columns do not
        jump; widened when a row needs more), then the columns that fit."""
        spec = self._data.spec
        widths = self._widths
        # (column by column over the rows' cells, each row's fetched once: the first frame of
        # new rows lays them out)
        rows = [self._row(index)[0] for index in self._visible_range()]
        by_column: list[tuple[str, ...]] = list(zip_longest(*rows, fillvalue=""))
        for i, spec_column in enumerate(spec.columns):
            need = widths.get(spec_column.name, cell_width(self._header_text(spec_column)))
            if i < len(by_column):
                need = max(need, *map(cell_width, by_column[i]))
            widths[spec_column.name] = whole_width(spec_column, need)
        available = self.scrollable_content_region.width or self.size.width
        wants = [min(widths[c.name], TEXT_MIN) if c.flexible else widths[c.name] for c in spec.columns]
        chosen, used = choose_columns([c.rank for c in spec.columns], wants, available)
        order = [spec.columns[i] for i in chosen]
        hidden = tuple(c.name for i, c in enumerate(spec.columns) if i not in chosen)
        if hidden != self.hidden:
            self.hidden = hidden
            self.post_message(self.Hid(self))
        spare = max(0, available - used)
        shown: list[tuple[Column, int]] = []
        for column in order:
            width = widths[column.name]
            if column.flexible:
                base = min(width, TEXT_MIN)
                width = base + min(spare, width - base)
                spare -= width - base
            shown.append((column, width))
        self._shown = shown
        names = spec.names
        plan = [(names.index(column.name), width, column) for column, width in shown]
        if (plan, available) != self._content_for:
            self._by_content, self._content_for = {}, (plan, available)
        self._plan = plan
        self._laid_out_for = available
        self._strips = {}
        self._measured = set(self._visible_range())

    def _header_text(self, column: Column) -> str:
        data = self._data
        if data.sorted_by == column.name:
            return column.name + ("▼" if data.descending else "▲")
        return column.name

    def _ensure_layout(self) -> None:
        """Lay out again when the width changed or a row scrolled into view needs a wider column.
        Called for every line drawn, so the rows on screen are looked at once per position, not
        once per line (a frame of 60 lines would measure every cell 60 times), and only the rows
        the layout has not measured yet are."""
        available = self.scrollable_content_region.width or self.size.width
        seen = (available, int(self.scroll_y), self.size.height)
        if available != self._laid_out_for:
            self._layout()
            self._checked = seen
            return
        if seen == self._checked:
            return
        self._checked = seen
        # a row scrolled into view may need a wider column than any before it
        names = [c.name for c in self._data.spec.columns]
        measured = self._measured
        for index in self._visible_range():
            if index in measured:
                continue
            measured.add(index)
            cells = self._row(index)[0]
            for name, text in zip(names, cells, strict=False):
                if cell_width(text) > self._widths.get(name, 0):
                    self._layout()
                    return

    # -- drawing

    def _style(self, name: str) -> Style:
        found = self._styles.get(name)
        if found is None:  # (blended once per theme: `notify_style_update` forgets them)
            found = self._styles[name] = component_style(self, f"viewtable--{name}")
        return found

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles, self._base, self._strips, self._tone_styles = {}, None, {}, {}
        self._by_content = {}

    def render_lines(self, crop: Region) -> list[Strip]:
        """A frame's lines of this table, with what they share (the layout checked, the width,
        the top row, the focus) found once for all of them: on a scroll every line is drawn.

        A table without a box (no border, outline, padding, hatch, tint or opacity, as the
        console's CSS has it) hands Textual the lines `render_line` memoizes, padded and filtered
        as Textual's styles cache would: that cache wraps each line in a new strip on every frame,
        so a scroll by one row ran every line on screen through the line filters and the
        compositor's cuts again; the same strip objects keep the results those cache per strip.
        A table with a box is drawn by Textual's own path (the test of this compares the two)."""
        self._frame = self._frame_state()
        try:
            if not self._unboxed():
                if self._drew_unboxed:  # (lines Textual's cache kept from before are stale now)
                    self._styles_cache.clear()
                    self._drew_unboxed = False
                return super().render_lines(crop)
            self._drew_unboxed = True
            return self._unboxed_lines(crop)
        finally:
            self._frame = None

    def _unboxed(self) -> bool:
        """Whether Textual would draw each line as it is, only padded to the width and filtered."""
        styles = self.styles
        return (
            not any(edge for edge, _ in styles.border)
            and not any(edge for edge, _ in styles.outline)
            and not any(styles.padding)
            and not styles.tint.a
            and styles.text_opacity == 1.0
            and self.opacity == 1.0
            and not (styles.has_rule("hatch") and styles.hatch != "none")
        )

    def _unboxed_lines(self, crop: Region) -> list[Strip]:
        """`Widget.render_lines` for a table without a box, on the memoized strips."""
        width = self.region.width
        base_background, background = self.background_colors
        inner = TextualStyle(background=base_background + background).rich_style
        filters = self.get_line_filters()
        # (Textual also restyles a hovered link; a table's cells are plain text, with no links)
        strips: list[Strip] = []
        for y in crop.line_range:
            line = self.render_line(y).adjust_cell_length(width, inner)
            for line_filter in filters:
                line = line.apply_filter(line_filter, background)
            strips.append(line)
        if crop.column_span != (0, width):
            x1, x2 = crop.column_span
            strips = [strip.crop(x1, x2) for strip in strips]
        return strips

    def _frame_state(self) -> tuple[int, int, bool]:
        self._ensure_layout()
        width = self.scrollable_content_region.width or self.size.width
        return width, int(self.scroll_y), self.has_focus

    def render_line(self, y: int) -> Strip:
        width, top, focused = self._frame or self._frame_state()
        base = self._base
        if base is None:
            base = self._base = self.rich_style
        if y == 0:
            return self._header_strip(width, base)
        rows = self._data.rows
        if not rows:
            if y == 1:
                return Strip([Segment(self.empty_text.ljust(width)[:width], base + self._style("empty"))], width)
            return Strip.blank(width, base)
        index = top + y - 1
        if index >= len(rows):
            return Strip.blank(width, base)
        selected = bool(self.selected) and self._data.key(rows[index]) in self.selected
        under = index == self.cursor
        memo = (index, width, selected, under, under and focused)
        strip = self._strips.get(memo)
        if strip is None:
            if len(self._strips) > STRIP_MEMO:
                self._strips.clear()
            cells, tones = self._row(index)
            shown = (cells, tones, selected, under, under and focused)
            strip = self._by_content.get(shown)
            if strip is None:
                if len(self._by_content) > STRIP_MEMO:
                    self._by_content.clear()
                strip = self._by_content[shown] = self._row_strip(index, width, base, selected, under)
            self._strips[memo] = strip
        return strip

    def _row_strip(self, index: int, width: int, base: Style, selected: bool, under: bool) -> Strip:
        """One row's line: each cell fitted to its column, neighbours in the same style joined
        into one segment (what `Segment.simplify` would make), padded to `width` in the row's
        style. Drawn for every row that comes into view and for every row on screen when new
        data arrives, so it builds the segments in one pass, with the cells' styles blended once
        per row style (`_cell_styles`) and an ASCII cell padded without measuring it."""
        cells, tones = self._row(index)
        focused = under and self.has_focus
        row_style = base
        if selected:
            row_style = row_style + self._style("selected")
        if focused:
            row_style = row_style + self._style("cursor")
        elif under:
            row_style = row_style + self._style("selected")
        styles = self._cell_styles(row_style, focused)
        segments: list[Segment] = []
        run: list[str] = []
        run_style = row_style
        used = 0
        count, tone_count = len(cells), len(tones)
        for n, (i, w, column) in enumerate(self._plan):
            text = cells[i] if i < count else ""
            if text.isascii() and len(text) <= w:
                text = text.rjust(w) if column.kind is Kind.NUMBER else text.ljust(w)
                used += w
            else:
                text = fit_cell(text, w, column)
                used += cell_len(text)  # (as `Strip` measures it)
            tone = tones[i] if i < tone_count else None
            style = styles.get(tone)
            if style is None:
                style = styles[tone] = self._cell_style(row_style, tone, focused)
            if n:
                if row_style is not run_style and row_style != run_style:
                    segments.append(Segment("".join(run), run_style))
                    run, run_style = [], row_style
                run.append(" " * GAP)
                used += GAP
            if style is not run_style and style != run_style:
                if run:
                    segments.append(Segment("".join(run), run_style))
                run, run_style = [], style
            run.append(text)
        if run:
            segments.append(Segment("".join(run), run_style))
        if used < width:
            segments.append(Segment(" " * (width - used), row_style))
        elif used > width:
            return Strip(segments).adjust_cell_length(width, row_style)
        return Strip(segments, width)

    def _cell_styles(self, row_style: Style, focused: bool) -> dict[str | None, Style]:
        """A row style's cell styles by tone, kept until the theme changes."""
        key = (row_style, focused)
        found = self._tone_styles.get(key)
        if found is None:
            found = self._tone_styles[key] = {}
        return found

    def _cell_style(self, row_style: Style, tone: str | None, focused: bool) -> Style:
        style = row_style + self._style(tone) if tone else row_style
        return style + self._style("cursor") if focused else style

    def _header_strip(self, width: int, base: Style) -> Strip:
        style = base + self._style("header")
        segments = []
        for n, (column, w) in enumerate(self._shown):
            text = self._header_text(column)
            cell = text.rjust(w) if column.right else text.ljust(w)
            if n:
                segments.append(Segment(" " * GAP, style))
            sorted_style = style + self._style("sorted") if self._data.sorted_by == column.name else style
            segments.append(Segment(cell, sorted_style))
        return Strip(segments).adjust_cell_length(width, style)

    # -- moving

    def _set_cursor(self, index: int) -> None:
        if not self.row_count:
            return
        index = max(0, min(self.row_count - 1, index))
        changed = index != self.cursor
        old = self.cursor
        self.cursor = index
        self._cursor_key = self._data.key(self._data.rows[index])
        self._scroll_cursor_into_view()
        self._repaint_rows(old, index)
        if changed:
            self.post_message(self.Moved(self, self._cursor_key))

    def _repaint_rows(self, *indexes: int) -> None:
        """Repaint the lines of these rows (`refresh_line` takes virtual lines: row i is line
        i + 1, under the header)."""
        for index in indexes:
            self.refresh_line(index + 1)

    def _scroll_cursor_into_view(self) -> None:
        page = max(1, self.size.height - 1)
        top = int(self.scroll_y)
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False, immediate=True)
        elif self.cursor >= top + page:
            self.scroll_to(y=self.cursor - page + 1, animate=False, immediate=True)

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        """ScrollView's, except that the scroll bar is drawn again only when its thumb moves on
        screen: over a long queue it moves an eighth of a cell every few hundred rows, and
        drawing all the bar's lines on every scroll was a large share of a scroll's frame
        (figures: benchmarks/README.md, console keys). The test of this compares the bar on
        screen with one drawn afresh, so a change of Textual's thumb arithmetic shows there."""
        if self.show_vertical_scrollbar:
            bar = self.vertical_scrollbar
            position = bar.validate_position(new_value)
            moves = thumb_start(bar, bar.position) != thumb_start(bar, position)
            bar.set_reactive(ScrollBar.position, position)  # (kept exact: a drag starts from it)
            if moves:
                bar.refresh()
        if round(old_value) != round(new_value):
            self.refresh(self.size.region)

    def on_resize(self, event: events.Resize) -> None:
        self.virtual_size = Size(event.size.width, self.row_count + 1)
        self._laid_out_for = -1
        self._scroll_cursor_into_view()

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()

    def action_cursor(self, step: int) -> None:
        self._set_cursor(self.cursor + step)

    def action_page(self, direction: int) -> None:
        self._set_cursor(self.cursor + direction * max(1, self.size.height - 2))

    def action_edge(self, end: int) -> None:
        self._set_cursor(self.row_count - 1 if end else 0)

    def action_open_selected(self) -> None:
        if self._cursor_key is not None:
            self.post_message(self.Opened(self, self._cursor_key))

    def action_toggle_selection(self) -> None:
        key = self._cursor_key
        if key is None:
            return
        self.selected.symmetric_difference_update({key})
        self._set_cursor(self.cursor + 1)
        self.refresh()

    def action_sort_next(self) -> None:
        names = self.sortable or self._data.spec.names
        current = self._data.sorted_by
        nxt = names[(names.index(current) + 1) % len(names)] if current in names else names[0]
        self.post_message(self.SortAsked(self, nxt))

    def action_sort_reverse(self) -> None:
        self.post_message(self.SortAsked(self, None))

    def on_click(self, event: events.Click) -> None:
        y = event.y
        if y == 0:  # a header: sort by that column
            x = 0
            for column, w in self._shown:
                if x <= event.x < x + w + GAP:
                    if not self.sortable or column.name in self.sortable:
                        self.post_message(self.SortAsked(self, column.name))
                    return
                x += w + GAP
            return
        index = int(self.scroll_y) + y - 1
        if 0 <= index < self.row_count:
            if index == self.cursor and event.chain == 2:
                self.action_open_selected()
            self._set_cursor(index)
