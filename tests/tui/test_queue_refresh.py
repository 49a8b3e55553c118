"""A refresh of the Queue view: the same snapshot is not computed again, new rows replace the old
in place (the same table, no widget mounted or removed), the rows no longer shown are freed off
the UI thread, and the cursor's row is looked for near where it was first."""

from __future__ import annotations

import dataclasses
from typing import Any

import msgspec
import pytest

from gpuq.model import Snapshot
from gpuq.service import Cluster
from gpuq.tui.panes import queue
from gpuq.tui.panes.base import ClusterItem, PaneContext
from gpuq.tui.panes.queue import QueuePane, QueueParams
from gpuq.tui.widgets.positions import find_near
from gpuq.tui.widgets.table import ViewTable
from tests.tui.backends import flaky_cluster
from tests.tui.conftest import SMALL, ConsoleFactory, loaded, wait_for


def context(cluster: Cluster, snapshot: Snapshot, text: str = "") -> PaneContext:
    return PaneContext((ClusterItem(0, cluster, snapshot),), None, text, False)


def test_the_same_snapshot_is_not_computed_again(small_cluster: Cluster) -> None:
    pane = QueuePane()
    snap = small_cluster.snapshot()
    first = pane.compute(context(small_cluster, snap), QueueParams())
    assert pane.compute(context(small_cluster, snap), QueueParams()) is first
    # anything it depends on computes it again: another snapshot (even an equal one), sort, filter
    again = pane.compute(context(small_cluster, dataclasses.replace(snap)), QueueParams())
    assert again is not first and [r.item.job.id for r in again.rows] == [r.item.job.id for r in first.rows]
    by_id = pane.compute(context(small_cluster, snap), QueueParams("ID", False))
    assert [r.item.job.id for r in by_id.rows] == sorted(r.item.job.id for r in first.rows)
    filtered = pane.compute(context(small_cluster, snap, "carol"), QueueParams("ID", False))
    assert {r.item.job.user for r in filtered.rows} == {"carol"}
    assert pane.compute(context(small_cluster, snap, "carol"), QueueParams("ID", False)) is filtered


async def test_a_refresh_replaces_the_rows_in_place_and_frees_the_old(
    console: ConsoleFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(queue, "FREE_AFTER", 0)  # (the fixture's 7 rows stand for 200,000)
    boxes: list[tuple[list[Any], bool]] = []
    real_free = queue._free

    def free(box: list[Any], pause: Any) -> None:
        boxes.append((box, box[0] is old))
        real_free(box, pause)

    monkeypatch.setattr(queue, "_free", free)
    cluster, backend = flaky_cluster(SMALL)
    app = console([cluster])
    async with app.run_test(size=(120, 30)) as pilot:
        await loaded(pilot)
        table = app.query_one("#queue-table", ViewTable)
        panes = app.query_one("#panes")  # (Textual's footer recomposes its keys as bindings change)
        widgets = [id(w) for w in panes.walk_children(with_self=True)]
        await pilot.press("down", "down")
        chosen = table.cursor_key
        # the file answers with the same snapshot: nothing is computed, nothing is freed
        same = table.data.rows
        token = app._token
        app.action_refresh_now()
        await wait_for(pilot, lambda: app._token > token and not app._computing)
        assert table.data.rows is same and len(same) == 7
        # a refresh that changes one job's priority
        job = next(j for j in backend.snap.jobs if j.id == "201")
        jobs = tuple(msgspec.structs.replace(j, priority=5000) if j is job else j for j in backend.snap.jobs)
        backend.snap = dataclasses.replace(backend.snap, jobs=jobs)
        old = table.data.rows
        token = app._token
        app.action_refresh_now()
        await wait_for(pilot, lambda: app._token > token and not app._computing)
        shown = {r.item.job.id: r.item.job.priority for r in table.data.rows}
        assert shown["201"] == 5000 and len(shown) == 7
        assert app.query_one("#queue-table", ViewTable) is table
        assert [id(w) for w in panes.walk_children(with_self=True)] == widgets
        assert table.cursor_key == chosen  # the cursor stayed on its job
        # handed to the worker, which took the last reference to them out of its box
        await wait_for(pilot, lambda: bool(boxes) and boxes[0][0] == [])
        assert [seen for _, seen in boxes] == [True]
        assert table.row_count == 7


def test_the_cursors_row_is_looked_for_near_where_it_was() -> None:
    rows = [str(i) for i in range(200_000)]
    asked: list[str] = []

    def key(row: str) -> str:
        asked.append(row)
        return row

    assert find_near(rows, key, "100003", 100_000) == 100_003
    assert len(asked) <= 8  # 100000, 100001, 99999, ... : not a scan from the top
    assert find_near(rows, key, "99996", 100_000) == 99_996
    assert find_near(rows, key, "7", 150_000) == 7  # far away: found all the same
    assert find_near(rows, key, "gone", 5) == -1
    assert find_near([], key, "0", 0) == -1
    assert find_near(rows[:10], key, "9", 400) == 9  # the old cursor past the end


def test_a_compute_makes_no_object_the_collector_tracks_per_row(small_cluster: Cluster) -> None:
    """A row of the model is nothing the cyclic collector tracks: on 200,000 jobs, a tracked
    object per row set off a young collection every 700 of them, each one holding up the UI
    thread as well."""
    import gc

    snap = small_cluster.snapshot()
    jobs = [msgspec.structs.replace(j, id=f"{j.id}.{k}") for k in range(600) for j in snap.jobs]
    big = dataclasses.replace(snap, jobs=tuple(jobs))
    gc.collect()
    gc.disable()
    try:
        before = gc.get_count()[0]
        model = QueuePane().compute(context(small_cluster, big), QueueParams())
        made = gc.get_count()[0] - before
    finally:
        gc.enable()
    assert len(model.rows) >= 3000
    assert made < len(model.rows) / 20, made
    assert not any(gc.is_tracked(row) for row in model.rows)


async def test_a_finished_compute_leaves_no_snapshot_for_the_collector_to_free(console: ConsoleFactory) -> None:
    """Textual keeps a finished worker until the cyclic collector frees it (it and its task refer to
    each other): a compute worker that still held its context kept every earlier snapshot alive
    until then, and the collector then walked them all at once (100 ms on 200,000 jobs). Reference
    counting alone frees them now."""
    import gc

    from gpuq.model import Snapshot

    cluster, backend = flaky_cluster(SMALL, "freed")  # (a name of its own: other tests' snapshots may live on)
    app = console([cluster])
    async with app.run_test(size=(120, 30)) as pilot:
        await loaded(pilot)
        gc.collect()
        gc.disable()
        try:
            for priority in range(1, 7):  # each read a new snapshot, each computed
                backend.snap = dataclasses.replace(backend.snap, jobs=tuple(
                    msgspec.structs.replace(j, priority=priority) for j in backend.snap.jobs))  # fmt: skip
                token = app._token
                app.action_refresh_now()
                await wait_for(pilot, lambda t=token: app._token > t and not app._computing)

            def earlier() -> list[Snapshot]:
                """Snapshots of this cluster alive besides the one on screen and the backend's."""
                kept = {id(app.snapshots[0]), id(backend.snap)}
                return [o for o in gc.get_objects() if isinstance(o, Snapshot) and o.cluster == "freed"
                        and id(o) not in kept]  # fmt: skip

            # A thread or a message may hold the latest but one for a moment; what only the
            # collector could free (off here) never goes.
            await wait_for(pilot, lambda: not earlier(), timeout=5.0)
        finally:
            gc.enable()
