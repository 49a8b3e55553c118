"""The console's views, one `Pane` each, in the order of their number keys."""

from __future__ import annotations

import importlib

from gpuq.tui.panes.base import Pane

__all__ = ["PANE_MODULES", "pane_class", "pane_classes"]

#: view id -> "module:class"; the number keys follow this order (gpuq/tui/keymap.py)
PANE_MODULES: dict[str, str] = {
    "queue": "gpuq.tui.panes.queue:QueuePane",
    "gpus": "gpuq.tui.panes.gpus:GpusPane",
    "sla": "gpuq.tui.panes.sla:SlaPane",
    "preemptions": "gpuq.tui.panes.preemptions:PreemptionsPane",
    "job": "gpuq.tui.panes.job:JobPane",
    "preview": "gpuq.tui.panes.preview:PreviewPane",
    "audit": "gpuq.tui.panes.audit:AuditPane",
    "lab": "gpuq.tui.panes.lab:LabPane",
}


def pane_class(view_id: str) -> type[Pane]:
    """One view's pane class, importing only its module."""
    module, _, name = PANE_MODULES[view_id].partition(":")
    cls = getattr(importlib.import_module(module), name)
    assert isinstance(cls, type) and issubclass(cls, Pane)
    return cls


def pane_classes() -> list[type[Pane]]:
    return [pane_class(view_id) for view_id in PANE_MODULES]
