"""The SLA view: the numbers of `gpuq.views.sla` per class, its P95 trend growing refresh after
refresh, the histogram of the waits of the class under the cursor, and the combined view."""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path

from gpuq.model import JobClass, JobState, Node, NodeState
from gpuq.model.codec import encode_snapshot
from gpuq.service import Cluster, open_cluster
from gpuq.timefmt import format_duration
from gpuq.tui.app import GpuqConsole
from gpuq.tui.panes.sla import SlaDetail, SlaPane
from gpuq.tui.widgets.table import ViewTable
from gpuq.views.sla import sla_view
from gpuq.views.slacells import VERDICT_TEXT, class_waits, judged_p95, sparkline
from tests.clock import FixedClock
from tests.factories import make_job, make_snapshot
from tests.tui.backends import flaky_cluster
from tests.tui.conftest import CONSOLE_T0, SMALL, ConsoleFactory, loaded, wait_for

#: a histogram line: `5m–30m ███▒▒   158 (7 pending)`
BAR = re.compile(r"^(\S+) [█▒]* +(\d+)(?: \((\d+) pending\))?$")


def table_of(app: GpuqConsole) -> ViewTable:
    return app.query_one("#sla-table", ViewTable)


def lines(widget: object) -> list[str]:
    return [widget.render_line(y).text.rstrip() for y in range(widget.size.height)]  # type: ignore[attr-defined]


async def open_sla(pilot: object) -> GpuqConsole:
    app = await loaded(pilot)
    await pilot.press("3")  # type: ignore[attr-defined]
    await wait_for(pilot, lambda: app.view_id == "sla" and table_of(app).row_count > 0)
    return await loaded(pilot)


async def refreshed(pilot: object, app: GpuqConsole) -> None:
    token = app._token
    app.action_refresh_now()
    await wait_for(pilot, lambda: app._token > token and not app._computing)


async def test_key_3_shows_the_views_numbers_uncut_at_80x24(demo_cluster: Cluster, console: ConsoleFactory) -> None:
    app = console([demo_cluster])
    async with app.run_test(size=(80, 24)) as pilot:
        await open_sla(pilot)
        snap = app.snapshots[0]
        assert snap is not None
        view = sla_view(demo_cluster, snap)
        waits = class_waits(snap)
        table = table_of(app)
        shown = lines(table)
        columns = [n for n in table.data.spec.names if n not in table.hidden]
        assert "CLUSTER" not in columns
        assert {"CLASS", "PEND", "OLDEST", "P50", "P95", "P99", "TARGET", "SLA", "TREND"} <= set(columns)
        assert shown[0].split() == " ".join(columns).split()
        assert all(len(line) <= 80 for line in shown)
        d = format_duration
        for row, line in zip(view.rows, shown[1:], strict=False):
            s, w = row.stats, waits[row.name]
            expected = {
                "CLASS": row.name, "STARTED": str(s.count), "PEND": str(s.pending), "OLDEST": d(w.oldest_pending_s),
                "P50": d(s.p50_s), "P95": d(s.p95_s), "P99": d(s.p99_s), "MAX": d(s.max_s),
                "P95+PEND": d(s.p95_incl_pending_s), "TARGET": d(s.target_p95_s), "SLA": VERDICT_TEXT[row.verdict],
                "TREND": sparkline([judged_p95(s)], 1),
            }  # fmt: skip
            # every number whole, in its column's place
            assert line.split() == " ".join(expected[c] for c in columns).split(), row.name
        assert [table.data.key(r) for r in table.data.rows] == [f"0/{r.name}" for r in view.rows]
        breach = sum(1 for r in view.rows if r.verdict == "breach")
        assert f"{breach} in breach" in str(app.query_one("#status").render())


async def test_the_trend_grows_a_point_per_refresh(demo_cluster: Cluster, clock: FixedClock,
                                                   console: ConsoleFactory) -> None:  # fmt: skip
    app = console([demo_cluster])
    async with app.run_test(size=(80, 24)) as pilot:
        await open_sla(pilot)
        pane = app.query_one(SlaPane)
        key = (0, "(all)")
        assert len(pane.history.values(key)) == 1
        seen = []
        for n in range(2, 5):
            clock.now += 60  # the demo moves on: another cluster time, another point
            await refreshed(pilot, app)
            snap = app.snapshots[0]
            assert snap is not None
            values = pane.history.values(key)
            assert len(values) == n
            overall = sla_view(demo_cluster, snap).rows[0].stats
            assert values[-1] == judged_p95(overall)
            seen.append(snap.now)
        assert [t for t, _ in pane.history.points(key)][1:] == seen
        # the same snapshot shown again (the filter, a scope switch) adds no point
        app.recompute()
        await wait_for(pilot, lambda: not app._computing)
        assert len(pane.history.values(key)) == 4
        trend = table_of(app).data.cells(table_of(app).data.rows[0])[-1]
        assert len(trend) == 4 and set(trend) <= set("▁▂▃▄▅▆▇█ ")
        detail = lines(app.query_one(SlaDetail))
        assert "4 points since" in " ".join(detail)


