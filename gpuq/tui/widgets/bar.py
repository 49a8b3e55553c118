"""A bar above or below the views (the status line, the stale-data and unread banners, the scrubber)."""

from __future__ import annotations

from rich.cells import cell_len
from rich.text import Text
from textual.widgets import Static

__all__ = ["Bar"]


class Bar(Static):
    """A line of plain text, more when it wraps (never markup: cluster names, errors and filters
    are outside text). `show` repaints only when the text changed, and skips the layout of the
    screen when the bar stays one line: the status is painted four times a second and after keys,
    and a layout of the whole screen takes longer than a frame, which a key's frame would wait
    for. (A wrapping text is always laid out again: skipping that left Textual's layout of the
    bars depending on the order of their updates.)"""

    def __init__(self, *, id: str) -> None:  # noqa: A002 - Textual's name for it
        super().__init__(id=id)
        self.line: str | None = None

    def show(self, line: str) -> None:
        shown = self.line
        if line == shown:
            return
        width = self.size.width or self.app.size.width or 80
        one_line = shown is not None and cell_len(shown) <= width and cell_len(line) <= width
        self.update(Text(line), layout=not one_line)
        self.line = line

    def show_or_hide(self, line: str | None) -> None:
        """A banner: `line` shown, or the bar hidden when there is none."""
        if line is not None:
            self.show(line)
        self.display = line is not None
