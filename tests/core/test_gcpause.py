"""The collector pause around bulk builds: state restored, long-lived results kept out of GC walks."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from gpuq.gcpause import gc_paused


@pytest.fixture(autouse=True)
def _collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    gc.unfreeze()  # hand frozen objects back to the collector for the rest of the suite
    if not was:
        gc.disable()


def test_pauses_and_restores() -> None:
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_kept_results_leave_the_collected_generations() -> None:
    gc.unfreeze()
    with gc_paused(keep=True):
        built = [{"job": i} for i in range(1000)]
    assert gc.get_freeze_count() >= len(built)  # the collector no longer walks them
    assert gc.isenabled()


def test_an_error_restores_the_collector_and_keeps_nothing() -> None:
    gc.unfreeze()
    with pytest.raises(ValueError), gc_paused(keep=True):
        raise ValueError("bad snapshot")
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0  # the traceback's cycles stay collectable


def test_a_process_that_turned_the_collector_off_is_left_alone() -> None:
    gc.unfreeze()
    gc.disable()
    with gc_paused(keep=True):
        [{"job": i} for i in range(100)]
    assert not gc.isenabled()
    assert gc.get_freeze_count() == 0
