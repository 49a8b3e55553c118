"""The console's actions on the demo cluster (they really change its saved state; the audit log is
the test's own, under the private XDG state dir): every kind confirmed, dry-run, cancelled before
and after it was prepared, refused, read-only, the job changed underneath, permission denied."""

from __future__ import annotations

import errno
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from textual.containers import VerticalScroll
from textual.widgets import Button, Input, Select

from gpuq.backends import demo as demo_module
from gpuq.model import Job, JobState, Snapshot
from gpuq.service import Cluster, Mode, PendingAction, open_cluster
from gpuq.timefmt import format_time
from gpuq.tui.app import GpuqConsole
from gpuq.tui.screens.action import ActionScreen
from gpuq.tui.widgets.preview import PreviewBody
from gpuq.tui.widgets.table import ViewTable
from tests.clock import FixedClock
from tests.tui.conftest import ConsoleFactory, loaded, noted, wait_for

Record = dict[str, Any]


def records(cluster: Cluster) -> list[Record]:
    return [e.record for e in cluster.audit.entries() if e.record is not None]


def notes(app: GpuqConsole) -> list[tuple[str, str, str]]:
    """(title, message, severity) of every notification so far."""
    return [(n.title, n.message, n.severity) for n in noted(app)]


def a_job(snapshot: Snapshot, state: JobState, also: Callable[[Job], bool] = lambda j: True) -> Job:
    return next(j for j in snapshot.jobs if j.state is state and j.exempt_until is None and also(j))


def plan_text(screen: ActionScreen) -> str:
    body = screen.query_one("#action-plan", PreviewBody)
    console = Console(width=100, color_system=None, file=__import__("io").StringIO())
    console.print(body.render())
    return " ".join(console.file.getvalue().split())  # type: ignore[attr-defined]


async def open_action(pilot: Any, job_id: str, key: str) -> ActionScreen:
    app: GpuqConsole = pilot.app
    table = app.query_one("#queue-table", ViewTable)
    await wait_for(pilot, lambda: table.row_count > 0)
    assert table.move_to(f"0/{job_id}")
    await wait_for(pilot, lambda: app.selected is not None and app.selected.job_id == job_id)
    await pilot.press(key)
    await wait_for(pilot, lambda: isinstance(app.screen, ActionScreen))
    screen = app.screen
    assert isinstance(screen, ActionScreen) and screen.job_id == job_id
    return screen


def fill(screen: ActionScreen, how: str | None = None, value: str | None = None, reason: str | None = None,
         mode: str | None = None) -> None:  # fmt: skip
    if how is not None:
        screen.query_one("#action-how", Select).value = how
    if value is not None:
        screen.query_one("#action-value", Input).value = value
    if reason is not None:
        screen.query_one("#action-reason", Input).value = reason
    if mode is not None:
        screen.query_one("#action-mode", Select).value = mode


async def prepare(pilot: Any, screen: ActionScreen) -> PendingAction:
    await pilot.pause()
    screen.query_one("#action-prepare", Button).press()
    await wait_for(pilot, lambda: screen.pending is not None and not screen.busy)
    assert screen.pending is not None
    return screen.pending


async def push(pilot: Any, button: str) -> None:
    """Press a button of the modal once it is shown (as enter on it does)."""
    screen = pilot.app.screen
    found = screen.query_one(button, Button)
    await wait_for(pilot, lambda: found.display and not found.disabled and found.region.height > 0)
    found.press()


async def closed(pilot: Any) -> None:
    """The modal is gone, and the read it starts is shown (so the test ends on a quiet console)."""
    app: GpuqConsole = pilot.app
    await wait_for(pilot, lambda: not isinstance(app.screen, ActionScreen))
    await wait_for(pilot, lambda: not any(s.running for s in app.refreshes) and not app._computing)


def ended(cluster: Cluster, pending: PendingAction) -> list[tuple[str, str]]:
    """(phase, result) of the records of one action."""
    return [(r["phase"], r["result"]) for r in records(cluster) if r.get("id") == pending.id]


def current(cluster: Cluster, job_id: str) -> Job:
    job = cluster.refresh().job(job_id)
    assert job is not None
    return job


# -- confirm -----------------------------------------------------------------------------------


