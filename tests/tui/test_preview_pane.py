"""The console's Preview view: a pending job's own request, a what-if, the native plan beside
gpuq's (Slurm), and every way there is nothing to preview."""

from __future__ import annotations

import dataclasses
import io
from typing import Any

from rich.console import Console
from textual.widgets import Button, Static

from gpuq.backends.base import Capabilities, NativePlan, NativePriority, NativeVictim
from gpuq.config import PolicySource
from gpuq.model import PreviewRequest, Snapshot
from gpuq.model.codec import read_snapshot_file
from gpuq.policy.config import DEFAULT_POLICY
from gpuq.service import Cluster
from gpuq.tui.app import GpuqConsole
from gpuq.tui.panes.preview import PreviewPane, WhatIf
from gpuq.tui.screens.whatif import WhatIfScreen
from gpuq.tui.widgets.preview import PreviewBody
from gpuq.tui.widgets.table import ViewTable
from gpuq.views.preview import preview_view
from tests.tui.backends import FlakyBackend
from tests.tui.conftest import SMALL, ConsoleFactory, loaded, noted, wait_for


def shown(app: GpuqConsole) -> str:
    """The preview's text as drawn at the pane's width."""
    body = app.query_one("#preview-body", PreviewBody)
    console = Console(width=body.size.width or 78, file=io.StringIO(), color_system=None)
    console.print(body.render())
    out = console.file
    assert isinstance(out, io.StringIO)
    return out.getvalue()


def flat(app: GpuqConsole) -> str:
    """The preview's words, however the width wrapped them."""
    return " ".join(shown(app).split())


def pane(app: GpuqConsole) -> PreviewPane:
    return app.query_one("#pane-preview", PreviewPane)


async def select(pilot: Any, job_id: str) -> None:
    app: GpuqConsole = pilot.app
    table = app.query_one("#queue-table", ViewTable)
    await wait_for(pilot, lambda: table.row_count > 0)
    assert table.move_to(f"0/{job_id}")
    await wait_for(pilot, lambda: app.selected is not None and app.selected.job_id == job_id)


async def preview_of(pilot: Any, job_id: str) -> PreviewPane:
    await select(pilot, job_id)
    await pilot.press("6")
    found = pane(pilot.app)
    await wait_for(pilot, lambda: found.model is not None and found.model.heading[0].endswith(
        f"job {job_id} on cluster {pilot.app.clusters[0].name}"))  # fmt: skip
    return found


def would_preempt(cluster: Cluster, snapshot: Snapshot) -> str:
    """A pending job of the demo whose own request preempts (the incident the demo shows)."""
    for job in snapshot.jobs:
        if not job.is_pending:
            continue
        if preview_view(cluster, cluster.job_request(job.id, snapshot), snapshot).preview.plan.victims:
            return job.id
    raise AssertionError("the demo shows no pending job that would preempt")


async def test_a_pending_jobs_preview_shows_the_views_victims_and_reasons(
    demo_cluster: Cluster, console: ConsoleFactory
) -> None:
    # (computed before the console starts: the demo stands still on the test's clock)
    snapshot = demo_cluster.refresh()
    job_id = would_preempt(demo_cluster, snapshot)
    expected = preview_view(demo_cluster, demo_cluster.job_request(job_id, snapshot), snapshot)
    app = console([demo_cluster])
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        assert app.snapshots[0] == snapshot
        found = await preview_of(pilot, job_id)
        model = found.model
        assert model is not None and model.view is not None and model.note is None
        plan, ours = expected.preview.plan, model.view.preview.plan
        assert [v.job_id for v in ours.victims] == [v.job_id for v in plan.victims] != []
        assert [(s.job_id, s.reason) for s in ours.spared] == [(s.job_id, s.reason) for s in plan.spared]
        text = shown(app)
        assert f"would preempt {len(plan.victims)} job(s)" in text
        assert f"{expected.gpu_hours_at_risk:.2f} GPU-hours at risk" in text
        victim_lines = [line.split() for line in text.splitlines() if line.split()[:1] in ([v.job_id] for v in
                                                                                          plan.victims)]  # fmt: skip
        assert {words[0] for words in victim_lines} == {v.job_id for v in plan.victims}
        for spared in plan.spared:
            assert any(line.split()[:2] == [spared.job_id, spared.reason.value] for line in text.splitlines())
        job = snapshot.job(job_id)
        assert job is not None
        assert f"job {job_id}: {job.gpus} GPU" in text and f"priority {job.priority}" in text
        assert "victims" in str(app.query_one("#status", Static).render())
        # at 80x24 the preview is longer than the screen: the view has the focus and scrolls
        await pilot.resize_terminal(80, 24)
        scroll = app.query_one("#preview-scroll")
        await wait_for(pilot, lambda: scroll.max_scroll_y > 0)
        assert app.focused is scroll
        await pilot.press("pagedown")
        await wait_for(pilot, lambda: scroll.scroll_y > 0)


