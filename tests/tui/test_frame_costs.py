"""What a frame costs the UI thread: the bars repaint only when their text changed and lay the
screen out only when they stay one line; the table measures the rows on screen once per
position, not once per line it draws."""

from __future__ import annotations

from typing import Any

from textual.app import App, ComposeResult

from gpuq.tui.widgets import table as table_module
from gpuq.tui.widgets.bar import Bar
from gpuq.tui.widgets.table import TableData, ViewTable
from gpuq.views.columns import Column, Kind, TableSpec
from tests.tui.backends import flaky_cluster
from tests.tui.conftest import SMALL, ConsoleFactory, loaded, wait_for

SPEC = TableSpec("test", (Column("ID", Kind.ID), Column("NAME", Kind.TEXT, rank=1)))


class _Updates:
    """Bar.update's calls: (text, layout)."""

    def __init__(self, bar: Bar) -> None:
        self.calls: list[tuple[str, bool]] = []
        update = bar.update

        def counted(content: Any = "", *, layout: bool = True) -> None:
            self.calls.append((str(content), layout))
            update(content, layout=layout)

        bar.update = counted  # type: ignore[method-assign]


async def test_the_status_bar_repaints_only_what_changed_and_lays_out_only_when_it_wraps(
    console: ConsoleFactory,
) -> None:
    cluster, _ = flaky_cluster(SMALL)
    app = console([cluster])
    async with app.run_test(size=(200, 24)) as pilot:
        await loaded(pilot)
        await pilot.pause()
        status = app.query_one("#status", Bar)
        updates = _Updates(status)
        app._paint_status()
        app._paint_status()
        assert updates.calls == []  # the same line: nothing to draw, no layout
        app.filter_text = "x"
        app._paint_status()
        assert len(updates.calls) == 1 and updates.calls[0][1] is False  # still one line: no layout
        assert "filter /x" in updates.calls[0][0] and status.size.height == 1
        app.filter_text = "a-long-filter-" * 14  # the line no longer fits in 200 columns
        app._paint_status()
        await pilot.pause()
        assert updates.calls[-1][1] is True and status.size.height == 2
        app.filter_text = ""
        app._paint_status()
        await pilot.pause()
        assert updates.calls[-1][1] is True and status.size.height == 1  # and back


class _TableApp(App[None]):
    def __init__(self, names: list[str]) -> None:
        super().__init__()
        self.names = names

    def compose(self) -> ComposeResult:
        yield ViewTable(SPEC, id="t")

    def on_mount(self) -> None:
        rows = list(enumerate(self.names))
        data = TableData(SPEC, rows, lambda r: (str(r[0]), r[1]), lambda r: str(r[0]))
        self.query_one(ViewTable).set_data(data)


async def test_a_frame_measures_each_row_on_screen_once(monkeypatch: Any) -> None:
    measured: list[str] = []
    real = table_module.cell_width

    def counted(text: str) -> int:
        measured.append(text)
        return real(text)

    names = [f"job-{i}" for i in range(200)]
    names[150] = "a-much-longer-name-than-the-others"
    app = _TableApp(names)
    async with app.run_test(size=(60, 20)) as pilot:
        await pilot.pause()
        table = app.query_one(ViewTable)
        width_before = dict(table._shown)[SPEC.columns[1]]
        monkeypatch.setattr(table_module, "cell_width", counted)
        cells = (table.size.height - 1) * len(SPEC.columns)

        def frame() -> int:
            del measured[:]
            for y in range(table.size.height):
                table.render_line(y)
            return len(measured)

        # each cell is measured as it is drawn, and the rows on screen once more when they came
        # into view; it was every cell once per line drawn as well: 19 times here
        assert frame() <= 2 * cells and frame() <= 2 * cells
        # a row scrolled into view that needs a wider column still widens it
        table.scroll_to(y=140, animate=False, immediate=True)
        await pilot.pause()
        assert frame() <= 2 * cells
        assert dict(table._shown)[SPEC.columns[1]] == len(names[150]) > width_before
        # scrolled by one row: the row that came into view is the only one measured and drawn
        frame()
        table.scroll_to(y=141, animate=False, immediate=True)  # (drawn here, before the app does)
        assert int(table.scroll_y) == 141 and frame() <= 2 * len(SPEC.columns)