async def test_histogram_of_the_class_under_the_cursor(demo_cluster: Cluster, console: ConsoleFactory) -> None:
    app = console([demo_cluster])
    async with app.run_test(size=(80, 24)) as pilot:
        await open_sla(pilot)
        snap = app.snapshots[0]
        assert snap is not None
        detail = app.query_one(SlaDetail)
        names = [r.name for r in sla_view(demo_cluster, snap).rows]

        def showing(name: str) -> bool:
            return detail.row is not None and detail.row.row.name == name

        for n, name in enumerate(names):
            if n:
                await pilot.press("down")
                await wait_for(pilot, partial(showing, name))
            assert detail.row is not None
            stats, bins = detail.row.row.stats, detail.row.bins
            assert sum(b.count for b in bins) == stats.count + stats.pending == class_waits(snap)[name].count
            drawn = [line.strip() for line in lines(detail)]
            assert f"waits of {name}: {stats.count + stats.pending} jobs" in " ".join(drawn)
            bars = [m.groups() for line in drawn if (m := BAR.match(line))]
            assert bars == [(b.label, str(b.count), str(b.pending) if b.pending else None) for b in bins]
            assert bool(bars) is bool(stats.count + stats.pending)
            assert all(len(line) <= 80 for line in lines(detail))


async def test_a_bin_mostly_started_with_a_few_pending_fits_its_line(tmp_path: Path, console: ConsoleFactory) -> None:
    # the largest bin: 300 started, 2 pending. Its started share alone rounds to the whole bar,
    # and its pending cell once went past it: the line wrapped at 80 columns.
    now = CONSOLE_T0
    started = [make_job(str(1000 + i), state=JobState.COMPLETED, submit_time=now - 3600, start_time=now - 3540,
                        end_time=now - 60) for i in range(300)]  # fmt: skip
    pending = [make_job(str(2000 + i), submit_time=now - 60) for i in range(2)]
    snap = make_snapshot("lab", "snapshot", now, classes=[JobClass("normal", 100, target_p95_s=600.0)],
                         nodes=[Node("n1", 8, "H100", NodeState.IDLE)], jobs=started + pending)  # fmt: skip
    path = tmp_path / "mostly-started.json"
    path.write_bytes(encode_snapshot(snap))
    app = console([open_cluster(snapshot=str(path))], first_view="sla")
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(pilot)
        detail = app.query_one(SlaDetail)
        await wait_for(pilot, lambda: detail.row is not None)
        drawn = lines(detail)
        bars = [m.groups() for line in drawn if (m := BAR.match(line.strip()))]
        assert [(count, waiting) for _, count, waiting in bars if count != "0"] == [("302", "2")]
        largest = next(line for line in drawn if line.endswith(" 302 (2 pending)"))
        assert largest.count("▒") == 1 and largest.count("█") > 1
        assert all(len(line) <= 80 for line in drawn)


async def test_combined_view_has_a_row_per_cluster_and_class(console: ConsoleFactory) -> None:
    a, _ = flaky_cluster(SMALL, "alpha")
    b, _ = flaky_cluster(SMALL, "beta")
    app = console([a, b], first_view="sla")
    async with app.run_test(size=(100, 24)) as pilot:
        await loaded(pilot)
        one = table_of(app).row_count
        await pilot.press("right_square_bracket", "right_square_bracket")
        table = table_of(app)
        await wait_for(pilot, lambda: table.row_count == 2 * one)
        shown = lines(table)
        assert shown[0].split()[:2] == ["CLASS", "CLUSTER"]
        pairs = [line.split()[:2] for line in shown[1 : 1 + 2 * one]]
        assert sorted(pairs) == sorted([name, c] for c in ("alpha", "beta") for name in
                                       [r.name for r in sla_view(a, a.snapshot()).rows])  # fmt: skip
        await pilot.press("slash", *"norm", "enter")
        await wait_for(pilot, lambda: table.row_count == 2)
        assert {r.row.name for r in table.data.rows} == {"normal"}
