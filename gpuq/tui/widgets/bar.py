"""A bar above or below the views (the status line, the stale-data banner, the scrubber)."""

from __future__ import annotations

from rich.cells import cell_len
from rich.text import Text
from textual.content import Content
from textual.widgets import Static

__all__ = ["Bar"]


class Bar(Static):
    """A line of plain text, more when it wraps (never markup: cluster names, errors and filters
    are outside text). `show` repaints only when the text changed, and asks for a layout of the
    screen only when the bar's height may change: the status is painted four times a second and
    after keys, and a layout of the whole screen takes longer than a frame, which a key's frame
    would wait for."""

    def __init__(self, *, id: str) -> None:  # noqa: A002 - Textual's name for it
        super().__init__(id=id)
        self.line: str | None = None

    def show(self, line: str) -> None:
        shown = self.line
        if line == shown:
            return
        width = self.size.width or self.app.size.width or 80
        same_height = shown is not None and self._height(shown, width) == self._height(line, width)
        self.update(Text(line), layout=not same_height)
        self.line = line

    def _height(self, text: str, width: int) -> int:
        """Lines `text` takes at `width`, wrapped as Textual will wrap it (one line: no wrapping)."""
        if cell_len(text) <= width:
            return 1
        return Content(text).get_height(self.styles.get_rules(), width)