def _count_row_strips(table: ViewTable, monkeypatch: Any) -> list[int]:
    """The rows whose lines `table` builds from now on, in order."""
    built: list[int] = []
    real = table._row_strip

    def counted(index: int, *args: Any) -> Any:
        built.append(index)
        return real(index, *args)

    monkeypatch.setattr(table, "_row_strip", counted)
    return built


async def test_scrolling_by_a_row_draws_one_new_line_and_hands_back_the_others(monkeypatch: Any) -> None:
    """Each line drawn is kept per row (and width, selection, cursor, focus): scrolling by one row
    builds the one row that came into view, and Textual gets the same strips for the rest (whose
    crops and filters it keeps on them). A change of selection or cursor draws those rows again."""
    app = _TableApp([f"job-{i}" for i in range(200)])
    async with app.run_test(size=(60, 20)) as pilot:
        await pilot.pause()
        table = app.query_one(ViewTable)
        built = _count_row_strips(table, monkeypatch)
        page = table.size.height - 1

        def frame() -> list[Any]:
            return [table.render_line(y) for y in range(1, table.size.height)]

        first = frame()
        assert built == []  # (drawn once already, when the app painted)
        table.scroll_to(y=1, animate=False, immediate=True)
        await pilot.pause()
        built.clear()
        second = frame()
        assert built == [] or built == [page]  # at most the row that came into view
        assert second[:-1] == first[1:] and all(a is b for a, b in zip(second[:-1], first[1:], strict=True))
        table.selected.add("5")
        built.clear()
        frame()
        assert built == [5]  # its key is now selected: drawn again, the others kept
        built.clear()
        table.action_cursor(3)  # from row 0, above the screen now, to row 3
        await pilot.pause()
        frame()
        assert set(built) == {3}


async def test_new_data_that_reads_as_before_draws_only_the_rows_that_changed(monkeypatch: Any) -> None:
    """A refresh hands the table new row objects, most of them showing what they showed before (1%
    of a queue changes): the lines are kept by what they show, so only a changed row is drawn
    again, and Textual gets the same strips for the others. Another width draws them all again."""
    names = [f"job-{i}" for i in range(200)]
    app = _TableApp(names)
    async with app.run_test(size=(60, 20)) as pilot:
        await pilot.pause()
        table = app.query_one(ViewTable)
        built = _count_row_strips(table, monkeypatch)

        def frame() -> list[Any]:
            return [table.render_line(y) for y in range(1, table.size.height)]

        def new_data(changed: dict[int, str]) -> None:
            rows = [(i, changed.get(i, name)) for i, name in enumerate(names)]  # (new tuples)
            table.set_data(TableData(SPEC, rows, lambda r: (str(r[0]), r[1]), lambda r: str(r[0])))

        before = frame()
        new_data({4: "bob-4"})  # (as wide as before: the columns stay as they are)
        built.clear()
        after = frame()
        assert built == [4]
        assert [a is b for a, b in zip(before, after, strict=True)].count(False) == 1
        assert "bob-4" in after[4].text
        built.clear()
        await pilot.resize_terminal(70, 20)  # (the width changes: every line is drawn again)
        await pilot.pause()
        frame()
        assert set(built) == set(range(table.size.height - 1))


async def test_gpuq_tui_settles_the_collector_once_and_tests_do_not(monkeypatch: Any, clock: Any) -> None:
    """As it mounts and again once the first frame is out, the console `gpuq tui` runs freezes its
    start-up objects and raises the young generation's threshold (never lowers it); a console that
    does not own its process (every test's) leaves the collector alone."""
    import gc

    from gpuq.tui.app import ConsoleSettings, make_app
    from gpuq.tui.collector import YOUNG_THRESHOLD
    from gpuq.tui.options import ConsoleSetup

    frozen: list[int] = []
    thresholds: list[tuple[int, ...]] = []
    monkeypatch.setattr(gc, "freeze", lambda: frozen.append(1))
    monkeypatch.setattr(gc, "set_threshold", lambda *t: thresholds.append(t))
    monkeypatch.setattr(gc, "get_threshold", lambda: (700, 10, 10))
    for owns, expected in ((True, [1, 1]), (False, [])):
        frozen.clear()
        thresholds.clear()
        cluster, _ = flaky_cluster(SMALL)
        app = make_app(ConsoleSetup([cluster], ConsoleSettings(), clock), owns_process=owns)
        async with app.run_test(size=(80, 24)) as pilot:
            await loaded(pilot)
            await pilot.pause()
        assert frozen == expected
        assert thresholds == ([(YOUNG_THRESHOLD, 10, 10)] * 2 if owns else [])
    monkeypatch.setattr(gc, "get_threshold", lambda: (10 * YOUNG_THRESHOLD, 10, 10))
    from gpuq.tui.collector import settle_collector

    thresholds.clear()
    settle_collector()
    assert thresholds == [(10 * YOUNG_THRESHOLD, 10, 10)]  # (a higher one set elsewhere stays)