async def test_bump_typed_at_80x24_shows_its_victims_then_confirmed_changes_the_job(
    demo_cluster: Cluster, console: ConsoleFactory
) -> None:
    snapshot = demo_cluster.refresh()
    job = a_job(snapshot, JobState.PENDING, lambda j: j.priority < 800)
    app = console([demo_cluster])
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(pilot)
        screen = await open_action(pilot, job.id, "b")
        # how (to a priority) -> value -> reason, as an operator types them
        await pilot.press("tab", *"900", "tab", *"[red]paged[/red]")
        reason = screen.query_one("#action-reason", Input)
        reason.value += " \x1b[2J\u202e"  # (pasted: no key types these)
        await pilot.press("enter")
        await wait_for(pilot, lambda: screen.pending is not None and not screen.busy)
        pending = screen.pending
        assert pending is not None and pending.args == {"to": 900}
        shown = plan_text(screen)
        assert f"about to bump job {job.id} to priority 900" in shown
        assert f"priority: {job.priority} -> 900 (would change)" in shown
        assert "reason: [red]paged[/red] \\x1b[2J\\u202e" in shown  # outside text, shown as data
        assert pending.preview is not None  # a pending job: what it would now preempt
        assert "with the new priority:" in shown
        for victim in pending.preview.plan.victims:
            assert victim.job_id in shown
        # at 80x24 the buttons stay on screen and the long preview scrolls under them
        confirm = screen.query_one("#action-confirm", Button)
        assert confirm.display and confirm.region.height == 1 and confirm.region.bottom <= 24
        scroll = screen.query_one("#action-scroll", VerticalScroll)
        assert scroll.max_scroll_y > 0
        await pilot.press("pagedown")
        await wait_for(pilot, lambda: scroll.scroll_y > 0)
        assert ended(demo_cluster, pending) == []  # prepared: nothing audited, nothing changed
        await pilot.click("#action-confirm")
        await closed(pilot)
        assert current(demo_cluster, job.id).priority == 900
        assert ended(demo_cluster, pending) == [("intent", "pending"), ("outcome", "ok")]
        assert records(demo_cluster)[-1]["reason"] == "[red]paged[/red] \x1b[2J\u202e"
        done = [n for n in notes(app) if n[0] == "bump: done"]
        assert done and f"priority: {job.priority} -> 900 (changed)" in done[0][1]


@pytest.mark.parametrize(("how", "value"), [("by", "-3"), ("urgent", None)])
async def test_bump_by_and_urgent(demo_cluster: Cluster, console: ConsoleFactory, how: str, value: str | None) -> None:
    job = a_job(demo_cluster.refresh(), JobState.RUNNING, lambda j: not j.urgent and j.priority > 10)
    app = console([demo_cluster])
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        screen = await open_action(pilot, job.id, "b")
        fill(screen, how=how, value=value)
        await pilot.pause()
        assert screen.query_one("#action-value", Input).disabled is (how == "urgent")
        pending = await prepare(pilot, screen)
        assert pending.preview is None  # a running job: nothing to preview
        await push(pilot, "#action-confirm")
        await closed(pilot)
        after = current(demo_cluster, job.id)
        if how == "by":
            assert after.priority == job.priority - 3
        else:
            assert after.urgent
        assert ended(demo_cluster, pending) == [("intent", "pending"), ("outcome", "ok")]


async def test_a_double_press_of_confirm_applies_once(demo_cluster: Cluster, console: ConsoleFactory) -> None:
    job = a_job(demo_cluster.refresh(), JobState.RUNNING)
    app = console([demo_cluster])
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        screen = await open_action(pilot, job.id, "b")
        fill(screen, how="by", value="7")
        pending = await prepare(pilot, screen)
        confirm = screen.query_one("#action-confirm", Button)
        confirm.press()
        confirm.press()  # before the first press is handled
        await closed(pilot)
        await pilot.pause(0.2)
        assert current(demo_cluster, job.id).priority == job.priority + 7
        assert ended(demo_cluster, pending) == [("intent", "pending"), ("outcome", "ok")]
        assert not [n for n in notes(app) if n[2] == "error"]