async def test_a_running_job_has_nothing_to_preview_and_the_what_if_is_offered(
    small_cluster: Cluster, console: ConsoleFactory
) -> None:
    app = console([small_cluster])
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        found = await preview_of(pilot, "101")
        assert found.model is not None and found.model.view is None
        assert "job 101 is running, not pending" in flat(app) and "press w for a what-if" in flat(app)


async def test_without_a_selection_the_view_offers_the_what_if(small_cluster: Cluster,
                                                               console: ConsoleFactory) -> None:  # fmt: skip
    app = console([small_cluster], first_view="preview")
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.query("#pane-preview") and pane(app).model is not None)
        assert app.selected is None
        assert "select a pending job in the queue" in flat(app) and "press w for a what-if" in flat(app)


async def test_what_if_previews_the_request_the_form_gives(demo_cluster: Cluster, console: ConsoleFactory) -> None:
    app = console([demo_cluster])
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(pilot)
        await pilot.press("w")  # from the queue: the Preview view and its form
        await wait_for(pilot, lambda: isinstance(app.screen, WhatIfScreen))
        assert app.view_id == "preview"
        await pilot.press(*"8", "tab", *"900", "enter")
        found = pane(app)
        await wait_for(pilot, lambda: found.model is not None and found.model.view is not None
                       and found.model.heading[0].startswith("What-if"))  # fmt: skip
        assert found.what_if == WhatIf(8, 900, cluster=0)
        snapshot = app.snapshots[0]
        assert snapshot is not None
        expected = preview_view(demo_cluster, demo_cluster.what_if_request(snapshot, gpus=8, priority=900), snapshot)
        view = found.model.view
        assert view is not None
        assert [v.job_id for v in view.preview.plan.victims] == [v.job_id for v in expected.preview.plan.victims]
        assert view.preview.plan.request == PreviewRequest(gpus=8, priority=900)
        assert "a 8-GPU request: 8 GPUs, priority 900" in flat(app)
        # "Selected job": back to the job's own preview
        await pilot.press("w")
        await wait_for(pilot, lambda: isinstance(app.screen, WhatIfScreen))
        back = app.screen.query_one("#whatif-job", Button)
        await wait_for(pilot, lambda: back.region.height > 0)
        await pilot.click("#whatif-job")
        await wait_for(pilot, lambda: found.what_if is None and found.model is not None
                       and not found.model.heading[0].startswith("What-if"))  # fmt: skip