async def test_a_kept_line_is_drawn_again_in_the_new_theme(console: ConsoleFactory) -> None:
    """The kept lines go with the styles they were drawn in: after a theme change the rows are
    drawn in the new theme's colours (Textual tells the widget through `notify_style_update`)."""
    cluster, _ = flaky_cluster(SMALL)
    app = console([cluster])
    async with app.run_test(size=(120, 30)) as pilot:
        await loaded(pilot)
        table = app.query_one("#queue-table", ViewTable)

        def colours() -> set[Any]:
            return {s.style.bgcolor for s in table.render_line(2) if s.style is not None}

        dark = colours()
        assert table.render_line(2) is table.render_line(2)  # (kept)
        app.theme = "light"
        await pilot.pause()
        light = colours()
        assert light and light != dark
        app.theme = "dark"
        await pilot.pause()
        assert colours() == dark


async def test_the_scroll_bar_is_drawn_again_exactly_when_its_thumb_moves(monkeypatch: Any) -> None:
    """Over 3,000 rows the thumb moves an eighth of a cell every ~20 rows: the bar is drawn again
    then and only then, and the screen never shows it where it was (checked against the bar
    drawn afresh after every step: by a row, by a page, to either end)."""
    from textual.scrollbar import ScrollBar

    app = _TableApp([f"job-{i}" for i in range(3_000)])
    async with app.run_test(size=(40, 20)) as pilot:
        await pilot.pause()
        table = app.query_one(ViewTable)
        table.focus()
        bar = table.vertical_scrollbar
        drawn: list[float] = []
        real = ScrollBar.render

        def counted(self: ScrollBar) -> Any:
            if self is bar:
                drawn.append(self.position)
            return real(self)

        monkeypatch.setattr(ScrollBar, "render", counted)
        steps = [*["down"] * 80, "pagedown", "pagedown", "end", *["up"] * 25, "pageup", "home"]
        for key in steps:
            await pilot.press(key)
            await pilot.pause()
            shown = app.export_screenshot()
            bar.refresh()  # what the bar looks like drawn now
            await pilot.pause()
            assert app.export_screenshot() == shown, f"a stale scroll bar after {key!r}"
        assert int(table.scroll_y) == 0 and table.cursor == 0
        # drawn once per step above (the forced refresh) and only a few times more: when it moved
        assert len(steps) < len(drawn) < len(steps) + 15


def test_computes_keep_the_collector_off_and_the_last_one_collects_after_stepping_aside(
    monkeypatch: Any,
) -> None:
    """No automatic collection while any compute runs; the last one to end steps aside for input
    and then runs the collection that is due (the young one; the middle one when the young ones
    since the last have reached its threshold); a collector turned off elsewhere stays off."""
    import gc

    from gpuq.tui.collector import computing

    log: list[str] = []
    monkeypatch.setattr(gc, "collect", lambda generation=2: log.append(f"collect {generation}") or 0)
    counts = [(0, 3, 0)]
    monkeypatch.setattr(gc, "get_count", lambda: counts[0])
    monkeypatch.setattr(gc, "get_threshold", lambda: (20_000, 10, 10))
    was_on = gc.isenabled()
    try:
        gc.enable()
        with computing(lambda: log.append("pause A")):
            assert not gc.isenabled()
            with computing(lambda: log.append("pause B")):
                assert not gc.isenabled()
            assert not gc.isenabled() and log == []  # A still computes: B leaves it all to A
        assert gc.isenabled() and log == ["pause A", "collect 0"]

        log.clear()
        counts[0] = (0, 10, 0)  # (ten young collections since the last of the middle generation)
        with computing(lambda: log.append("pause")):
            assert not gc.isenabled()
        assert gc.isenabled() and log == ["pause", "collect 1"]
        counts[0] = (0, 3, 0)

        log.clear()
        try:
            with computing(lambda: log.append("pause")):
                raise RuntimeError("the compute failed")
        except RuntimeError:
            pass
        assert gc.isenabled() and log == ["pause", "collect 0"]  # (on again after a failure)

        log.clear()
        gc.disable()
        with computing(lambda: log.append("pause")):
            assert not gc.isenabled()
        assert not gc.isenabled() and log == []  # someone else's choice: left alone
    finally:
        monkeypatch.undo()
        (gc.enable if was_on else gc.disable)()


