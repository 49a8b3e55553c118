"""Suite-wide set-up: the Hypothesis profile (`tests/properties.py`: derandomised unless
GPUQ_HYPOTHESIS_PROFILE=explore), the wall clock shifted for the whole run when
GPUQ_TEST_CLOCK_AHEAD is set, and the cyclic garbage collector left after each test as the test
found it.

`.ci/run` (scripts/test) runs the tests that need no Slurm lab a second time with the clock three
years ahead, so a test that depends on today's date fails at the commit that plants it. The shift
happens inside this process (time-machine patches `time.time`, `datetime.now` and friends; it
leaves the monotonic clocks alone, so timeouts and sleeps behave): programs the tests start in
subprocesses keep the real clock.
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Iterator

import pytest

_AHEAD_ENV = "GPUQ_TEST_CLOCK_AHEAD"
_traveller: object | None = None


def clock_ahead_s() -> float:
    """Seconds the wall clock is shifted by in this run (0 when it is not)."""
    raw = os.environ.get(_AHEAD_ENV, "").strip()
    if not raw:
        return 0.0
    from gpuq.timefmt import parse_duration

    return parse_duration(raw)


def pytest_configure(config: pytest.Config) -> None:
    global _traveller
    from tests import properties

    properties.load()  # before the test modules build their `settings(...)` from the profile
    ahead = clock_ahead_s()
    if ahead and _traveller is None:
        import time_machine

        _traveller = time_machine.travel(time.time() + ahead, tick=True)
        _traveller.start()  # type: ignore[attr-defined]


def pytest_report_header(config: pytest.Config) -> str | None:
    ahead = clock_ahead_s()
    from tests import properties

    hypothesis = f"hypothesis profile {properties.profile()} ({properties.PROFILE_ENV})"
    if not ahead:
        return hypothesis
    now = time.strftime("%Y-%m-%d %H:%M:%S")
    return f"{hypothesis}; wall clock shifted {ahead / 86400:.0f} days ahead ({_AHEAD_ENV}); now {now}"


@pytest.fixture(autouse=True)
def _collector_as_found() -> Iterator[None]:
    """gpuq turns the collector off where a process is its own (`gpuq.cli.main`, a tuning pool's
    worker); code of that kind run inside the test process must not change what later tests see."""
    was_enabled = gc.isenabled()
    yield
    (gc.enable if was_enabled else gc.disable)()
