"""The Job detail view: every field, why pending in plain words, the preemption history, this
job's audit entries (newest first, an outcome never logged marked), a job that left the queue,
outside text shown as data, scrolling at 80×24."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from textual.containers import VerticalScroll
from textual.geometry import Region
from textual.widgets import Static

from gpuq.audit import AuditLog, make_record
from gpuq.model import JobState, Node, NodeState, PreemptionEvent
from gpuq.model.codec import encode_snapshot
from gpuq.service import Cluster, open_cluster
from gpuq.tui.app import GpuqConsole
from gpuq.tui.widgets.table import ViewTable
from gpuq.views.job import job_view
from gpuq.views.jobcells import job_fields
from tests.factories import at, make_job, make_snapshot
from tests.tui.backends import flaky_cluster
from tests.tui.conftest import CONSOLE_T0, SMALL, ConsoleFactory, loaded, wait_for


def body_lines(app: GpuqConsole) -> list[str]:
    body = app.query_one("#job-body", Static)
    return [s.text.rstrip() for s in body.render_lines(Region(0, 0, body.size.width, body.size.height))]


def flat(text: str) -> str:
    """Wrapped lines back into one line of words (a sentence may wrap anywhere)."""
    return " ".join(text.split())


def empty_text(app: GpuqConsole) -> str:
    return str(app.query_one("#empty", Static).render())


async def open_job(pilot: object, app: GpuqConsole, job_id: str) -> None:
    """Put the queue's cursor on `job_id`, then press 5."""
    table = app.query_one("#queue-table", ViewTable)
    assert table.move_to(f"0/{job_id}")
    await pilot.press("5")  # type: ignore[attr-defined]
    await wait_for(pilot, lambda: app.view_id == "job" and not app._computing and f"job {job_id} " in app.pane.status())


async def test_5_needs_a_selection_then_shows_every_field(small_cluster: Cluster, console: ConsoleFactory) -> None:
    app = console([small_cluster], first_view="job")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.query("#empty") and "select a job" in empty_text(app))
        await pilot.press("1")
        await wait_for(pilot, lambda: app.view_id == "queue")
        await open_job(pilot, app, "101")
        text = "\n".join(body_lines(app))
        view = job_view(small_cluster, small_cluster.snapshot(), "101", with_audit=True)
        for field, value in job_fields(view):
            assert any(line.split()[:1] == field.split()[:1] and flat(value)[:30] in flat(line) for line in
                       text.splitlines()), field  # fmt: skip
        assert "Status" in text and "it is not pending: it is running" in text


async def test_colon_job_and_a_pending_jobs_reasons(small_cluster: Cluster, console: ConsoleFactory) -> None:
    app = console([small_cluster])
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(pilot)
        assert app.query_one("#queue-table", ViewTable).move_to("0/201")
        await pilot.press("colon", *"job", "enter")
        await wait_for(pilot, lambda: app.view_id == "job" and "job 201 " in app.pane.status())
        text = flat("\n".join(body_lines(app)))
        reasons = job_view(small_cluster, small_cluster.snapshot(), "201").explanation
        assert reasons and "Why pending" in text
        for sentence in reasons:
            assert flat(sentence) in text
        assert "the scheduler gives the reason: Resources" in text


async def test_preemption_history_names_the_preemptor_and_the_loss(small_cluster: Cluster,
                                                                   console: ConsoleFactory) -> None:  # fmt: skip
    app = console([small_cluster])
    async with app.run_test(size=(160, 40)) as pilot:
        await loaded(pilot)
        await open_job(pilot, app, "102")
        text = flat("\n".join(body_lines(app)))
        assert "Preemptions (2x total" in text
        newest = text.index("2026-11-29T12:00:00Z")
        older = text.index("2026-11-27T12:00:00Z")
        assert newest < older  # newest first
        assert "preempted by job 100, requeue; lost 1.00 GPU-hours on 2 GPUs" in text
        assert "preempted by job 99, requeue; lost 2.00 GPU-hours on 2 GPUs" in text