def test_the_previous_rows_are_freed_from_their_box() -> None:
    """`_free` takes the last reference to the old rows' tuple out of its box and drops the rows
    a slice at a time, stepping aside for input between slices."""
    import weakref

    from gpuq.tui.panes.queue import _free

    class Row:
        pass

    rows = tuple(Row() for _ in range(5_000))
    probe = weakref.ref(rows[-1])
    box = [rows]
    del rows
    pauses: list[int] = []
    _free(box, lambda: pauses.append(1))
    assert box == [] and probe() is None and len(pauses) == 3


def test_a_tuple_of_untracked_entries_is_untracked_in_steps_and_still_freed() -> None:
    """`untrack` takes a tuple whose entries the collector never tracks out of its lists, checking
    the entries a step at a time with a pause between; a tracked entry anywhere (here the very
    last), a list, or a tuple already untracked is left as it is. Reference counting still frees
    an untracked tuple and lets go of its entries."""
    import gc
    import sys

    import msgspec

    from gpuq.tui.collector import UNTRACK_STEP, untrack

    class Flat(msgspec.Struct, gc=False):
        n: int

    entry = Flat(1)
    before = sys.getrefcount(entry)
    count = 2 * UNTRACK_STEP + 5
    flat = tuple([entry] * count)
    assert gc.is_tracked(flat)
    pauses: list[int] = []
    assert untrack(flat, lambda: pauses.append(1)) and not gc.is_tracked(flat)
    assert len(pauses) == 3
    assert untrack(flat) and not gc.is_tracked(flat)  # (again: nothing to do)
    del flat
    assert sys.getrefcount(entry) == before

    mixed = tuple([entry] * count + [[]])  # one tracked entry, in the last step
    assert not untrack(mixed) and gc.is_tracked(mixed)
    listed = [entry] * 10
    assert not untrack(listed) and gc.is_tracked(listed)


async def test_a_refresh_leaves_the_jobs_and_the_rows_to_no_collection(console: ConsoleFactory) -> None:
    """The largest containers of a refresh, the new snapshot's jobs and the Queue view's rows, are
    tuples no collection walks once the read and the compute have made them (the collector is off
    here, so nothing but the console can have untracked them)."""
    import dataclasses
    import gc

    import msgspec

    cluster, backend = flaky_cluster(SMALL)
    app = console([cluster])
    was_on = gc.isenabled()
    try:
        async with app.run_test(size=(120, 30)) as pilot:
            await loaded(pilot)
            gc.disable()
            jobs = tuple(msgspec.structs.replace(j, priority=j.priority + 1) for j in backend.snap.jobs)
            backend.snap = dataclasses.replace(backend.snap, jobs=jobs)
            assert gc.is_tracked(jobs)
            table = app.query_one("#queue-table", ViewTable)
            old, token = table.data.rows, app._token
            app.action_refresh_now()
            await wait_for(pilot, lambda: app._token > token and not app._computing and table.data.rows is not old)
            assert app.snapshots[0] is not None and app.snapshots[0].jobs is jobs
            assert not gc.is_tracked(jobs)
            assert isinstance(table.data.rows, tuple) and not gc.is_tracked(table.data.rows)
    finally:
        (gc.enable if was_on else gc.disable)()


_MIXED = TableSpec("mixed", (
    Column("ID", Kind.ID), Column("GPUS", Kind.NUMBER), Column("STATE", Kind.PLAIN, rank=1),
    Column("NODES", Kind.LIST, rank=2), Column("NAME", Kind.TEXT, rank=3),
))  # fmt: skip


