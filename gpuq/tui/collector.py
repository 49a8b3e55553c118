"""The cyclic garbage collector, set for a process that runs one console for hours (`gpuq tui`).

A collection holds up every thread, the UI thread included, so a key that arrives during one
waits for it. Two settings keep them short and rare:

- the objects made while starting (modules, widgets, styles: tens of thousands that live as long
  as the process) are left out of every later scan (`gc.freeze`);
- a young collection runs after `YOUNG_THRESHOLD` new container objects instead of Python's 700.
  Drawing a frame makes a few thousand short-lived ones, so with 700 a collection ran every few
  frames, and every hundredth of them was a full one that walked everything a refresh holds.

A compute worker also keeps collections out of the frames while it builds a view
(`computing`): a young collection walks every entry of the large lists it is making, and the one
that the UI thread's next allocation would set off is the longest hold a key meets then.

Memory stays bounded: what reference counting does not free waits at most one young collection
(or one compute) longer. Tests leave the collector alone (their consoles do not own the process).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["YOUNG_THRESHOLD", "computing", "settle_collector"]

#: new container objects between two young collections in a long-running console
YOUNG_THRESHOLD = 20_000


def settle_collector() -> None:
    """Freeze what exists now and raise the young generation's threshold (as the console mounts, so
    that its first read and compute run with it, and again once its first frame is out)."""
    gc.freeze()
    young, middle, old = gc.get_threshold()
    gc.set_threshold(max(young, YOUNG_THRESHOLD), middle, old)


class _Computes:
    """How many computes run now, and whether the collector is off because of them."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running = 0
        self.turned_off = False


_COMPUTES = _Computes()


@contextmanager
def computing(pause: Callable[[], None]) -> Iterator[None]:
    """Around a worker's compute: no automatic collection meanwhile; after the last compute
    running, its worker steps aside for input (`pause`) and runs the collection the collector
    would have run by then (the young one, or the middle one when due: with the young one alone,
    cycles got into the oldest generation and waited there, and the console's RSS settled higher),
    so the lists the computes made are walked once, in a worker, and not in whichever frame
    allocates next. A collector someone else turned off stays off."""
    with _COMPUTES.lock:
        _COMPUTES.running += 1
        if gc.isenabled():
            gc.disable()
            _COMPUTES.turned_off = True
    try:
        yield
    finally:
        with _COMPUTES.lock:
            _COMPUTES.running -= 1
            last = _COMPUTES.running == 0 and _COMPUTES.turned_off
        if last:
            pause()
            with _COMPUTES.lock:
                # (a compute that began meanwhile turns the collector back on when it ends)
                if _COMPUTES.running == 0 and _COMPUTES.turned_off:
                    middle_due = gc.get_count()[1] >= gc.get_threshold()[1]
                    gc.collect(1 if middle_due else 0)
                    gc.enable()
                    _COMPUTES.turned_off = False