async def test_exempt_for_a_duration(demo_cluster: Cluster, console: ConsoleFactory) -> None:
    snapshot = demo_cluster.refresh()
    job = a_job(snapshot, JobState.RUNNING)
    app = console([demo_cluster])
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(pilot)
        screen = await open_action(pilot, job.id, "e")
        fill(screen, how="for", value="2h", reason="demo day")
        pending = await prepare(pilot, screen)
        assert "exempt_until: - ->" in plan_text(screen)
        await push(pilot, "#action-confirm")
        await closed(pilot)
        until = current(demo_cluster, job.id).exempt_until
        assert until is not None and abs(until.timestamp() - (snapshot.now + 7200)) < 5
        assert ended(demo_cluster, pending) == [("intent", "pending"), ("outcome", "ok")]
        assert records(demo_cluster)[-1]["args"] == {"for_s": 7200.0}


async def test_exempt_until_dry_run_changes_nothing_and_is_audited(
    demo_cluster: Cluster, console: ConsoleFactory
) -> None:
    snapshot = demo_cluster.refresh()
    job = a_job(snapshot, JobState.PENDING)
    app = console([demo_cluster])
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        screen = await open_action(pilot, job.id, "e")
        fill(screen, how="until", value=format_time(float(int(snapshot.now)) + 3600))
        pending = await prepare(pilot, screen)
        await push(pilot, "#action-dry-run")
        await closed(pilot)
        assert current(demo_cluster, job.id).exempt_until is None
        assert ended(demo_cluster, pending) == [("outcome", "dry_run")]
        dry = [n for n in notes(app) if n[0] == "exempt: dry run"]
        assert dry and "nothing was changed" in dry[0][1]


async def test_lifting_an_exemption_the_job_lacks_is_recorded_as_a_noop(
    demo_cluster: Cluster, console: ConsoleFactory
) -> None:
    job = a_job(demo_cluster.refresh(), JobState.RUNNING)
    app = console([demo_cluster])
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        screen = await open_action(pilot, job.id, "e")
        fill(screen, how="off")
        pending = await prepare(pilot, screen)
        assert pending.noop and str(screen.query_one("#action-confirm", Button).label) == "Record it"
        assert "nothing to change" in plan_text(screen)
        await push(pilot, "#action-confirm")
        await closed(pilot)
        assert ended(demo_cluster, pending) == [("outcome", "ok")]
        assert records(demo_cluster)[-1]["noop"] is True


async def test_preempt_with_suspend_then_resume(demo_cluster: Cluster, console: ConsoleFactory) -> None:
    job = a_job(demo_cluster.refresh(), JobState.RUNNING, lambda j: j.job_class != "urgent")
    app = console([demo_cluster])
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        screen = await open_action(pilot, job.id, "x")
        mode = screen.query_one("#action-mode", Select)
        assert mode.value == demo_cluster.policy.mode.value  # the policy's mode by default
        fill(screen, mode=Mode.SUSPEND.value)
        pending = await prepare(pilot, screen)
        assert "a suspended job keeps its GPUs" in plan_text(screen)
        await push(pilot, "#action-confirm")
        await closed(pilot)
        assert current(demo_cluster, job.id).state is JobState.SUSPENDED
        assert ended(demo_cluster, pending) == [("intent", "pending"), ("outcome", "ok")]
        # (the warning is posted from the worker's result: it may follow the modal's close)
        await wait_for(pilot, lambda: any(n[0] == "preempt: warning" for n in notes(app)))
        await wait_for(pilot, lambda: (s := app.snapshots[0]) is not None and s.job(job.id) is not None
                       and s.job(job.id).state is JobState.SUSPENDED)  # type: ignore[union-attr]  # fmt: skip
        screen = await open_action(pilot, job.id, "r")
        pending = await prepare(pilot, screen)
        await push(pilot, "#action-confirm")
        await closed(pilot)
        assert current(demo_cluster, job.id).state is JobState.RUNNING
        assert ended(demo_cluster, pending) == [("intent", "pending"), ("outcome", "ok")]


# -- refused, invalid, cancelled ---------------------------------------------------------------