class _MixedApp(App[None]):
    # (every style the lines combine differs, so that a wrong blend or padding shows)
    CSS = """
    ViewTable > .viewtable--cursor { background: #204080; color: #ffffff; text-style: bold; }
    ViewTable > .viewtable--selected { background: #403000; }
    ViewTable > .viewtable--running { color: #00c000; }
    ViewTable > .viewtable--pending { color: #c0c000; text-style: italic; }
    ViewTable > .viewtable--muted { color: #808080; }
    ViewTable > .viewtable--new { background: #600060; }
    """
    ROWS = [
        ("1", "8", "running", "gpu-01 gpu-02 gpu-03 gpu-04", "train-llm"),
        ("22", "16", "pending", "", "名前が長いジョブの名前が長いジョブ"),
        ("333", "1", "running", "gpu-07", "a\x1bb line\nbreak and a long tail past the column"),
        ("4444", "2", "suspended", "gpu-09 gpu-10", "e\u0301\u0301 combining"),
    ]

    def compose(self) -> ComposeResult:
        yield ViewTable(_MIXED, id="t")

    def on_mount(self) -> None:
        tones = {"running": "running", "pending": "pending"}
        data = TableData(_MIXED, self.ROWS, lambda r: r, lambda r: r[0],
                         lambda r: (None, "muted", tones.get(r[2]), None, "new" if r[0] == "1" else None))  # fmt: skip
        self.query_one(ViewTable).set_data(data)


async def test_a_row_line_is_what_rich_would_simplify_it_to() -> None:
    """The one-pass line of `_row_strip` (cells fitted, same-style neighbours joined, padded in
    the row's style) is segment for segment what fitting each cell, `Segment.simplify` and
    `Strip.adjust_cell_length` make: wide, combining and escaped characters, cut text and lists,
    tones, a selected row and the cursor's row with and without focus, at several widths."""
    from rich.segment import Segment
    from textual.strip import Strip

    from gpuq.tui.widgets.fitting import GAP, fit_cell

    def reference(table: ViewTable, index: int, width: int, selected: bool, under: bool) -> Strip:
        cells, tones = table._row(index)
        base = table.rich_style
        row_style = base + table._style("selected") if selected else base
        if under:
            row_style = row_style + table._style("cursor" if table.has_focus else "selected")
        segments: list[Segment] = []
        names = table.data.spec.names
        for n, (column, w) in enumerate(table._shown):
            i = names.index(column.name)
            style = row_style + table._style(tones[i]) if tones[i] else row_style
            if under and table.has_focus:
                style = style + table._style("cursor")
            if n:
                segments.append(Segment(" " * GAP, row_style))
            segments.append(Segment(fit_cell(cells[i], w, column), style))
        return Strip(Segment.simplify(segments)).adjust_cell_length(width, row_style)

    app = _MixedApp()
    compared = 0
    for size in ((120, 12), (60, 12), (44, 12), (30, 12)):
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            table = app.query_one(ViewTable)
            for focus in (True, False):
                if focus:
                    table.focus()
                else:
                    app.set_focus(None)
                await pilot.pause()
                table._ensure_layout()
                width = table.scrollable_content_region.width
                for index in range(len(_MixedApp.ROWS)):
                    for selected in (False, True):
                        for under in (False, True):
                            line = table._row_strip(index, width, table.rich_style, selected, under)
                            expected = reference(table, index, width, selected, under)
                            assert list(line) == list(expected), (size, focus, index, selected, under)
                            assert line.cell_length == expected.cell_length == width
                            compared += 1
        app = _MixedApp()
    assert compared == 4 * 2 * 4 * 4


class _LongMixedApp(_MixedApp):
    # (an ANSI colour, which the line filter turns into a true colour)
    CSS = _MixedApp.CSS + "ViewTable > .viewtable--muted { color: ansi_red; }"
    ROWS = [(str(1000 + i), str(i % 9), ("running", "pending", "suspended")[i % 3], f"gpu-{i:02d}", f"job {i} \x07")
            for i in range(80)]  # fmt: skip


