"""How the console's tables fit a width: which columns are shown, and a cell cut to its column.

The rule every console table follows (`ViewTable`, the preview's `FittedTable`): the columns are
taken most important first (`Column.rank`; rank 0 always, wider than the screen if need be) while
they fit; an id, a number or a word is never cut, its column is dropped instead, except an id or
word longer than `LONGEST_WHOLE_ID`, which is cut with "…" (the Job view shows it whole: a
500-character id would otherwise push every other column off the screen); free text is cut at the
end with "…", a list between items. Plain functions over widths: no Textual here.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpuq.textsafe import cell_width
from gpuq.views.columns import Column, Kind

__all__ = ["GAP", "LONGEST_WHOLE_ID", "TEXT_MIN", "choose_columns", "fit_cell", "fit_items", "whole_width"]

#: cells between two columns
GAP = 2
#: free text is not made narrower than this; narrower, the column is dropped instead
TEXT_MIN = 12
#: an id or word column is at most this wide (the CLI folds a longer one: `gpuq.cli.table`)
LONGEST_WHOLE_ID = 64


def whole_width(column: Column, natural: int) -> int:
    """The width a column takes for cells as wide as `natural`: all of it, but for an id or word
    column no more than `LONGEST_WHOLE_ID` (or its name)."""
    if column.kind is Kind.ID or column.kind is Kind.PLAIN:
        return min(natural, max(LONGEST_WHOLE_ID, cell_width(column.name)))
    return natural


def choose_columns(ranks: Sequence[int], wants: Sequence[int], available: int) -> tuple[list[int], int]:
    """The columns shown (indexes, in the table's order) and the cells they take with their gaps:
    by rank (ties in the table's order), each column that still fits at the width it `wants`;
    every rank-0 column whatever it takes."""
    chosen: list[int] = []
    used = 0
    for i in sorted(range(len(ranks)), key=ranks.__getitem__):
        extra = wants[i] + (GAP if chosen else 0)
        if ranks[i] == 0 or used + extra <= available:
            chosen.append(i)
            used += extra
    return sorted(chosen), used


def fit_cell(text: str, width: int, column: Column) -> str:
    """A cell at the column's width: padded; free text cut with "…", a list between items (an
    id, a number or a word is never cut: its column was made wide enough, or dropped; only an id
    or word longer than `LONGEST_WHOLE_ID` is cut with "…", its column being at most that wide)."""
    w = cell_width(text)
    if w > width and column.kind is Kind.LIST:
        shown = fit_items(text.split(column.sep), width, column.sep)
        return shown + " " * max(0, width - cell_width(shown))
    if w > width and (column.kind is Kind.TEXT or (column.kind is not Kind.NUMBER and w > LONGEST_WHOLE_ID)):
        out, used = [], 0
        for ch in text:
            cw = cell_width(ch)
            if used + cw > width - 1:
                break
            out.append(ch)
            used += cw
        return "".join(out) + "…" + " " * (width - used - 1)
    pad = " " * max(0, width - w)
    return pad + text if column.right else text + pad


def fit_items(items: Sequence[str], width: int, sep: str) -> str:
    """As many whole items as fit in `width`, then `…+N` for the rest: a list is cut between
    items, never inside one (an item is a node name, a job id). `…+3` alone when not even the
    first fits."""
    kept: list[str] = []
    for n, item in enumerate(items):
        rest = len(items) - n - 1
        tail = f"{sep}…+{rest}" if rest else ""
        if cell_width(sep.join([*kept, item]) + tail) > width:
            break
        kept.append(item)
    left = len(items) - len(kept)
    if not left:
        return sep.join(kept)
    return f"{sep.join(kept)}{sep}…+{left}" if kept else f"…+{left}"
