"""Where things are in a console table: the row with a key, looked for near where it was
(`find_near`), and where a scroll bar draws its thumb (`thumb_start`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import ceil
from typing import Any

from textual.scrollbar import ScrollBar

__all__ = ["find_near", "thumb_start"]


def thumb_start(bar: ScrollBar, position: float) -> int | None:
    """Where `bar` draws its thumb at `position`, in eighths of a cell, as Textual's
    `ScrollBarRender.render_bar` works it out (None: no thumb drawn)."""
    size = bar.size.height
    virtual = ceil(bar.window_virtual_size)
    window = ceil(bar.window_size) if bar.window_size < bar.window_virtual_size else 0
    if not (window and size and virtual) or size == virtual:
        return None
    thumb = max(1, window / (virtual / size))
    return int((size - thumb) * (position / (virtual - window)) * len(bar.renderer.VERTICAL_BARS))


def find_near(rows: Sequence[Any], key: Callable[[Any], str], wanted: str, near: int, reach: int = 1000) -> int:
    """The index of the row whose key is `wanted` (-1: none), looking outward from `near` first:
    a refresh moves the cursor's row a few places at most, and 200,000 keys cost ~0.1 s."""
    count = len(rows)
    for step in range(reach + 1):
        for i in (near + step, near - step) if step else (near,):
            if 0 <= i < count and key(rows[i]) == wanted:
                return i
    return next((i for i, r in enumerate(rows) if key(r) == wanted), -1)
