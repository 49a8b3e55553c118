"""The one table renderer of the CLI: a table fitted to the terminal, as lines of text.

Each table's columns are declared in `gpuq.views.columns` (kind and importance). Ids, numbers and
words are never cut: when the table is wider than the terminal, the least important columns are
dropped first, free text wraps between words and lists between items, an id or word longer than
64 cells folds over lines (whole), and a last line says which columns were hidden. `-o wide`
shows every column at its full width.

Every cell is plain text from a view; `visible` turns control characters into escapes, and
nothing is ever read as markup, so a job named `[/]` or `\\x1b[2J` is shown as just that. Widths
are computed here from the strings themselves (no layout library): 10,000 rows take a fraction of
a second.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Iterable, Mapping, Sequence

import msgspec

from gpuq.cli.output import write_text
from gpuq.textsafe import cell_width, visible
from gpuq.views.columns import Column, Kind, TableSpec

__all__ = [
    "GAP",
    "Cell",
    "Styles",
    "colour_enabled",
    "render_lines",
    "render_table",
    "terminal_width",
    "wrap_spans",
    "write_lines",
]

#: a cell: text, or for a LIST column its items (a plain string is one item)
Cell = str | tuple[str, ...]
#: column name -> cell text (for a LIST column: item text) -> style name (see `_SGR`)
Styles = Mapping[str, Mapping[str, str]]

GAP = "  "
#: a word up to this long is never folded in a TEXT column (it sets the column's least width):
#: Slurm's reasons hold words such as `UnavailableNodes:gpu-a100-rack07-n04)`
_LONGEST_KEPT_WORD = 40
#: a TEXT column is not made narrower than this (unless its widest cell is): narrower, a
#: reason takes a line every word or two, and the column is better dropped (and named)
_TEXT_MIN = 20
#: an id or word longer than this folds over lines where the table is short of room, never cut
#: (a 500-character id would otherwise push every other column past the terminal's edge);
#: shorter ones (Slurm's, most Kubernetes pod names) are never folded
_LONGEST_WHOLE_ID = 64

_SGR = {
    "bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "magenta": "35", "cyan": "36",
    "bold red": "1;31", "bold magenta": "1;35", "bold yellow": "1;33",
}  # fmt: skip
_WORD = re.compile(r"\S+")


def terminal_width() -> int:
    """The width to fit: $COLUMNS, else the terminal's, else (in a pipe) a wide page of 200."""
    columns = os.environ.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    if sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    return 200


def colour_enabled(wanted: bool) -> bool:
    """Colour only where asked for and on a terminal that shows it (FORCE_COLOR overrides)."""
    if not wanted:
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return sys.stdout.isatty() and os.environ.get("TERM", "") not in ("dumb", "unknown")


def paint(text: str, style: str | None, colour: bool) -> str:
    if not colour or not style or not text:
        return text
    return f"\x1b[{_SGR[style]}m{text}\x1b[0m"


def _char_widths(text: str) -> list[int]:
    return [cell_width(ch) for ch in text]


def wrap_spans(text: str, width: int) -> list[tuple[int, int]]:
    """Where to break `text` into lines of at most `width` cells: (start, end) offsets.

    Breaks at spaces; a word longer than `width` is folded (the only case where a word is cut).
    """
    width = max(1, width)
    if cell_width(text) <= width:
        return [(0, len(text))]
    spans: list[tuple[int, int]] = []
    start = end = -1
    used = 0
    for match in _WORD.finditer(text):
        s, e = match.span()
        w = cell_width(text[s:e])
        if start >= 0:
            gap = cell_width(text[end:s])
            if used + gap + w <= width:
                end, used = e, used + gap + w
                continue
            spans.append((start, end))
            start = -1
        if w <= width:
            start, end, used = s, e, w
            continue
        widths = _char_widths(text[s:e])
        pos = s
        while pos < e:
            cut, cells = pos, 0
            while cut < e and (cells + widths[cut - s] <= width or cut == pos):
                cells += widths[cut - s]
                cut += 1
            if cut < e:
                spans.append((pos, cut))
            else:
                start, end, used = pos, cut, cells
            pos = cut
    if start >= 0:
        spans.append((start, end))
    return spans or [(0, 0)]


