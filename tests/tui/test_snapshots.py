"""Snapshot tests (pytest-textual-snapshot): every view of the console at 80×24 and 160×48, one
class per view (posting's layout).

Each console is built by `make_app` (the `console` fixture, as `gpuq tui` builds it) on the fixed
test clock, over the fixture snapshot tests/fixtures/snapshots/small.json (its cluster time is
fixed): nothing on screen moves. The input cursor's blink is frozen (harlequin's trick) and each
screenshot waits until the console has read, computed and shown, so two runs draw the same
screen. Baselines live in tests/tui/__snapshots__/test_snapshots/; after a deliberate change of
the look, make them again with `pytest tests/tui/test_snapshots.py --snapshot-update` and look at
the SVG files before committing them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input, Static

from gpuq.audit import AuditLog, make_record
from gpuq.service import Cluster, NvmlReader
from gpuq.service.hostgpus import set_default_reader
from gpuq.tui.app import GpuqConsole
from gpuq.tui.widgets.table import ViewTable
from tests.clock import FixedClock
from tests.nvml.conftest import FakeProc
from tests.nvml.fakenvml import GIB, FakeNvml, h100
from tests.tui.backends import flaky_cluster
from tests.tui.conftest import CONSOLE_T0, SMALL, ConsoleFactory, loaded, wait_for

SnapCompare = Callable[..., bool]
RunBefore = Callable[[Pilot[Any]], Awaitable[None]]

SIZES = pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
#: a pending job of small.json (its bump previews preemptions)
PENDING = "202"


@pytest.fixture(autouse=True)
def still_cursor(monkeypatch: pytest.MonkeyPatch) -> None:
    """The input cursor stays drawn instead of blinking (it would be on or off by chance)."""
    monkeypatch.setattr(Input, "_toggle_cursor", lambda self: None)


@pytest.fixture(autouse=True)
def host_gpus(tmp_path: Path) -> Iterator[None]:
    """This host is node gpu-01 with four busy H100s of a stand-in NVML: never the GPUs (or the
    name) of the machine the tests run on."""
    gpus = [h100(i, utilisation_pct=40 + 15 * i, memory_used=(10 + 20 * i) * GIB, temperature_c=50 + i)
            for i in range(4)]  # fmt: skip
    reader = NvmlReader(lambda: FakeNvml(gpus), FixedClock(CONSOLE_T0), proc=FakeProc(tmp_path / "proc").root,
                        host="gpu-01")  # fmt: skip
    saved = set_default_reader(reader)
    yield
    set_default_reader(saved)


async def settled(pilot: Pilot[Any]) -> GpuqConsole:
    """Wait until every worker (reads, computes, a modal's read) is done and its result shown."""
    app: GpuqConsole = pilot.app  # type: ignore[assignment]
    await wait_for(pilot, lambda: not app._computing and not any(w.is_running for w in app.workers))
    await pilot.pause()
    await wait_for(pilot, lambda: not app._computing and not any(w.is_running for w in app.workers))
    return app


def shot(snap_compare: SnapCompare, app: GpuqConsole, size: tuple[int, int], run_before: RunBefore) -> bool:
    """The screenshot, once `run_before` is done and a tick of the console has passed: the status
    line says how many columns the table hides as the table was last drawn (the tick repaints it)."""

    async def before(pilot: Pilot[Any]) -> None:
        await run_before(pilot)
        await pilot.pause(0.3)
        await settled(pilot)

    return snap_compare(app, terminal_size=size, run_before=before)


def steps(*keys: str, select: str | None = None) -> RunBefore:
    """What the operator does before the screenshot: wait for the first read, put the queue's
    cursor on job `select`, press `keys` (each key's work finished before the next)."""

    async def run(pilot: Pilot[Any]) -> None:
        app = await loaded(pilot)
        await settled(pilot)
        if select is not None:
            table = app.query_one("#queue-table", ViewTable)
            assert table.move_to(f"0/{select}"), f"job {select} is not in the queue"
            await pilot.pause()
            assert app.selected is not None and app.selected.job_id == select
        for key in keys:
            await pilot.press(key)
            await settled(pilot)

    return run


class TestQueue:
    @SIZES
    def test_queue(self, snap_compare: SnapCompare, small_cluster: Cluster, console: ConsoleFactory,
                   size: tuple[int, int]) -> None:  # fmt: skip
        assert shot(snap_compare, console([small_cluster]), size, steps())

    @SIZES
    def test_filter_prompt(self, snap_compare: SnapCompare, small_cluster: Cluster, console: ConsoleFactory,
                           size: tuple[int, int]) -> None:  # fmt: skip
        """`/` open with a filter typed in: the rows are still all there, the cursor is drawn."""
        assert shot(snap_compare, console([small_cluster]), size, steps("slash", "c", "a"))

    @SIZES
    def test_filtered_and_sorted(self, snap_compare: SnapCompare, small_cluster: Cluster, console: ConsoleFactory,
                                 size: tuple[int, int]) -> None:  # fmt: skip
        """`/carol` applied, then sorted by the next column (the header marks it)."""
        run = steps("slash", *"carol", "enter", "s")
        assert shot(snap_compare, console([small_cluster]), size, run)


class TestGpus:
    @SIZES
    def test_gpus(self, snap_compare: SnapCompare, small_cluster: Cluster, console: ConsoleFactory,
                  size: tuple[int, int]) -> None:  # fmt: skip
        assert shot(snap_compare, console([small_cluster]), size, steps("2"))


class TestSla:
    @SIZES
    def test_sla(self, snap_compare: SnapCompare, small_cluster: Cluster, console: ConsoleFactory,
                 size: tuple[int, int]) -> None:  # fmt: skip
        assert shot(snap_compare, console([small_cluster]), size, steps("3"))


class TestPreemptions:
    @SIZES
    def test_preemptions(self, snap_compare: SnapCompare, small_cluster: Cluster, console: ConsoleFactory,
                         size: tuple[int, int]) -> None:  # fmt: skip
        assert shot(snap_compare, console([small_cluster]), size, steps("4"))


class TestJob:
    @SIZES
    def test_job_detail(self, snap_compare: SnapCompare, small_cluster: Cluster, console: ConsoleFactory,
                        size: tuple[int, int]) -> None:  # fmt: skip
        assert shot(snap_compare, console([small_cluster]), size, steps("5", select=PENDING))

    @SIZES
    def test_no_selection(self, snap_compare: SnapCompare, small_cluster: Cluster, console: ConsoleFactory,
                          size: tuple[int, int]) -> None:  # fmt: skip
        """Job detail as the first view, before any job was selected: what to do instead."""

        async def run(pilot: Pilot[Any]) -> None:
            app: GpuqConsole = pilot.app  # type: ignore[assignment]
            await wait_for(pilot, lambda: app.context() is not None and bool(app.query("#empty")))
            await settled(pilot)
            assert "select a job in the queue first" in str(app.query_one("#empty", Static).render())

        assert shot(snap_compare, console([small_cluster], first_view="job"), size, run)


class TestPreview:
    @SIZES
    def test_preview(self, snap_compare: SnapCompare, small_cluster: Cluster, console: ConsoleFactory,
                     size: tuple[int, int]) -> None:  # fmt: skip
        assert shot(snap_compare, console([small_cluster]), size, steps("6", select=PENDING))


class TestAudit:
    @SIZES
    def test_audit(self, snap_compare: SnapCompare, small_cluster: Cluster, console: ConsoleFactory,
                   size: tuple[int, int]) -> None:  # fmt: skip
        write_audit(small_cluster.audit.path)
        assert shot(snap_compare, console([small_cluster]), size, steps("7"))

    @SIZES
    def test_empty_log(self, snap_compare: SnapCompare, small_cluster: Cluster, console: ConsoleFactory,
                       size: tuple[int, int]) -> None:  # fmt: skip
        assert not small_cluster.audit.path.exists()
        assert shot(snap_compare, console([small_cluster]), size, steps("7"))


class TestHelp:
    @SIZES
    def test_help(self, snap_compare: SnapCompare, small_cluster: Cluster, console: ConsoleFactory,
                  size: tuple[int, int]) -> None:  # fmt: skip
        assert shot(snap_compare, console([small_cluster]), size, steps("question_mark"))


class TestActionModal:
    @SIZES
    def test_bump_form(self, snap_compare: SnapCompare, small_cluster: Cluster, console: ConsoleFactory,
                       size: tuple[int, int]) -> None:  # fmt: skip
        """`b` on a pending job: the form, with the job as the modal read it."""
        run = steps("b", select=PENDING)

        async def read(pilot: Pilot[Any]) -> None:
            await run(pilot)
            line = pilot.app.screen.query_one("#action-job", Static)
            await wait_for(pilot, lambda: "cluster time" in str(line.render()))

        assert shot(snap_compare, console([small_cluster]), size, read)


class TestStaleBanner:
    @SIZES
    def test_stale(self, snap_compare: SnapCompare, clock: FixedClock, console: ConsoleFactory,
                   size: tuple[int, int]) -> None:  # fmt: skip
        """A refresh failed after a good one: the last good rows stay, under the banner."""
        cluster, backend = flaky_cluster(SMALL)

        async def run(pilot: Pilot[Any]) -> None:
            app = await loaded(pilot)
            await settled(pilot)
            backend.down = True
            clock.now += 2.5
            await wait_for(pilot, lambda: app.refreshes[0].stale)
            await settled(pilot)
            await wait_for(pilot, lambda: bool(app.query_one("#banner").display))

        assert shot(snap_compare, console([cluster]), size, run)


class TestBackendDownAtStart:
    @SIZES
    def test_down(self, snap_compare: SnapCompare, console: ConsoleFactory, size: tuple[int, int]) -> None:
        """Nothing read yet: why, in the pane's place, and the banner."""
        cluster, backend = flaky_cluster(SMALL, down=True)

        async def run(pilot: Pilot[Any]) -> None:
            app: GpuqConsole = pilot.app  # type: ignore[assignment]
            await wait_for(pilot, lambda: app.refreshes[0].failures >= 1)
            await settled(pilot)
            await wait_for(pilot, lambda: bool(app.query("#empty")) and bool(app.query_one("#banner").display))
            assert "cannot read lab" in str(app.query_one("#empty", Static).render())

        assert shot(snap_compare, console([cluster]), size, run)
        assert backend.reads >= 1


def write_audit(path: Path) -> None:
    """Three actions at fixed times by a fixed operator: done, a dry run, and one whose outcome
    never reached the log."""
    base = {"backend": "demo", "cluster": "lab", "now": CONSOLE_T0 - 3600}
    records = [
        make_record(**base, action="bump", target="202", result="ok", reason="deadline tonight",
                    before={"priority": 500}, after={"priority": 900}, action_id="a1"),
        make_record(**{**base, "now": CONSOLE_T0 - 1800}, action="exempt", target="101", result="ok", dry_run=True,
                    reason="checkpointing", action_id="a2"),
        make_record(**{**base, "now": CONSOLE_T0 - 600}, action="preempt", target="103", result="pending",
                    phase="intent", action_id="a3"),
    ]  # fmt: skip
    log = AuditLog(path)
    for record in records:
        log.append({**record, "operator": "oncall", "host": "ops-1"})