async def test_audit_entries_newest_first_outcome_unknown_marked(small_cluster: Cluster,
                                                                 console: ConsoleFactory) -> None:  # fmt: skip
    log = AuditLog()
    log.append(make_record(backend="snapshot", cluster="lab", action="bump", target="201", result="ok",
                           before={"priority": 100}, after={"priority": 500}, now=CONSOLE_T0 - 60))  # fmt: skip
    log.append(make_record(backend="snapshot", cluster="lab", action="preempt", target="201", result="pending",
                           phase="intent", now=CONSOLE_T0 - 30, reason="make room"))  # fmt: skip
    log.append(make_record(backend="snapshot", cluster="lab", action="bump", target="202", result="ok",
                           now=CONSOLE_T0 - 10))  # fmt: skip
    app = console([small_cluster])
    async with app.run_test(size=(160, 40)) as pilot:
        await loaded(pilot)
        await open_job(pilot, app, "201")
        lines = body_lines(app)
        text = flat("\n".join(lines))
        assert "1 outcome unknown, check the cluster" in text
        unknown = text.index("preempt: outcome unknown: check the cluster (reason: make room)")
        done = text.index("bump: ok; priority: 100 -> 500")
        assert unknown < done  # newest first
        assert text.split("Audit (")[1].count("bump:") == 1  # only this job's entries (202's bump is not)
        body = app.query_one("#pane-job")
        strips = app.query_one("#job-body", Static).render_lines(Region(0, 0, 160, len(lines)))
        row = next(s for s in strips if "outcome unknown" in s.text and "preempt" in s.text)
        breach = body.get_component_rich_style("job--unknown", partial=True)
        assert any(seg.style is not None and seg.style.color == breach.color for seg in row if "preempt" in seg.text)


async def test_a_job_that_left_the_queue_is_said_in_a_line(console: ConsoleFactory) -> None:
    cluster, backend = flaky_cluster(SMALL)
    app = console([cluster])
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(pilot)
        await open_job(pilot, app, "201")
        backend.snap = dataclasses.replace(backend.snap, jobs=tuple(j for j in backend.snap.jobs if j.id != "201"))
        app.action_refresh_now()
        await wait_for(pilot, lambda: "no longer" in "\n".join(body_lines(app)))
        assert body_lines(app)[0] == "job 201 is no longer in the queue of lab"
        assert app.is_running


async def test_outside_text_is_data_and_the_detail_scrolls(tmp_path: Path, console: ConsoleFactory) -> None:
    odd = "[/] [bold red]x \x1b[2J \u202eevil"
    job = make_job("7", name="[bold red]x", user="[/]", state=JobState.PENDING, submit_time=CONSOLE_T0 - 600,
                   gpus=16, reason="\x1b[2J", comment=odd,
                   preemption_times=[CONSOLE_T0 - 900 - i for i in range(12)])  # fmt: skip
    events = [PreemptionEvent(at(CONSOLE_T0 - 900 - i), "7", "[red]p", 1, 60.0, "requeue", odd) for i in range(12)]
    snap = make_snapshot("lab", "snapshot", CONSOLE_T0, nodes=[Node("n1", 8, "H100", NodeState.IDLE)], jobs=[job],
                         events=events)  # fmt: skip
    path = tmp_path / "odd.json"
    path.write_bytes(encode_snapshot(snap))
    app = console([open_cluster(snapshot=str(path))])
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(pilot)
        await open_job(pilot, app, "7")
        text = "\n".join(body_lines(app))
        assert "[bold red]x" in text and "[/]" in text and "\\x1b[2J" in text and "\\u202eevil" in text
        assert "preempted by job [red]p" in flat(text)
        assert "\x1b" not in text and "\u202e" not in text
        scroll = app.query_one("#job-scroll", VerticalScroll)
        assert scroll.max_scroll_y > 0 and scroll.has_focus  # longer than the screen, and the keys scroll it
        await pilot.press("end")
        await wait_for(pilot, lambda: scroll.scroll_y == scroll.max_scroll_y)
        assert scroll.scroll_y > 0


async def test_a_job_on_a_cluster_out_of_scope_says_so(console: ConsoleFactory) -> None:
    a, _ = flaky_cluster(SMALL, "alpha")
    b, _ = flaky_cluster(SMALL, "beta")
    app = console([a, b])
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(pilot)
        await open_job(pilot, app, "203")
        await pilot.press("right_square_bracket")  # beta alone: the selected job is alpha's
        await wait_for(pilot, lambda: "not shown now" in "\n".join(body_lines(app)))
        assert (
            flat("\n".join(body_lines(app))) == "job 203 is on a cluster not shown now: switch to it with ] or :cluster"
        )
        await pilot.press("right_square_bracket")  # all: alpha's job again
        await wait_for(pilot, lambda: app.scope == -1 and "job 203 on alpha" in app.pane.status())
