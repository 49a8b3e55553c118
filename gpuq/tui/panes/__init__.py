"""The console's views, one `Pane` each, in the order of their number keys."""

from __future__ import annotations

import importlib

from gpuq.tui.panes.base import Pane

__all__ = ["PANE_MODULES", "pane_classes"]

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


def pane_classes() -> list[type[Pane]]:
    classes = []
    for target in PANE_MODULES.values():
        module, _, name = target.partition(":")
        cls = getattr(importlib.import_module(module), name)
        assert issubclass(cls, Pane)
        classes.append(cls)
    return classes
