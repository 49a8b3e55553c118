"""Pausing the cyclic garbage collector while the simulator builds and churns acyclic objects."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["gc_paused"]


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for the duration (its state is restored after).

    The event loop and a batch submission allocate heap entries and job records by the million
    and make no reference cycles: the collections those allocations trigger find nothing and
    cost about 5% (benchmarks/README.md). Memory is still returned by reference counting.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