async def test_a_table_without_a_box_hands_textual_the_lines_its_own_path_would_draw() -> None:
    """`ViewTable.render_lines` past Textual's styles cache (no border, padding, tint...) gives
    segment for segment the lines `Widget.render_lines` gives, whole or cropped, scrolled, with
    the cursor, a selection, with and without focus, in a dark and a light theme, with an ANSI
    colour the line filter turns into a true colour; with padding it is Textual's own path."""
    from textual.geometry import Region
    from textual.widget import Widget

    def both(table: ViewTable, crop: Region) -> tuple[list[Any], list[Any]]:
        table._frame = table._frame_state()
        try:
            ours = table.render_lines(crop)
            table._styles_cache.clear()
            theirs = Widget.render_lines(table, crop)
        finally:
            table._frame = None
        return [(list(s), s.cell_length) for s in ours], [(list(s), s.cell_length) for s in theirs]

    app = _LongMixedApp()
    compared = 0
    async with app.run_test(size=(70, 14)) as pilot:
        await pilot.pause()
        table = app.query_one(ViewTable)
        assert table._unboxed()
        w, h = table.region.size
        crops = (Region(0, 0, w, h), Region(3, 2, w - 9, 5), Region(0, h - 1, w, 1))
        for theme in ("textual-dark", "textual-light"):
            app.theme = theme
            for step in range(6):
                if step == 1:
                    table.focus()
                elif step == 2:
                    table.action_cursor(15)  # past the screen: scrolled
                elif step == 3:
                    table.selected = {"1016", "1017"}
                    table.refresh()
                elif step == 4:
                    app.set_focus(None)
                elif step == 5:
                    table.scroll_to(y=60, animate=False, immediate=True)
                await pilot.pause()
                for crop in crops:
                    ours, theirs = both(table, crop)
                    assert ours == theirs, (theme, step, crop)
                    compared += 1
        assert app.get_line_filters(), "no line filter was in play"
        table.styles.padding = (0, 1)
        await pilot.pause()
        assert not table._unboxed()
        ours, theirs = both(table, crops[0])
        assert ours == theirs
        assert all(s[0][0].text == " " for s in ours), "the padding is not drawn"
    assert compared == 2 * 6 * 3


async def test_a_scroll_by_a_row_hands_textual_the_same_line_objects_for_the_rows_still_shown() -> None:
    """What lets Textual's per-strip caches (filters, the compositor's cuts, crops) serve a
    scroll: the lines of rows that stay on screen are the very strips of the frame before."""
    from textual.geometry import Region

    app = _LongMixedApp()
    async with app.run_test(size=(70, 14)) as pilot:
        await pilot.pause()
        table = app.query_one(ViewTable)
        table.focus()
        table.action_cursor(30)
        await pilot.pause()
        crop = Region(0, 0, *table.region.size)
        before = table.render_lines(crop)
        table.scroll_to(y=table.scroll_y + 1, animate=False, immediate=True)
        await pilot.pause()
        after = table.render_lines(crop)
        # (line 0 is the header; the cursor's row is drawn anew when it moves, not when it scrolls)
        assert len(before) == len(after) > 4
        assert all(a is b for a, b in zip(after[1:-1], before[2:], strict=True))
        assert list(after[0]) == list(before[0])  # the header stays


async def test_gpuq_tui_reads_with_the_collector_off_and_turns_it_back_on(clock: Any) -> None:
    """A read of a large snapshot makes hundreds of thousands of objects: in `gpuq tui` no
    automatic collection runs meanwhile (a full one holds every thread), and the collector is on
    again once the reads and computes are done. A test's console leaves it be."""
    import gc

    from gpuq.tui.app import ConsoleSettings, make_app
    from gpuq.tui.options import ConsoleSetup

    was_enabled = gc.isenabled()  # (a command run in process before this test may have turned it off)
    gc.enable()
    try:
        for owns in (True, False):
            cluster, backend = flaky_cluster(SMALL)
            during: list[bool] = []
            read = backend.snapshot

            def snapshot(*, ledger: bool = True, read: Any = read, during: list[bool] = during) -> Any:
                during.append(gc.isenabled())
                return read(ledger=ledger)

            backend.snapshot = snapshot  # type: ignore[method-assign]
            app = make_app(ConsoleSetup([cluster], ConsoleSettings(), clock), owns_process=owns)
            async with app.run_test(size=(80, 24)) as pilot:
                await loaded(pilot)
                await wait_for(pilot, lambda app=app: not app._computing and not any(w.is_running for w in app.workers))
                assert during and all(enabled is not owns for enabled in during)
                assert gc.isenabled()
    finally:
        if not was_enabled:
            gc.disable()