def _wrap_items(items: Sequence[str], widths: Sequence[int], sep: str, width: int) -> list[str]:
    """Items on lines of at most `width` cells; a line that continues ends in `sep` (stripped)."""
    tail = sep.rstrip()
    lines: list[str] = []
    line: list[str] = []
    used = 0
    last = len(items) - 1
    for k, (item, w) in enumerate(zip(items, widths, strict=True)):
        # an item that is not the last needs room for the tail too, if the line breaks after it
        if line and used + len(sep) + w + (len(tail) if k < last else 0) > width:
            lines.append(sep.join(line) + tail)
            line, used = [], 0
        used += (len(sep) if line else 0) + w
        line.append(item)
    lines.append(sep.join(line))
    return lines


class _Prepared(msgspec.Struct, frozen=True):
    column: Column
    #: per row: the text (TEXT/PLAIN/ID/NUMBER) or the items (LIST), made visible
    cells: list[str] | list[tuple[str, ...]]
    #: per row: the cell's width (LIST: the widths of its items)
    widths: list[int] | list[tuple[int, ...]]
    natural: int
    least: int
    #: no row has anything in this column
    blank: bool


def _prepare(column: Column, values: Iterable[Cell]) -> _Prepared:
    header = cell_width(column.name)
    if column.kind is not Kind.LIST:
        # (isprintable and isascii are C-speed checks that let the usual cell skip the calls)
        texts = (v if isinstance(v, str) else " ".join(v) for v in values)
        cells = [v if v.isprintable() else visible(v) for v in texts]
        widths = [len(c) if c.isascii() else cell_width(c) for c in cells]
        natural = max([header, *widths])
        least = natural
        if column.kind is Kind.ID or column.kind is Kind.PLAIN:
            least = max(header, min(natural, _LONGEST_WHOLE_ID))
        if column.kind is Kind.TEXT:
            longest = max((cell_width(w) for c, n in zip(cells, widths, strict=True) if n > _TEXT_MIN
                           for w in c.split()), default=0)  # fmt: skip
            least = min(natural, max(header, _TEXT_MIN, min(longest, _LONGEST_KEPT_WORD)))
        return _Prepared(column, cells, widths, natural, least, not any(widths))
    items = [tuple(i if i.isprintable() else visible(i) for i in v) if isinstance(v, tuple)
             else ((visible(v),) if v else ()) for v in values]  # fmt: skip
    item_widths = [tuple(len(i) if i.isascii() else cell_width(i) for i in row) for row in items]
    widest = max((w for row in item_widths for w in row), default=0)
    sep, tail = len(column.sep), len(column.sep.rstrip())
    if column.aligned:
        item_widths = [(widest,) * len(row) for row in item_widths]
    natural = max([header, *(sum(row) + sep * max(0, len(row) - 1) for row in item_widths)])
    least = min(natural, max(header, widest + tail))
    return _Prepared(column, items, item_widths, natural, least, not widest)


def _need(prepared: Sequence[_Prepared], shown: list[int]) -> int:
    return sum(prepared[i].least for i in shown) + len(GAP) * (len(shown) - 1)


def _grow(prepared: Sequence[_Prepared], shown: list[int], width: int) -> list[int]:
    """Widths for the shown columns: each its least, and what is left goes to the wrapped
    columns a column at a time, the most important first, so that two of them grow together
    (each up to its widest cell)."""
    widths = [prepared[i].least for i in shown]
    spare = width - _need(prepared, shown)
    growing = sorted((k for k in range(len(shown)) if widths[k] < prepared[shown[k]].natural),
                     key=lambda k: prepared[shown[k]].column.rank)  # fmt: skip
    while spare > 0 and growing:
        for k in list(growing):
            if spare == 0:
                break
            widths[k] += 1
            spare -= 1
            if widths[k] == prepared[shown[k]].natural:
                growing.remove(k)
    return widths


