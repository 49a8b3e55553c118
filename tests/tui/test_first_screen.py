"""The first screen of a large queue: the console shows the first rows as soon as they are known,
while the rest are sorted, then every row; only until the view has shown a finished model."""

from __future__ import annotations

from typing import Any

import pytest

from gpuq.service import Cluster
from gpuq.tui.app import GpuqConsole
from gpuq.tui.panes.queue import QueueModel, QueuePane, QueueParams
from gpuq.tui.widgets.table import ViewTable
from gpuq.views import queue as view
from tests.tui.conftest import ConsoleFactory, loaded, wait_for


def _record_shows(monkeypatch: pytest.MonkeyPatch) -> list[tuple[bool, list[str], str]]:
    """(partial, row ids, the status line's text) of every model the Queue view shows."""
    shown: list[tuple[bool, list[str], str]] = []
    real = QueuePane.show

    def show(pane: QueuePane, model: Any) -> None:
        real(pane, model)
        assert isinstance(model, QueueModel)
        shown.append((model.partial, [r.item.job.id for r in model.rows], pane.status()))

    monkeypatch.setattr(QueuePane, "show", show)
    return shown


async def test_the_first_rows_show_ahead_of_the_sort_then_every_row(
    console: ConsoleFactory, small_cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(view, "FIRST_AFTER", 0)  # (the fixture's 7 rows stand for 200,000)
    monkeypatch.setattr(view, "FIRST_ROWS", 3)
    shown = _record_shows(monkeypatch)
    app: GpuqConsole = console([small_cluster])
    async with app.run_test(size=(120, 30)) as pilot:
        await loaded(pilot)
        await wait_for(pilot, lambda: not app._computing and len(shown) >= 2)
        (early, first_ids, first_status), (final, all_ids, all_status) = shown[:2]
        assert early and not final
        assert len(first_ids) == 3 and len(all_ids) == 7 and first_ids == all_ids[:3]
        # (what follows " · " says which columns the width hides, once the table is laid out)
        assert first_status.split(" · ")[0] == "7 jobs, the first 3 shown while the rest are sorted"
        assert all_status.split(" · ")[0] == "7 jobs"
        assert app.query_one("#queue-table", ViewTable).row_count == 7
        # a later compute of a view already shown (another order) replaces its rows once, with
        # every row: the cursor and the scroll position of a view in use are not pulled about
        pane = app.query_one(QueuePane)
        token, count = app._token, len(shown)
        pane._params = QueueParams("GPUS", True)
        app.recompute()
        await wait_for(pilot, lambda: app._token > token and not app._computing)
        await pilot.pause()
        assert [partial for partial, _, _ in shown[count:]] == [False]


async def test_a_small_queue_is_shown_once(
    console: ConsoleFactory, small_cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    shown = _record_shows(monkeypatch)
    app: GpuqConsole = console([small_cluster])
    async with app.run_test(size=(120, 30)) as pilot:
        await loaded(pilot)
        await wait_for(pilot, lambda: not app._computing and bool(shown))
        assert [partial for partial, _, _ in shown] == [False]


async def test_the_sort_waits_until_the_first_rows_are_painted(
    console: ConsoleFactory, small_cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The compute hands the first rows over, then lets the UI thread paint them before it goes
    on sorting: a sort holds the interpreter, and the first screen would wait for it."""
    monkeypatch.setattr(view, "FIRST_AFTER", 0)
    monkeypatch.setattr(view, "FIRST_ROWS", 3)
    drawn: list[int] = []  # row counts of the queue table, each time it drew a job row
    render_line = ViewTable.render_line

    def record_drawing(table: ViewTable, y: int) -> Any:
        if y >= 1 and table.id == "queue-table" and table.row_count:
            drawn.append(table.row_count)
        return render_line(table, y)

    monkeypatch.setattr(ViewTable, "render_line", record_drawing)
    painted_before_sort: list[bool] = []
    sort_rows = view.sort_rows

    def record_sort(rows: list[Any], *args: Any, **kwargs: Any) -> None:
        if len(rows) == 7:  # the whole sort (first_rows sorts only the 3 it chose)
            painted_before_sort.append(3 in drawn)
        sort_rows(rows, *args, **kwargs)

    monkeypatch.setattr(view, "sort_rows", record_sort)
    app: GpuqConsole = console([small_cluster])
    async with app.run_test(size=(120, 30)) as pilot:
        await loaded(pilot)
        await wait_for(pilot, lambda: not app._computing and 7 in drawn)
        assert painted_before_sort == [True]
