"""The collector pause around the simulator's bulk work: the collector's state is restored."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from gpuq.sim.gcpause import gc_paused


@pytest.fixture(autouse=True)
def _collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_pauses_and_restores() -> None:
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_an_error_restores_the_collector() -> None:
    with pytest.raises(ValueError), gc_paused():
        raise ValueError("bad batch")
    assert gc.isenabled()


def test_a_process_that_turned_the_collector_off_is_left_alone() -> None:
    gc.disable()
    with gc_paused():
        [{"job": i} for i in range(100)]
    assert not gc.isenabled()
