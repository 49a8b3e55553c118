"""The console's frame: the queue view, sorting, filtering, `:` commands, help, clusters and the
combined view, refresh failures (stale banner, backoff, a backend down at start), resizing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rich.text import Text
from textual.widgets import Static

from gpuq.model import JobState, Node, NodeState
from gpuq.model.codec import encode_snapshot
from gpuq.service import Cluster
from gpuq.tui.app import GpuqConsole
from gpuq.tui.keymap import ACTIONS
from gpuq.tui.widgets.table import ViewTable
from gpuq.views.queue import QueueFilter, SortKey, queue_rows
from tests.factories import make_job, make_snapshot
from tests.tui.backends import flaky_cluster
from tests.tui.conftest import CONSOLE_T0, SMALL, ConsoleFactory, loaded, noted, wait_for


def lines(table: ViewTable) -> list[str]:
    return [table.render_line(y).text.rstrip() for y in range(table.size.height)]


def status(app: GpuqConsole) -> str:
    return str(app.query_one("#status", Static).render())


def queue_table(app: GpuqConsole) -> ViewTable:
    return app.query_one("#queue-table", ViewTable)


async def test_queue_shows_the_views_rows_in_their_order(small_cluster: Cluster, console: ConsoleFactory) -> None:
    app = console([small_cluster])
    async with app.run_test(size=(160, 40)) as pilot:
        await loaded(pilot)
        table = queue_table(app)
        snap = small_cluster.snapshot()
        # pending first (state order), each state by effective priority
        wanted = QueueFilter(sort=(SortKey("state", False), SortKey("effective", True)))
        expected = [r.job.id for r in queue_rows(small_cluster, snap, wanted)]
        assert snap.job(expected[0]).state.value == "pending"  # type: ignore[union-attr]
        assert [table.data.key(r).split("/")[1] for r in table.data.rows] == expected
        shown = lines(table)
        assert shown[0].split()[:3] == ["ID", "NAME", "USER"]
        assert [line.split()[0] for line in shown[1 : 1 + len(expected)]] == expected
        await wait_for(pilot, lambda: f"{len(expected)} jobs" in status(app))  # (the status line: next tick)


async def test_sort_keys_and_the_cursor_stays_on_its_job(small_cluster: Cluster, console: ConsoleFactory) -> None:
    app = console([small_cluster])
    async with app.run_test(size=(160, 40)) as pilot:
        await loaded(pilot)
        table = queue_table(app)
        await pilot.press("down")
        chosen = table.cursor_key
        assert chosen is not None and app.selected is not None and app.selected.job_id == chosen.split("/")[1]
        await pilot.press("s")  # the next sortable column after STATE
        await wait_for(pilot, lambda: table.data.sorted_by != "STATE")
        by = table.data.sorted_by
        assert f"{by}" in lines(table)[0]
        assert table.cursor_key == chosen  # the same job, wherever its row went
        before = [table.data.key(r) for r in table.data.rows]
        await pilot.press("S")
        await wait_for(pilot, lambda: [table.data.key(r) for r in table.data.rows] != before)
        assert table.data.descending is not (by not in ("ID", "USER", "TENANT", "STATE"))
        assert table.cursor_key == chosen


async def test_filter_and_escape(small_cluster: Cluster, console: ConsoleFactory) -> None:
    app = console([small_cluster])
    async with app.run_test(size=(160, 40)) as pilot:
        await loaded(pilot)
        table = queue_table(app)
        everyone = table.row_count
        user = table.data.rows[0].item.job.user
        await pilot.press("slash", *user, "enter")
        await wait_for(pilot, lambda: table.row_count < everyone)
        assert all(user in (r.item.job.user + r.item.job.name + r.item.job.id) for r in table.data.rows)
        assert f"filter /{user}" in status(app)
        assert f"of {everyone} jobs" in status(app)
        await pilot.press("escape")
        await wait_for(pilot, lambda: table.row_count == everyone)
        assert "filter" not in status(app)


async def test_colon_commands(small_cluster: Cluster, console: ConsoleFactory) -> None:
    app = console([small_cluster])
    async with app.run_test(size=(120, 30)) as pilot:
        await loaded(pilot)
        await pilot.press("colon", *"theme light", "enter")
        assert app.theme == "light"
        await pilot.press("colon", *"nonsense", "enter")
        await pilot.pause()
        assert any("unknown command 'nonsense'" in n.message for n in noted(app))
        await pilot.press("colon", *"q", "enter")
        await pilot.pause()
    assert app.return_code == 0


async def test_help_lists_every_action_with_its_rebound_key(small_cluster: Cluster, console: ConsoleFactory) -> None:
    app = console([small_cluster], keys={"bump": "B"})
    async with app.run_test(size=(160, 60)) as pilot:
        await loaded(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        from gpuq.tui.screens.help import help_table

        table = help_table(app.settings.keys)
        ids = [str(c) for c in table.columns[1]._cells]
        assert ids == [a.id for a in ACTIONS]
        keys = dict(zip(ids, (str(c) for c in table.columns[0]._cells), strict=True))
        assert keys["bump"] == "B" and keys["queue"] == "1"
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is app.screen_stack[0]
        bound = {key: b.binding.action for key, b in app.screen.active_bindings.items()}
        assert bound.get("B") == "act('bump')" and "b" not in bound  # rebound, not added


async def test_until_a_view_has_rows_it_says_what_is_being_done_not_that_there_are_none(
    console: ConsoleFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large cluster takes seconds to read and compute: meanwhile the Queue view says "reading"
    and then "computing", never "no queued jobs" nor "0 jobs" (what an operator would take for an
    empty queue); once its rows are in, the arrows move the cursor (the table has the focus)."""
    import threading

    from gpuq.tui.panes.queue import QueuePane

    cluster, backend = flaky_cluster(SMALL)
    read_gate, compute_gate = threading.Event(), threading.Event()
    read = backend.snapshot

    def slow_read(*, ledger: bool = True) -> Any:
        read_gate.wait(30)
        return read(ledger=ledger)

    compute = QueuePane.compute

    def slow_compute(pane: QueuePane, ctx: Any, params: Any) -> Any:
        compute_gate.wait(30)
        return compute(pane, ctx, params)

    backend.snapshot = slow_read  # type: ignore[method-assign]
    monkeypatch.setattr(QueuePane, "compute", slow_compute)
    app = console([cluster])

    def screen() -> str:
        empty = app.query("#empty")
        status = str(app.query_one("#status", Static).render())
        return status + " | " + (str(empty.first(Static).render()) if empty else "")

    try:
        async with app.run_test(size=(100, 24)) as pilot:
            await wait_for(pilot, lambda: "reading lab" in screen())
            assert not app.query_one("#panes").display and "jobs" not in screen()
            read_gate.set()
            await wait_for(pilot, lambda: "computing the Queue view" in screen())
            assert not app.query_one("#panes").display and "jobs" not in screen()
            compute_gate.set()
            await loaded(pilot)
            await wait_for(pilot, lambda: queue_table(app).row_count > 0)
            assert not app.query("#empty") and app.query_one("#panes").display
            assert "7 jobs" in screen()
            cursor = queue_table(app).cursor
            await pilot.press("down")
            await pilot.pause()
            assert queue_table(app).cursor == cursor + 1
    finally:
        read_gate.set()
        compute_gate.set()


