"""The cyclic garbage collector, set for a process that runs one console for hours (`gpuq tui`).

A collection holds up every thread, the UI thread included, so a key that arrives during one
waits for it. Two settings keep them short and rare:

- the objects made while starting (modules, widgets, styles: tens of thousands that live as long
  as the process) are left out of every later scan (`gc.freeze`);
- a young collection runs after `YOUNG_THRESHOLD` new container objects instead of Python's 700.
  Drawing a frame makes a few thousand short-lived ones, so with 700 a collection ran every few
  frames, and every hundredth of them was a full one that walked everything a refresh holds.

Memory stays bounded: what reference counting does not free waits at most one young collection
longer. Tests leave the collector alone (their consoles do not own the process).
"""

from __future__ import annotations

import gc

__all__ = ["YOUNG_THRESHOLD", "settle_collector"]

#: new container objects between two young collections in a long-running console
YOUNG_THRESHOLD = 20_000


def settle_collector() -> None:
    """Freeze what exists now and raise the young generation's threshold (as the console mounts, so
    that its first read and compute run with it, and again once its first frame is out)."""
    gc.freeze()
    young, middle, old = gc.get_threshold()
    gc.set_threshold(max(young, YOUNG_THRESHOLD), middle, old)
