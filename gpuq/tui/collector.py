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

The largest containers a refresh makes, the snapshot's jobs and the queue's rows (200,000 each on
a large cluster), are tuples of structs the collector never tracks (`gc=False`). The collector
stops tracking such a tuple once it has seen that, but only after walking all of its entries, and
that walk is most of a young collection's hold. `untrack` tells it as soon as the tuple is made.

Memory stays bounded: what reference counting does not free waits at most one young collection
(or one compute) longer. Tests leave the collector alone (their consoles do not own the process).
"""

from __future__ import annotations

import ctypes
import gc
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from itertools import islice

__all__ = ["UNTRACK_STEP", "YOUNG_THRESHOLD", "computing", "settle_collector", "untrack"]

#: new container objects between two young collections in a long-running console
YOUNG_THRESHOLD = 20_000


def settle_collector() -> None:
    """Freeze what exists now and raise the young generation's threshold (as the console mounts, so
    that its first read and compute run with it, and again once its first frame is out)."""
    gc.freeze()
    young, middle, old = gc.get_threshold()
    gc.set_threshold(max(young, YOUNG_THRESHOLD), middle, old)


#: entries checked between two calls of `untrack`'s `pause`
UNTRACK_STEP = 16384

_gc_untrack: Callable[[object], None] | None = None
if sys.implementation.name == "cpython":  # (public C API; `pythonapi` calls it holding the interpreter lock)
    _gc_untrack = ctypes.pythonapi.PyObject_GC_UnTrack
    _gc_untrack.argtypes = [ctypes.py_object]
    _gc_untrack.restype = None


def _no_pause() -> None:
    return None


def untrack(items: object, pause: Callable[[], None] = _no_pause) -> bool:
    """Stop the cyclic collector tracking the tuple `items` if none of its entries is tracked: what
    CPython's collector itself does to such a tuple the first time it scans it (no cycle can run
    through it), without the scan. Checked `UNTRACK_STEP` entries at a time with `pause` between
    (a worker's chance to step aside). Anything but a tuple (a list can still be given a tracked
    entry), or a tracked entry, leaves it as it is. True when it is no longer tracked."""
    if type(items) is not tuple or _gc_untrack is None:
        return False
    if not gc.is_tracked(items):
        return True
    tracked, entries = gc.is_tracked, iter(items)
    for _ in range(0, len(items), UNTRACK_STEP):
        if any(map(tracked, islice(entries, UNTRACK_STEP))):
            return False
        pause()
    _gc_untrack(items)
    return True


class _Computes:
    """How many computes run now, and whether the collector is off because of them."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running = 0
        self.turned_off = False


_COMPUTES = _Computes()


@contextmanager
def computing(pause: Callable[[], None], *, manage: bool = True) -> Iterator[None]:
    """Around a worker's compute: no automatic collection meanwhile; after the last compute
    running, its worker steps aside for input (`pause`) and runs the collection the collector
    would have run by then (the young one, or the middle one when due: with the young one alone,
    cycles got into the oldest generation and waited there, and the console's RSS settled higher),
    so the lists the computes made are walked once, in a worker, and not in whichever frame
    allocates next. A collector someone else turned off stays off. `manage` False (a console that
    does not own its process: a test's) leaves the collector alone."""
    if not manage:
        yield
        return
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
