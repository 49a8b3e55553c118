"""Clocks for tests: a fixed clock a test moves by hand, a ticking clock anchored at a chosen
instant, and the real wall clock.

Code under test takes its clock as an argument (`clock=`); tests pass one of these so that what
they assert never depends on today's date. `real_time` is the wall clock that programs started in
subprocesses read, also while the suite runs with its own clock shifted (tests/conftest.py).
"""

from __future__ import annotations

import time


def real_time() -> float:
    """The real wall clock (epoch seconds), outside any time-machine shift of this process."""
    try:
        from time_machine import escape_hatch
    except ImportError:  # pragma: no cover - time-machine is a test dependency
        return time.time()
    return escape_hatch.time.time() if escape_hatch.is_travelling() else time.time()


class TickingClock:
    """Epoch seconds that start at `start` and advance with the monotonic clock (sleeps and
    timeouts in the code under test still take real time)."""

    def __init__(self, start: float) -> None:
        self.start = start
        self._origin = time.monotonic()

    def __call__(self) -> float:
        return self.start + (time.monotonic() - self._origin)


class FixedClock:
    """Epoch seconds that stand still at `now` until the test moves them (`clock.now += 10`)."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now