async def test_a_view_that_cannot_be_computed_says_so_in_its_place(
    console: ConsoleFactory, small_cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gpuq.tui.panes.queue import QueuePane

    def broken(pane: QueuePane, ctx: Any, params: Any) -> Any:
        raise ValueError("a bug in a view")

    monkeypatch.setattr(QueuePane, "compute", broken)
    app = console([small_cluster])
    async with app.run_test(size=(100, 24)) as pilot:
        def empty() -> str:
            found = app.query("#empty")
            return str(found.first(Static).render()) if found else ""

        await wait_for(pilot, lambda: "could not" in empty())
        assert "the Queue view could not be computed: ValueError: a bug in a view" in empty()
        assert any("a bug in a view" in str(n.message) for n in noted(app))


async def test_backend_down_at_start_explains_then_recovers(tmp_path: Path, clock: object,
                                                             console: ConsoleFactory) -> None:  # fmt: skip
    cluster, backend = flaky_cluster(SMALL, down=True)
    app = console([cluster])
    async with app.run_test(size=(100, 24)) as pilot:
        await wait_for(pilot, lambda: backend.reads >= 1 and app.refreshes[0].failures >= 1)
        await pilot.pause(0.1)
        empty = str(app.query_one("#empty", Static).render())
        assert "cannot read lab: cannot reach slurmctld of lab (connection refused)" in empty
        banner = app.query_one("#banner", Static)
        assert banner.display and "no data yet" in str(banner.render())
        # Backoff: the next attempt waits twice the interval; nothing is read before then.
        reads = backend.reads
        clock.now += 3  # type: ignore[attr-defined]
        await pilot.pause(0.4)
        assert backend.reads == reads
        backend.down = False
        clock.now += 2  # type: ignore[attr-defined]
        await wait_for(pilot, lambda: queue_table(app).row_count > 0)
        assert not app.query("#empty") and not banner.display


async def test_a_failed_refresh_keeps_the_data_marked_stale(clock: object, console: ConsoleFactory) -> None:
    cluster, backend = flaky_cluster(SMALL)
    app = console([cluster])
    async with app.run_test(size=(100, 24)) as pilot:
        await loaded(pilot)
        rows = queue_table(app).row_count
        backend.down = True
        clock.now += 2.5  # type: ignore[attr-defined]
        await wait_for(pilot, lambda: app.refreshes[0].stale)
        await pilot.pause(0.3)
        banner = str(app.query_one("#banner", Static).render())
        assert "lab: stale since 2026-11-19T19:00:02Z: cannot reach slurmctld" in banner
        assert "retrying in" in banner
        assert queue_table(app).row_count == rows  # the last good data stays
        backend.down = False
        clock.now += 10  # type: ignore[attr-defined]
        await wait_for(pilot, lambda: not app.refreshes[0].stale)
        await pilot.pause(0.3)
        assert not app.query_one("#banner", Static).display


async def test_clusters_switch_and_combine(console: ConsoleFactory) -> None:
    a, _ = flaky_cluster(SMALL, "alpha")
    b, _ = flaky_cluster(SMALL, "beta")
    app = console([a, b])
    async with app.run_test(size=(200, 50)) as pilot:
        await loaded(pilot)
        table = queue_table(app)
        one = table.row_count
        assert "[alpha] beta all" in status(app)
        await pilot.press("right_square_bracket")
        await wait_for(pilot, lambda: app.snapshots[1] is not None and "[beta]" in status(app))
        await pilot.press("right_square_bracket")
        await wait_for(pilot, lambda: table.row_count == 2 * one)
        assert "[all]" in status(app)
        assert lines(table)[0].split()[:2] == ["CLUSTER", "ID"]
        assert {r.cluster for r in table.data.rows} == {"alpha", "beta"}
        # every job id appears once per cluster; the keys tell them apart
        assert len({table.data.key(r) for r in table.data.rows}) == 2 * one
        await pilot.press("colon", *"cluster beta", "enter")
        await wait_for(pilot, lambda: table.row_count == one)
        assert "[beta]" in status(app)


async def test_the_command_palette_offers_views_clusters_themes_and_actions(console: ConsoleFactory) -> None:
    from gpuq.tui.panes import pane_classes

    a, _ = flaky_cluster(SMALL, "alpha")
    b, _ = flaky_cluster(SMALL, "beta")
    app = console([a, b])
    async with app.run_test(size=(120, 30)) as pilot:
        await loaded(pilot)
        commands = {c.title: c for c in app.get_system_commands(app.screen)}
        assert {f"View: {cls.title}" for cls in pane_classes()} <= set(commands)
        assert {"Cluster: alpha", "Cluster: beta", "Cluster: all", "Theme: light", "Refresh now"} <= set(commands)
        assert {f"Action: {kind}" for kind in ("bump", "exempt", "preempt", "resume")} <= set(commands)
        commands["Theme: light"].callback()
        assert app.theme == "light"
        commands["Cluster: beta"].callback()
        await wait_for(pilot, lambda: "[beta]" in status(app))
        commands["View: GPUs"].callback()  # (a view never shown mounts first, then shows)
        await wait_for(pilot, lambda: app.view_id == "gpus")
    read_only = console([a], read_only=True)
    async with read_only.run_test(size=(120, 30)) as pilot:
        titles = {c.title for c in read_only.get_system_commands(read_only.screen)}
        assert "Refresh now" in titles and not any(t.startswith(("Action:", "Cluster:")) for t in titles)


async def test_a_tables_message_delivered_as_the_console_closes_is_dropped(
    small_cluster: Cluster, console: ConsoleFactory
) -> None:
    """A cursor move or an Enter still queued when the console closes (a view switched, then `q`)
    arrives after the panes are gone: it is dropped, never a traceback on the way out."""
    app = console([small_cluster])
    async with app.run_test(size=(120, 30)) as pilot:
        await loaded(pilot)
        table = queue_table(app)
        selected = app.selected
    assert not app.is_running and not app.query("#panes")
    app._moved(ViewTable.Moved(table, "0/101"))
    app._opened(ViewTable.Opened(table, "0/101"))
    assert app.selected == selected and app.view_id == "queue"


async def test_outside_text_is_shown_as_data(tmp_path: Path, console: ConsoleFactory) -> None:
    from gpuq.service import open_cluster

    names = ["[/]", "[bold red]x", "\x1b[2Jclear", "\u202eevil"]
    jobs = [make_job(str(100 + i), name=n, user=f"u{i}", state=JobState.PENDING, submit_time=CONSOLE_T0 - 60,
                     reason="[/]\x1b]0;title\x07") for i, n in enumerate(names)]  # fmt: skip
    snap = make_snapshot("[red]c", "snapshot", CONSOLE_T0, nodes=[Node("n1", 8, "H100", NodeState.IDLE)], jobs=jobs)
    path = tmp_path / "odd.json"
    path.write_bytes(encode_snapshot(snap))
    app = console([open_cluster(snapshot=str(path))])
    async with app.run_test(size=(200, 30)) as pilot:
        await loaded(pilot)
        text = "\n".join(lines(queue_table(app)))
        assert "[/]" in text and "[bold red]x" in text
        assert "\\x1b[2Jclear" in text and "\\u202eevil" in text and "\\x1b]0;title\\x07" in text
        assert "\x1b" not in text and "\u202e" not in text
        assert "[red]c" in status(app)


async def test_narrow_terminal_drops_columns_never_cuts_ids(small_cluster: Cluster, console: ConsoleFactory) -> None:
    app = console([small_cluster])
    async with app.run_test(size=(60, 24)) as pilot:
        await loaded(pilot)
        table = queue_table(app)
        ids = [r.item.job.id for r in table.data.rows]
        shown = lines(table)
        assert [line.split()[0] for line in shown[1 : 1 + len(ids)]] == ids
        assert all(len(line) <= 60 for line in shown)
        # (the table says which columns it hid once it is laid out: the status line follows)
        await wait_for(pilot, lambda: "hidden: a wider terminal shows them" in status(app))
        assert table.hidden
        await pilot.resize_terminal(200, 40)
        await pilot.pause(0.2)
        assert len(table.hidden) < len(lines(table)[0].split()) and "REASON" in lines(table)[0]


async def test_resizing_while_refreshing(demo_cluster: Cluster, clock: object, console: ConsoleFactory) -> None:
    app = console([demo_cluster])
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(pilot)
        for width, height in ((40, 10), (200, 60), (20, 5), (80, 24), (1, 1), (120, 30)):
            clock.now += 3  # type: ignore[attr-defined]
            app.action_refresh_now()
            await pilot.resize_terminal(width, height)
            await pilot.pause(0.05)
        await loaded(pilot)
        assert queue_table(app).row_count > 0
        assert app.is_running


def test_static_content_is_never_markup() -> None:
    from gpuq.tui.app import _plain

    assert isinstance(_plain("[bold]x"), Text) and _plain("[bold]x").plain == "[bold]x"


async def test_notifications_never_read_markup(small_cluster: Cluster, console: ConsoleFactory) -> None:
    app = console([small_cluster])
    async with app.run_test(size=(120, 30)) as pilot:
        await loaded(pilot)
        await pilot.press("colon", *"cluster [bold]x[/]", "enter")
        await pilot.pause(0.1)
        (note,) = [n for n in noted(app) if "no cluster" in n.message]
        assert "'[bold]x[/]'" in note.message and note.markup is False


async def test_the_cursor_is_repainted_where_it_is_when_scrolled(tmp_path: Path, console: ConsoleFactory) -> None:
    from gpuq.service import open_cluster

    jobs = [make_job(str(1000 + i), state=JobState.PENDING, submit_time=CONSOLE_T0 - i) for i in range(300)]
    snap = make_snapshot("many", "snapshot", CONSOLE_T0, nodes=[Node("n1", 8, "H100", NodeState.IDLE)], jobs=jobs)
    path = tmp_path / "many.json"
    path.write_bytes(encode_snapshot(snap))
    app = console([open_cluster(snapshot=str(path))])
    async with app.run_test(size=(100, 24)) as pilot:
        await loaded(pilot)
        table = queue_table(app)
        await pilot.press("pagedown", "pagedown", "pagedown", "down", "down", "up")
        await pilot.pause(0.1)
        assert table.scroll_y > 0

        def screen_rows() -> list[tuple[str, object]]:
            strips = app.screen._compositor.render_strips()
            top = table.region.y + 1  # under the header
            return [(strips[y].text.split()[0], next(iter(strips[y])).style.bgcolor)  # type: ignore[union-attr]
                    for y in range(top, table.region.bottom)]  # fmt: skip

        rows = screen_rows()
        first = int(table.scroll_y)
        shown = table.data.rows[first : first + len(rows)]
        assert [r[0] for r in rows] == [table.data.key(r).split("/")[1] for r in shown]
        highlighted = [i for i, (_, bg) in enumerate(rows) if bg != rows[0 if table.cursor - first else 1][1]]
        assert highlighted == [table.cursor - first]


def test_a_snapshot_files_label_needs_no_read(tmp_path: Path) -> None:
    from gpuq.service import open_cluster

    cluster = open_cluster(snapshot=str(SMALL))
    assert cluster.label == "small.json" and cluster.backend._snapshot is None  # type: ignore[attr-defined]
    cluster.refresh()
    assert cluster.label == "lab"


async def test_views_mount_on_first_use_and_the_latest_asked_for_is_shown(
    small_cluster: Cluster, console: ConsoleFactory
) -> None:
    """Only the first view's pane is mounted at start (the others would hold up its first frame);
    a view shown for the first time is mounted, then shown and computed for; keys pressed while
    panes mount show the last view asked for, with its table focused."""
    from gpuq.tui.panes.base import Pane

    app = console([small_cluster])
    async with app.run_test(size=(160, 40)) as pilot:
        await loaded(pilot)
        assert [p.id for p in app.query(Pane)] == ["pane-queue"]
        await pilot.press("2", "3")  # GPUs, then SLA, before either has mounted
        await wait_for(pilot, lambda: app.view_id == "sla" and not app._mounting)
        assert {p.id for p in app.query(Pane)} == {"pane-queue", "pane-gpus", "pane-sla"}
        assert [p.id for p in app.query(Pane) if p.display] == ["pane-sla"]
        assert app.focused is not None and app.focused.id == "sla-table"
        await wait_for(pilot, lambda: "SLA" in status(app) and "rows" in status(app))
        await pilot.press("1")  # mounted already: shown at once
        assert app.view_id == "queue" and [p.id for p in app.query(Pane) if p.display] == ["pane-queue"]


def test_the_hidden_columns_note_counts_in_words() -> None:
    from gpuq.tui.statusline import hidden_columns

    assert hidden_columns([]) == ""
    assert hidden_columns(["NAME"]) == " · 1 column hidden: a wider terminal shows them"
    assert hidden_columns(["NAME", "USER"]) == " · 2 columns hidden: a wider terminal shows them"


async def test_a_very_long_id_is_cut_visibly_and_the_other_columns_stay(tmp_path: Path,
                                                                        console: ConsoleFactory) -> None:  # fmt: skip
    """A 500-character id (the model allows 512) hid every other column: its column is now at
    most LONGEST_WHOLE_ID wide and the id ends in "…" there (the Job view shows it whole)."""
    import dataclasses

    import msgspec

    from gpuq.model.codec import read_snapshot_file, write_snapshot
    from gpuq.service import open_cluster
    from gpuq.tui.widgets.fitting import LONGEST_WHOLE_ID

    snapshot = read_snapshot_file(SMALL)
    long_id = "9" * 500
    jobs = (msgspec.structs.replace(snapshot.jobs[0], id=long_id), *snapshot.jobs[1:])
    path = tmp_path / "long-id.json"
    with path.open("wb") as stream:
        write_snapshot(dataclasses.replace(snapshot, jobs=jobs), stream)
    app = console([open_cluster(snapshot=str(path))])
    async with app.run_test(size=(120, 30)) as pilot:
        await loaded(pilot)
        table = queue_table(app)
        shown = lines(table)
        assert all(len(line) <= 120 for line in shown)
        assert "STATE" in shown[0] and "GPUS" in shown[0]
        (row,) = [line for line in shown if line.startswith("9" * 10)]
        assert row.startswith("9" * (LONGEST_WHOLE_ID - 1) + "…")