@pytest.mark.parametrize(("key", "state", "said"), [
    ("x", JobState.PENDING, "is pending, not running: nothing to preempt"),
    ("r", JobState.RUNNING, "is running, not suspended: nothing to resume"),
])  # fmt: skip
async def test_a_refusal_is_an_error_notification(
    demo_cluster: Cluster, console: ConsoleFactory, key: str, state: JobState, said: str
) -> None:
    job = a_job(demo_cluster.refresh(), state)
    kind = {"x": "preempt", "r": "resume"}[key]
    app = console([demo_cluster])
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        screen = await open_action(pilot, job.id, key)
        screen.query_one("#action-prepare", Button).press()
        await closed(pilot)
        # (the notification is posted from the worker's result: it may follow the modal's close)
        await wait_for(pilot, lambda: (f"{kind} refused", f"job {job.id} {said}", "error") in notes(app))
        assert [(r["action"], r["result"], r["exit_code"]) for r in records(demo_cluster)] == [(kind, "error", 1)]
        assert current(demo_cluster, job.id).state is state


async def test_invalid_input_is_said_beside_the_form(demo_cluster: Cluster, console: ConsoleFactory) -> None:
    snapshot = demo_cluster.refresh()
    job = a_job(snapshot, JobState.RUNNING)
    app = console([demo_cluster])
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(pilot)
        screen = await open_action(pilot, job.id, "e")
        error = screen.query_one("#action-error")

        async def said(text: str) -> None:
            await wait_for(pilot, lambda: error.display and text in str(error.render()) and not screen.busy)

        fill(screen, how="for", value="2x")
        screen.query_one("#action-prepare", Button).press()
        await said("for: not a duration: '2x'")
        fill(screen, how="until", value="tomorrow")
        screen.query_one("#action-prepare", Button).press()
        await said("until: 'tomorrow' is not an RFC 3339 time")
        assert records(demo_cluster) == []  # the form's own checks: nothing reached the service
        past = format_time(float(int(snapshot.now)) - 60)
        fill(screen, how="until", value=past)
        screen.query_one("#action-prepare", Button).press()
        await said(f"--until {past} is not in the future")  # the service's check, which audits it
        assert isinstance(app.screen, ActionScreen) and screen.pending is None
        assert [r["result"] for r in records(demo_cluster)] == ["error"]
        await pilot.press("escape")
        await closed(pilot)


@pytest.mark.parametrize("how", ["button", "escape"])
async def test_cancel_after_preparing_is_audited_as_declined(
    demo_cluster: Cluster, console: ConsoleFactory, how: str
) -> None:
    job = a_job(demo_cluster.refresh(), JobState.RUNNING)
    app = console([demo_cluster])
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        screen = await open_action(pilot, job.id, "b")
        fill(screen, value="4242")
        pending = await prepare(pilot, screen)
        if how == "button":
            await push(pilot, "#action-cancel")
        else:
            await pilot.press("escape")
        await closed(pilot)
        assert ended(demo_cluster, pending) == [("outcome", "refused")]
        assert records(demo_cluster)[-1]["error"] == "declined in the console"
        assert current(demo_cluster, job.id).priority == job.priority
        assert any(n[0] == "bump declined" for n in notes(app))


async def test_escape_before_preparing_audits_nothing(demo_cluster: Cluster, console: ConsoleFactory) -> None:
    job = a_job(demo_cluster.refresh(), JobState.RUNNING)
    app = console([demo_cluster])
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        for key in ("b", "e", "x", "r"):
            await open_action(pilot, job.id, key)
            await pilot.press("escape")
            await closed(pilot)
        assert records(demo_cluster) == []
        assert not notes(app)


