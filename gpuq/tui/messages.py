"""Typed messages workers post to the console (harlequin's pattern): the UI thread reacts to them."""

from __future__ import annotations

import threading
from typing import Any

from textual.message import Message

from gpuq.model import Snapshot

__all__ = ["Computed", "RefreshFailed", "Refreshed"]


class Refreshed(Message):
    """A cluster was read: its new snapshot (worker thread → UI)."""

    def __init__(self, index: int, snapshot: Snapshot, took_s: float) -> None:
        super().__init__()
        self.index, self.snapshot, self.took_s = index, snapshot, took_s


class RefreshFailed(Message):
    """A read failed; the last good snapshot stays on screen, marked stale."""

    def __init__(self, index: int, error: str) -> None:
        super().__init__()
        self.index, self.error = index, error


class Computed(Message):
    """A pane's view model, computed for the parameters of `token` (older ones are dropped)."""

    def __init__(self, view_id: str, token: int, model: Any, took_s: float, error: str | None = None,
                 early: threading.Event | None = None) -> None:  # fmt: skip
        super().__init__()
        self.view_id, self.token, self.model, self.took_s, self.error = view_id, token, model, took_s, error
        #: given for a provisional model the compute handed over before it finished
        #: (`PaneContext.early`): set by the UI thread once that model is painted (or dropped)
        self.early = early