def _grid_lines(prepared: Sequence[_Prepared], shown: list[int], widths: list[int]) -> int:
    """Lines the longest row of the shown grid columns (aligned lists) takes."""
    most = 0
    for i, w in zip(shown, widths, strict=True):
        p = prepared[i]
        if p.column.aligned and p.widths:
            item = max((row[0] for row in p.widths if row), default=1)  # type: ignore[index]
            per_line = max(1, (w + len(p.column.sep)) // (item + len(p.column.sep)))
            items = max(len(row) for row in p.widths)  # type: ignore[arg-type]
            most = max(most, -(-items // per_line))
    return most


def _fit(prepared: Sequence[_Prepared], width: int, wide: bool) -> tuple[list[int], list[int]]:
    """The columns shown (indexes) and their widths."""
    shown = list(range(len(prepared)))
    if wide:
        return shown, [p.natural for p in prepared]
    natural = sum(p.natural for p in prepared) + len(GAP) * (len(prepared) - 1)
    if natural > width:  # short of width: a column with nothing in it gives its room first
        shown = [i for i in shown if not (prepared[i].blank and prepared[i].column.rank > 0)]
    # the least important first
    order = sorted((i for i in shown if prepared[i].column.rank > 0), key=lambda i: -prepared[i].column.rank)
    drops = 0
    while _need(prepared, shown) > width and drops < len(order):
        shown.remove(order[drops])
        drops += 1
    # What must be shown is shown in full, wider than the terminal if need be. A grid (the GPU
    # cells) would rather lose a less important column than take more lines per row.
    if any(prepared[i].column.aligned for i in shown):
        options = []
        for k in range(drops, len(order) + 1):
            fewer = [i for i in shown if i not in order[drops:k]]
            options.append((_grid_lines(prepared, fewer, _grow(prepared, fewer, width)), k, fewer))
        shown = min(options, key=lambda o: (o[0], o[1]))[2]
    return shown, _grow(prepared, shown, width)


def _lines(p: _Prepared, row: int, width: int) -> list[tuple[str, int]]:
    """A cell as (text, cells) lines fitting `width`."""
    if p.column.kind is Kind.LIST:
        items: tuple[str, ...] = p.cells[row]  # type: ignore[assignment]
        widths: tuple[int, ...] = p.widths[row]  # type: ignore[assignment]
        if p.column.aligned:
            items = tuple(i + " " * (w - cell_width(i)) for i, w in zip(items, widths, strict=True))
        lines = _wrap_items(items, widths, p.column.sep, width) if items else [""]
        return [(line, cell_width(line)) for line in lines]
    text: str = p.cells[row]  # type: ignore[assignment]
    return [(text[s:e], cell_width(text[s:e])) for s, e in wrap_spans(text, width)]


def _column(p: _Prepared, width: int, by_value: Mapping[str, str] | None) -> tuple[list[str], dict[int, list[str]]]:
    """The column's cells padded to `width` (and coloured by `by_value`): each row's first line,
    and the further lines of the rows that take more than one (a wrapped text or list)."""
    right, kind = p.column.right, p.column.kind
    more: dict[int, list[str]] = {}

    def pad(text: str, cells: int, value: str | None = None) -> str:
        if by_value:
            if kind is Kind.LIST:
                text = " ".join(paint(part, by_value.get(part), True) if part else part for part in text.split(" "))
            else:
                text = paint(text, by_value.get(value if value is not None else text), True)
        gap = " " * (width - cells)
        return gap + text if right else text + gap

    if kind is not Kind.LIST:
        cells: list[str] = p.cells  # type: ignore[assignment]
        widths: list[int] = p.widths  # type: ignore[assignment]
        # the usual case: one line each, plain (a longer id folds below)
        if not by_value and kind is not Kind.TEXT and max(widths, default=0) <= width:
            if right:
                return [" " * (width - w) + c for c, w in zip(cells, widths, strict=True)], more
            return [c + " " * (width - w) for c, w in zip(cells, widths, strict=True)], more
        first = []
        for row, (text, w) in enumerate(zip(cells, widths, strict=True)):
            if w <= width:
                first.append(pad(text, w))
                continue
            lines = _lines(p, row, width)
            first.append(pad(*lines[0], value=text))
            more[row] = [pad(*line, value=text) for line in lines[1:]]
        return first, more
    first = []
    for row in range(len(p.cells)):
        lines = _lines(p, row, width)
        first.append(pad(*lines[0]))
        if len(lines) > 1:
            more[row] = [pad(*line) for line in lines[1:]]
    return first, more


def render_table(
    spec: TableSpec,
    rows: Sequence[Sequence[Cell]],
    *,
    width: int,
    wide: bool = False,
    title: str | None = None,
    colour: bool = False,
    styles: Styles | None = None,
    header: bool = True,
    note: bool = True,
) -> list[str]:
    """The table as lines (no newlines), fitted to `width` unless `wide`; `note`: end with a
    line naming the columns that were hidden, if any."""
    styles = styles or {}
    empty = not rows
    if empty and not header:
        return []  # --no-headers is for scripts: a "none" row would read as a job
    if empty:  # an empty table says so: no rows at all could be read as a failed read
        rows = [("none", *([""] * (len(spec.columns) - 1)))]
    prepared = [_prepare(c, (r[i] for r in rows)) for i, c in enumerate(spec.columns)]
    shown, widths = _fit(prepared, width, wide)
    out: list[str] = []
    if title is not None:
        text = visible(title)
        out += [text[s:e] for s, e in wrap_spans(text, width)]
    show_header = header and spec.header
    if show_header:
        names = []
        for i, w in zip(shown, widths, strict=True):
            name = prepared[i].column.name
            names.append(name.rjust(w) if prepared[i].column.right else name.ljust(w))
        out.append(paint(GAP.join(names).rstrip(), "bold", colour))
    columns = [_column(prepared[i], w, styles.get(prepared[i].column.name) if colour else None)
               for i, w in zip(shown, widths, strict=True)]  # fmt: skip
    blanks = [" " * w for w in widths]
    tall = set().union(*(more for _, more in columns))
    for row, firsts in enumerate(zip(*(first for first, _ in columns), strict=True)):
        lines = [GAP.join(firsts).rstrip()]
        if row in tall:
            height = 1 + max(len(more.get(row, ())) for _, more in columns)
            for k in range(height - 1):
                parts = [more[row][k] if row in more and k < len(more[row]) else blank
                         for (_, more), blank in zip(columns, blanks, strict=True)]  # fmt: skip
                lines.append(GAP.join(parts).rstrip())
        out += [paint(line, "dim", colour) for line in lines] if empty else lines
    # a column left out with nothing in it hid nothing
    hidden = [p.column.name for i, p in enumerate(prepared) if i not in shown and not p.blank]
    if hidden and note:
        many = "s" if len(hidden) > 1 else ""
        said = f"{len(hidden)} column{many} hidden ({', '.join(hidden)}): -o wide or a wider terminal"
        out += [paint(said[s:e], "dim", colour) for s, e in wrap_spans(said, width)]
    return out


def render_lines(parts: Sequence[str | tuple[str, str | None]], *, width: int, colour: bool) -> list[str]:
    """One message as lines: `parts` are text (outside data included) or (text, style); the
    whole is made visible and wrapped at spaces, lines after the first indented like the first."""
    pieces = [(visible(p), None) if isinstance(p, str) else (visible(p[0]), p[1]) for p in parts]
    text = "".join(t for t, _ in pieces)
    indent = len(text) - len(text.lstrip(" "))
    body = text[indent:]
    # each piece's (start, end) in `body`, for its style
    bounds, pos = [], -indent
    for t, style in pieces:
        bounds.append((pos, pos + len(t), style))
        pos += len(t)
    out = []
    for s, e in wrap_spans(body, width - indent):
        line = []
        for b0, b1, style in bounds:
            lo, hi = max(s, b0), min(e, b1)
            if lo < hi:
                line.append(paint(body[lo:hi], style, colour))
        out.append(" " * indent + "".join(line))
    return out


def write_lines(lines: Iterable[str]) -> None:
    """Write lines to stdout in one go (the caller's order with other output is kept)."""
    write_text("".join(line + "\n" for line in lines))
