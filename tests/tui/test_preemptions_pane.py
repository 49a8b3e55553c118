"""The Preemptions view: totals per tenant and class, the jobs preempted with what is left of the
daily cap (near-cap jobs highlighted), the live event log (new events marked for two refreshes),
selection, the combined view, outside text shown as data."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from textual.widgets import Static

from gpuq.config import PolicySource
from gpuq.model import DAY_S, JobState, Node, NodeState, PreemptionEvent, Snapshot
from gpuq.model.codec import encode_snapshot
from gpuq.policy.config import Policy
from gpuq.service import Cluster, open_cluster
from gpuq.tui.app import GpuqConsole
from gpuq.tui.widgets.table import ViewTable
from gpuq.views.preemptions import ledger_view, preemption_events
from tests.factories import at, make_job, make_snapshot
from tests.tui.backends import FlakyBackend
from tests.tui.conftest import CONSOLE_T0, SMALL, ConsoleFactory, loaded, wait_for

H = 3600.0


def lines(table: ViewTable) -> list[str]:
    return [table.render_line(y).text.rstrip() for y in range(table.size.height)]


def jobs_table(app: GpuqConsole) -> ViewTable:
    return app.query_one("#pre-jobs", ViewTable)


def events_table(app: GpuqConsole) -> ViewTable:
    return app.query_one("#pre-events", ViewTable)


def totals(app: GpuqConsole) -> str:
    return str(app.query_one("#pre-totals", Static).render())


def tones_of(table: ViewTable, key: str) -> tuple[str | None, ...]:
    row = next(r for r in table.data.rows if table.data.key(r) == key)
    assert table.data.tones is not None
    return tuple(table.data.tones(row))


async def shown(pilot: object, app: GpuqConsole) -> None:
    await wait_for(pilot, lambda: app.view_id == "preemptions" and not app._computing and jobs_table(app).data.rows)


async def test_4_shows_the_ledger_the_view_computes(demo_cluster: Cluster, console: ConsoleFactory) -> None:
    app = console([demo_cluster])
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        await pilot.press("4")
        await shown(pilot, app)
        snap = app.snapshots[0]
        assert snap is not None
        view = ledger_view(snap)
        assert view.jobs and view.events  # the demo has preempted jobs after its warm-up
        table = jobs_table(app)
        assert [r.row.job.id for r in table.data.rows] == [r.job.id for r in view.jobs]
        assert lines(table)[0].split()[:3] == ["ID", "USER", "TENANT"]
        assert [line.split()[0] for line in lines(table)[1:4]] == [r.job.id for r in view.jobs[:3]]
        log = events_table(app)
        assert [r.event for r in log.data.rows] == preemption_events(snap)
        assert "daily cap 3" in totals(app)  # the demo's policy
        assert f"{len(view.jobs)} jobs · {len(view.events)} events" in app.pane.status()
        await pilot.press("1", "colon", *"preemptions", "enter")
        await wait_for(pilot, lambda: app.view_id == "preemptions")


def _capped_snapshot(now: float) -> Snapshot:
    jobs = [
        make_job("10", user="ann", tenant="nlp", state=JobState.RUNNING, start_time=now - H,
                 allocation={"n1": [0]}, preemption_times=[now - 2 * H, now - 3 * H]),  # cap 3: one away
        make_job("11", user="bo", tenant="nlp", state=JobState.PENDING, submit_time=now - 5 * H,
                 preemption_times=[now - H, now - 2 * H, now - 3 * H]),  # capped
        make_job("12", user="cy", tenant="cv", state=JobState.RUNNING, start_time=now - H, allocation={"n1": [1]},
                 preemption_times=[now - H, now - DAY_S - 60]),  # one in 24 h: two away
        make_job("13", user="di", tenant="cv", state=JobState.COMPLETED, start_time=now - 9 * H,
                 end_time=now - H, preemption_times=[now - 4 * H, now - 5 * H, now - 6 * H]),  # left the queue
    ]  # fmt: skip
    return make_snapshot("lab", "snapshot", now, nodes=[Node("n1", 8, "H100", NodeState.MIXED)], jobs=jobs)


async def test_jobs_at_or_near_the_daily_cap_are_highlighted(tmp_path: Path, console: ConsoleFactory) -> None:
    path, policy = tmp_path / "capped.json", tmp_path / "policy.toml"
    path.write_bytes(encode_snapshot(_capped_snapshot(CONSOLE_T0)))
    policy.write_text("[preemption]\nmax_preemptions_per_day = 3\n")
    app = console([open_cluster(snapshot=str(path), policy_file=str(policy))])
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        await pilot.press("4")
        await shown(pilot, app)
        table = jobs_table(app)
        header = lines(table)[0].split()
        left = {line.split()[0]: line.split()[header.index("CAP")] for line in lines(table)[1:5]}
        assert left == {"11": "0", "13": "-", "10": "1", "12": "2"}
        names = table.data.spec.names

        def marks(key: str) -> tuple[str | None, ...]:
            tones = dict(zip(names, tones_of(table, key), strict=True))
            return tones["ID"], tones["24H"], tones["CAP LEFT"]

        assert marks("0/11") == ("breach",) * 3  # the capped job
        assert marks("0/10") == ("risk",) * 3  # one away
        assert marks("0/12") == (None,) * 3
        assert set(tones_of(table, "0/13")) == {"muted"}
        assert "daily cap 3/24h: 1 queued jobs capped, 1 one away: 10" in totals(app)
        assert "tenants (24h/total): nlp 5/5 · cv 4/5" in totals(app)


async def test_new_events_are_marked_for_two_refreshes(console: ConsoleFactory) -> None:
    backend = FlakyBackend(SMALL)
    cluster = Cluster(backend, "flaky", PolicySource(Policy(), "test"))
    base = backend.snap

    def serve(at_s: float, *extra: PreemptionEvent) -> None:
        backend.snap = dataclasses.replace(base, taken_at=at(at_s),
                                           preemption_events=(*base.preemption_events, *extra))  # fmt: skip

    app = console([cluster])
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        await pilot.press("4")
        await shown(pilot, app)
        log = events_table(app)
        assert all(set(tones_of(log, log.data.key(r))) == {None} for r in log.data.rows)  # history, not news
        t0 = base.taken_at.timestamp()
        fresh = PreemptionEvent(at(t0 + 30), "103", "201", 2, 900.0, "requeue", "for 201")
        for step, marked in ((1, True), (2, True), (3, False)):
            serve(t0 + 60 * step, fresh)
            app.action_refresh_now()
            await wait_for(pilot, lambda s=step: app.snapshots[0].taken_at == at(t0 + 60 * s)  # type: ignore[union-attr]
                           and not app._computing and log.row_count == 3)  # fmt: skip
            await pilot.pause(0.1)
            key = log.data.key(log.data.rows[0])
            assert log.data.rows[0].event.victim == "103"  # newest first
            assert (tones_of(log, key)[:3] == ("new", "new", "new")) is marked, step
            assert ("(1 new)" in app.pane.status()) is marked
            assert all(set(tones_of(log, log.data.key(r))) == {None} for r in log.data.rows[1:])


async def test_the_cursor_selects_jobs_and_victims(console: ConsoleFactory) -> None:
    backend = FlakyBackend(SMALL)
    newest = PreemptionEvent(backend.snap.taken_at, "103", "201", 2, 900.0, "requeue", "")
    backend.snap = dataclasses.replace(backend.snap, preemption_events=(*backend.snap.preemption_events, newest))
    app = console([Cluster(backend, "flaky", PolicySource(Policy(), "test"))])
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        await pilot.press("4")
        await shown(pilot, app)
        assert app.selected is not None and app.selected.job_id == "102"  # the one job preempted
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.view_id == "job" and "job 102 " in app.pane.status())
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.view_id == "preemptions")
        await pilot.press("tab")
        assert events_table(app).has_focus
        assert app.selected is not None and app.selected.job_id == "102"
        await pilot.press("down", "up")  # the log's newest event: its victim
        assert app.selected is not None and app.selected.job_id == "103"
        await pilot.press("down")
        assert app.selected is not None and app.selected.job_id == "102"


async def test_combined_view_has_a_cluster_column_and_the_filter(console: ConsoleFactory) -> None:
    from tests.tui.backends import flaky_cluster

    a, _ = flaky_cluster(SMALL, "alpha")
    b, _ = flaky_cluster(SMALL, "beta")
    app = console([a, b])
    async with app.run_test(size=(160, 40)) as pilot:
        await loaded(pilot)
        await pilot.press("4", "right_square_bracket", "right_square_bracket")
        await wait_for(pilot, lambda: app.scope == -1 and not app._computing and jobs_table(app).row_count == 2)
        assert lines(jobs_table(app))[0].split()[:2] == ["CLUSTER", "ID"]
        assert {line.split()[0] for line in lines(jobs_table(app))[1:3]} == {"alpha", "beta"}
        assert lines(events_table(app))[0].split()[:2] == ["CLUSTER", "TIME"]
        assert events_table(app).row_count == 4
        await pilot.press("slash", *"beta", "enter")
        await wait_for(pilot, lambda: jobs_table(app).row_count == 1 and events_table(app).row_count == 2)
        assert app.pane.selection() is not None and app.pane.selection().index == 1  # type: ignore[union-attr]


async def test_outside_text_is_shown_as_data(tmp_path: Path, console: ConsoleFactory) -> None:
    odd = ["[/]", "[bold red]x", "\x1b[2Jclear", "\u202eevil"]
    jobs = [make_job(str(20 + i), user=n, tenant=n, state=JobState.PENDING, submit_time=CONSOLE_T0 - 9 * H,
                     preemption_times=[CONSOLE_T0 - H - i]) for i, n in enumerate(odd)]  # fmt: skip
    events = [PreemptionEvent(at(CONSOLE_T0 - H - i), str(20 + i), n, 1, 60.0, n, n) for i, n in enumerate(odd)]
    snap = make_snapshot("lab", "snapshot", CONSOLE_T0, nodes=[Node("n1", 8, "H100", NodeState.IDLE)], jobs=jobs,
                         events=events)  # fmt: skip
    path = tmp_path / "odd.json"
    path.write_bytes(encode_snapshot(snap))
    app = console([open_cluster(snapshot=str(path))])
    async with app.run_test(size=(200, 40)) as pilot:
        await loaded(pilot)
        await pilot.press("4")
        await shown(pilot, app)
        text = "\n".join([*lines(jobs_table(app)), *lines(events_table(app)), totals(app)])
        for shown_as in ("[/]", "[bold red]x", "\\x1b[2Jclear", "\\u202eevil"):
            assert text.count(shown_as) >= 4, shown_as  # user and tenant, by, mode, reason (and the totals)
        assert "\x1b" not in text and "\u202e" not in text
        assert len(lines(events_table(app))[1:5]) == 4  # one line per event: nothing broke a row
