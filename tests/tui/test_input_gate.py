"""Input first (gpuq/tui/gate.py): after a key or a click the worker computing a view sleeps at
its next step, so the UI thread answers the key alone; a worker that stepped aside takes a step
before it does so again."""

from __future__ import annotations

import dataclasses
import sys
import threading

import msgspec
import numpy  # noqa: F401  # (the paced sort sorts with numpy once it is imported)
import pytest
from textual import events

from gpuq.service import Cluster
from gpuq.tui.gate import InputGate
from gpuq.tui.panes.base import ClusterItem, PaneContext
from gpuq.tui.panes.gpus import GpusPane
from gpuq.tui.panes.sla import SlaPane
from gpuq.views import pacing
from gpuq.views import queue as queue_view
from tests.tui.backends import flaky_cluster
from tests.tui.conftest import SMALL, ConsoleFactory, loaded, wait_for


class _Time:
    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_a_worker_sleeps_only_within_the_hold_after_an_input() -> None:
    t = _Time()
    gate = InputGate(hold_s=0.05, clock=t.clock, sleep=t.sleep)
    gate.pause()
    assert t.slept == []  # no input yet
    gate.note_input()
    t.now += 0.01
    gate.pause()
    assert t.slept == [pytest.approx(0.04)]  # the rest of the hold
    gate.pause()
    assert len(t.slept) == 1  # (after the hold: a step before anything else)
    gate.note_input()
    t.now += 0.06
    gate.pause()
    assert len(t.slept) == 1  # that input's hold is over


def test_each_input_earns_one_pause_per_thread() -> None:
    t = _Time()
    gate = InputGate(hold_s=0.05, clock=t.clock, sleep=lambda s: t.slept.append(s))  # (time stands still)
    gate.note_input()
    gate.pause()
    gate.pause()  # a held-down key: the worker still makes progress between two pauses
    assert len(t.slept) == 1
    other = threading.Thread(target=gate.pause)
    other.start()
    other.join()
    assert len(t.slept) == 2  # another worker steps aside as well
    gate.note_input()
    gate.pause()
    assert len(t.slept) == 3


async def test_a_key_makes_the_computing_worker_step_aside(
    console: ConsoleFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A key pressed in the console notes an input; the Queue view's compute, in its worker
    thread, then pauses between its steps (here every job: the fixture's 7 stand for 200,000)."""
    monkeypatch.setattr(queue_view, "PAUSE_EVERY", 1)
    cluster, backend = flaky_cluster(SMALL)
    app = console([cluster])
    sleepers: list[str] = []
    app.gate = InputGate(hold_s=3600.0, sleep=lambda s: sleepers.append(threading.current_thread().name))
    async with app.run_test(size=(120, 30)) as pilot:
        await loaded(pilot)
        assert sleepers == []  # nothing pressed yet: the worker never slept
        await pilot.press("down")
        jobs = tuple(msgspec.structs.replace(j, priority=j.priority + 1) for j in backend.snap.jobs)
        backend.snap = dataclasses.replace(backend.snap, jobs=jobs)  # (a new snapshot: computed again)
        token = app._token
        app.action_refresh_now()
        await wait_for(pilot, lambda: app._token > token and not app._computing)
        assert sleepers and threading.main_thread().name not in sleepers


def test_the_paced_rows_are_the_cli_rows(small_cluster: Cluster) -> None:
    """Without a `pause` (the CLI), `queue_rows` sorts in one go and gives the same rows as the
    console's paced path."""
    snap = small_cluster.snapshot()
    wanted = queue_view.QueueFilter()
    plain = queue_view.queue_rows(small_cluster, snap, wanted)
    calls: list[int] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(queue_view, "PAUSE_EVERY", 2)
        patch.setattr(queue_view, "SORT_CHUNK", 2)
        paced = queue_view.queue_rows(small_cluster, snap, wanted, pause=lambda: calls.append(1))
    assert [r.job.id for r in paced] == [r.job.id for r in plain] and len(plain) > 2
    assert len(calls) > len(plain) // 2


async def test_the_driver_notes_an_input_as_it_hands_it_over(console: ConsoleFactory) -> None:
    """A key from the driver's input thread is noted before the UI thread takes it up (the
    worker steps aside while the UI thread wakes), and still reaches the console."""
    cluster, _backend = flaky_cluster(SMALL)
    app = console([cluster])
    async with app.run_test(size=(120, 30)) as pilot:
        await loaded(pilot)
        table = app.query_one("#queue-table")
        before, cursor = app.gate._inputs, table.cursor  # type: ignore[attr-defined]
        noted: list[int] = []
        sender = threading.Thread(target=lambda: (app._driver.send_message(events.Key("down", None)),  # type: ignore[union-attr]
                                                  noted.append(app.gate._inputs)))  # fmt: skip
        sender.start()
        sender.join()
        assert noted and noted[0] > before  # noted in the sending thread, before the UI thread ran
        await wait_for(pilot, lambda: table.cursor == cursor + 1)  # type: ignore[attr-defined]


async def test_numpy_is_imported_after_the_first_view_is_shown(
    console: ConsoleFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Until numpy is imported the sorts are plain (the import would hold up the first frame);
    the console imports it in a worker once its first view is on screen."""
    monkeypatch.delitem(sys.modules, "numpy")  # (put back after the test)
    cluster, _backend = flaky_cluster(SMALL)
    app = console([cluster])
    imported: list[bool] = []
    monkeypatch.setattr(app, "_import_numpy", lambda: imported.append(app.pane.is_mounted))
    async with app.run_test(size=(120, 30)) as pilot:
        await loaded(pilot)
        await wait_for(pilot, lambda: imported)
        assert imported[0]


def test_without_numpy_the_paced_sort_is_one_plain_sort(small_cluster: Cluster,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    snap = small_cluster.snapshot()
    wanted = queue_view.QueueFilter()
    plain = queue_view.queue_rows(small_cluster, snap, wanted)
    monkeypatch.delitem(sys.modules, "numpy")
    monkeypatch.setattr(queue_view, "SORT_CHUNK", 2)
    paced = queue_view.queue_rows(small_cluster, snap, wanted, pause=lambda: None)
    assert [r.job.id for r in paced] == [r.job.id for r in plain]


@pytest.mark.parametrize("pane_class", [GpusPane, SlaPane])
def test_the_gpus_and_sla_views_compute_in_steps_to_the_same_model(
    pane_class: type[GpusPane] | type[SlaPane], small_cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The GPUs and SLA views pause between their steps as the Queue view does (here every job or
    node: the fixture stands for 10,000 nodes), and show the same as computed in one go."""
    monkeypatch.setattr(pacing, "STEP", 1)
    snap = small_cluster.snapshot()
    whole = pane_class().compute(PaneContext((ClusterItem(0, small_cluster, snap),), None, "", False), False)
    calls: list[int] = []
    ctx = PaneContext((ClusterItem(0, small_cluster, snap),), None, "", False, lambda: calls.append(1))
    stepped = pane_class().compute(ctx, False)
    assert stepped == whole
    assert len(calls) > len(snap.nodes if pane_class is GpusPane else snap.jobs)