async def test_escape_while_preparing_declines_what_is_prepared_after(
    demo_cluster: Cluster, console: ConsoleFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = a_job(demo_cluster.refresh(), JobState.RUNNING)
    gate, entered = threading.Event(), threading.Event()
    real = demo_cluster.prepare_bump

    def slow(*args: Any, **kwargs: Any) -> PendingAction:
        entered.set()
        gate.wait(10)
        return real(*args, **kwargs)

    monkeypatch.setattr(demo_cluster, "prepare_bump", slow)
    app = console([demo_cluster])
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        screen = await open_action(pilot, job.id, "b")
        fill(screen, value="4242")
        screen.query_one("#action-prepare", Button).press()
        await wait_for(pilot, entered.is_set)
        await pilot.press("escape")  # the cluster is slow to answer: the operator gives up
        await closed(pilot)
        gate.set()
        await wait_for(pilot, lambda: len(records(demo_cluster)) == 1)
        assert [(r["result"], r["error"]) for r in records(demo_cluster)] == [("refused", "declined in the console")]
        assert current(demo_cluster, job.id).priority == job.priority


async def test_read_only_disables_every_action(demo_cluster: Cluster, console: ConsoleFactory) -> None:
    app = console([demo_cluster], read_only=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        for key, kind in (("b", "bump"), ("e", "exempt"), ("x", "preempt"), ("r", "resume")):
            await pilot.press(key)
            await pilot.pause()
            assert not isinstance(app.screen, ActionScreen)
            assert any(n[1].startswith(f"{kind} is disabled: the console was started read-only") for n in notes(app))
        assert records(demo_cluster) == []


# -- failures while acting ---------------------------------------------------------------------


async def test_the_job_changed_underneath_is_notified_and_nothing_is_done(
    demo_cluster: Cluster, console: ConsoleFactory, clock: FixedClock
) -> None:
    job = a_job(demo_cluster.refresh(), JobState.RUNNING, lambda j: j.job_class != "urgent")
    app = console([demo_cluster])
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        screen = await open_action(pilot, job.id, "b")
        fill(screen, value="4242")
        pending = await prepare(pilot, screen)
        # someone else, on another handle on the same cluster, preempts it meanwhile
        other = open_cluster(backend="demo", seed=7, clock=clock)
        other.prepare_preempt(job.id, mode=Mode.REQUEUE, reason="someone else").confirm()
        await push(pilot, "#action-confirm")
        await closed(pilot)
        # (the refusal is posted from the apply worker's result, after the modal closes)
        await wait_for(pilot, lambda: any(n[0] == "the job changed underneath" for n in notes(app)))
        failed = [n for n in notes(app) if n[0] == "the job changed underneath"]
        assert failed and failed[0][2] == "error"
        assert failed[0][1].startswith(f"the job changed underneath: job {job.id} changed since the bump was prepared")
        assert "nothing was done" in failed[0][1]
        assert current(demo_cluster, job.id).priority != 4242
        assert ended(demo_cluster, pending) == [("intent", "pending"), ("outcome", "error")]


async def test_permission_denied_is_notified(demo_cluster: Cluster, console: ConsoleFactory,
                                             monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    job = a_job(demo_cluster.refresh(), JobState.RUNNING)
    state = Path(demo_cluster.backend.state_dir)  # type: ignore[attr-defined]
    real = tempfile.mkstemp

    def mkstemp(*args: Any, **kwargs: Any) -> tuple[int, str]:  # the state dir on a read-only mount
        if Path(str(kwargs.get("dir", ""))) == state and str(kwargs.get("suffix", "")).endswith(".probe"):
            raise OSError(errno.EROFS, "Read-only file system")
        return real(*args, **kwargs)

    monkeypatch.setattr(demo_module.tempfile, "mkstemp", mkstemp)
    app = console([demo_cluster])
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        screen = await open_action(pilot, job.id, "b")
        fill(screen, value="4242")
        screen.query_one("#action-prepare", Button).press()
        await closed(pilot)
        await wait_for(pilot, lambda: any(n[0] == "bump: permission denied" for n in notes(app)))
        denied = [n for n in notes(app) if n[0] == "bump: permission denied"]
        assert denied and "is not writable (Read-only file system); nothing was done" in denied[0][1]
        assert [(r["result"], r["exit_code"]) for r in records(demo_cluster)] == [("error", 4)]


async def test_a_crash_while_applying_is_a_notification_not_a_traceback(
    demo_cluster: Cluster, console: ConsoleFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = a_job(demo_cluster.refresh(), JobState.RUNNING)

    def boom(plan: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr(demo_cluster.backend, "apply", boom)
    app = console([demo_cluster])
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        screen = await open_action(pilot, job.id, "b")
        fill(screen, value="4242")
        pending = await prepare(pilot, screen)
        await push(pilot, "#action-confirm")
        await closed(pilot)
        await wait_for(pilot, lambda: ("bump failed (a gpuq bug: RuntimeError)", "boom", "error") in notes(app))
        assert ended(demo_cluster, pending) == [("intent", "pending"), ("outcome", "error")]
    assert app.return_code in (None, 0)