async def test_what_if_bad_input_is_said_in_the_form_and_in_the_view(
    demo_cluster: Cluster, console: ConsoleFactory
) -> None:
    app = console([demo_cluster])
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(pilot)
        await pilot.press("w")
        await wait_for(pilot, lambda: isinstance(app.screen, WhatIfScreen))
        screen = app.screen
        error = screen.query_one("#whatif-error")

        def said() -> str:
            return str(error.render()) if error.display else ""

        await pilot.press(*"eight", "enter")
        await wait_for(pilot, lambda: "GPUs: 'eight' is not a whole number" in said())
        assert app.screen is screen  # still open: the operator puts it right
        await pilot.press(*["backspace"] * 5, "0", "tab", *"5", "enter")
        await wait_for(pilot, lambda: "GPUs: 0 is less than 1" in said())
        await pilot.press("shift+tab", "backspace", "4", "tab", "backspace", "enter")
        await wait_for(pilot, lambda: "needs a priority, a class" in said())
        # the service's own check (the priority range) is shown in the view, not raised
        await pilot.press(*"99999999", "enter")
        found = pane(app)
        await wait_for(pilot, lambda: found.model is not None and found.model.note is not None)
        assert found.model.view is None
        assert "--priority 99999999: priority must be an integer from 0 to 1000000" in flat(app)
        assert not [n for n in noted(app) if n.severity == "error"]


class NativeBackend(FlakyBackend):
    """The small snapshot, with a native scheduler that would preempt another job than gpuq."""

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(native_preview=True, read_only_reason="a test backend")

    def native_preview(self, snapshot: Snapshot, request: PreviewRequest) -> NativePlan:
        victim = NativeVictim("102", ("gpu-02",), 2, 10, "QOS normal may preempt low", {"qos": "low"})
        return NativePlan(True, ("gpu-02",), (victim,), ("partition gpu",))


async def test_the_native_plan_beside_gpuqs_when_wide_under_it_when_narrow(console: ConsoleFactory) -> None:
    backend = NativeBackend(SMALL, "lab")
    cluster = Cluster(backend, "flaky", PolicySource(DEFAULT_POLICY, "defaults"))
    snapshot = dataclasses.replace(read_snapshot_file(SMALL), cluster="lab")
    ours = preview_view(cluster, cluster.job_request("202", snapshot), snapshot)
    assert ours.differs is not None and "native scheduler would also preempt 102" in ours.differs
    app = console([cluster])
    async with app.run_test(size=(200, 60)) as pilot:
        await loaded(pilot)
        await preview_of(pilot, "202")
        wide = shown(app)
        assert any("gpuq's policy" in line and "native scheduler: would preempt 102 on gpu-02" in line
                   for line in wide.splitlines())  # fmt: skip
        assert f"where they differ: {ours.differs}" in flat(app)
        await pilot.resize_terminal(80, 24)
        await pilot.pause(0.2)
        narrow = shown(app).splitlines()
        native_at = next(i for i, line in enumerate(narrow) if "native scheduler: would preempt 102" in line)
        assert not any(line.strip() == "gpuq's policy" for line in narrow)  # (the wide layout's heading)
        assert any(line.startswith("would preempt") for line in narrow[:native_at])
        assert any(line.split()[:1] == ["102"] and "QOS" in line for line in narrow[native_at:])


class NativePriorityBackend(FlakyBackend):
    """The small snapshot, with a native scheduler that prices what-ifs (Slurm's multifactor),
    saying what it estimated in words that carry a control character (outside text)."""

    def native_priority(self, snapshot: Snapshot, request: PreviewRequest) -> NativePriority | None:
        return NativePriority(4242, "multifactor priority: the fair-share factor \x1b[31mestimated\x1b[0m")


async def test_the_what_ifs_priority_note_is_shown_as_data(console: ConsoleFactory) -> None:
    backend = NativePriorityBackend(SMALL, "lab")
    cluster = Cluster(backend, "flaky", PolicySource(DEFAULT_POLICY, "defaults"))
    app = console([cluster])
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        await pilot.press("w")
        await wait_for(pilot, lambda: isinstance(app.screen, WhatIfScreen))
        await pilot.press(*"2", "tab", *"500", "enter")
        found = pane(app)
        await wait_for(pilot, lambda: found.model is not None and found.model.view is not None
                       and found.model.heading[0].startswith("What-if"))  # fmt: skip
        assert found.model.view.preview.plan.request.priority_note is not None
        text = flat(app)
        assert "note: multifactor priority: the fair-share factor" in text and "estimated" in text
        assert "\x1b" not in shown(app)  # the control character is shown as data, not sent
