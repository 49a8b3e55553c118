"""Console test fixtures: private XDG dirs, clusters on a fixed clock, the console built by the
same factory `gpuq tui` uses (`make_app`), and a helper to wait for what a worker posts."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.notifications import Notification, Notifications

from gpuq.service import Cluster, open_cluster
from gpuq.tui.app import ConsoleSettings, GpuqConsole, make_app
from gpuq.tui.options import ConsoleSetup
from tests.clock import FixedClock

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SMALL = FIXTURES / "snapshots" / "small.json"
#: the console tests' wall clock: a weekday evening, UTC (2026-11-19T19:00:00Z)
CONSOLE_T0 = 1_795_114_800.0


@pytest.fixture(autouse=True)
def xdg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Private config/state/cache dirs so no test reads or writes the operator's files."""
    dirs = {name: tmp_path / f"xdg-{name}" for name in ("config", "state", "cache")}
    for name, path in dirs.items():
        monkeypatch.setenv(f"XDG_{name.upper()}_HOME", str(path))
    monkeypatch.delenv("NO_COLOR", raising=False)
    return dirs


@pytest.fixture(autouse=True)
def kept_notifications(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every notification a console raises is also kept for `noted`: Textual forgets one once its
    timeout (8 s for information) has passed, and a loaded machine can take longer than that to
    reach the assertion that looks for it."""
    add = Notifications.add

    def add_and_keep(self: Notifications, notification: Notification) -> Notifications:
        self.__dict__.setdefault("kept", []).append(notification)
        return add(self, notification)

    monkeypatch.setattr(Notifications, "add", add_and_keep)


def noted(app: GpuqConsole) -> list[Notification]:
    """Every notification `app` raised so far, in order, whether or not it has expired since."""
    return list(app._notifications.__dict__.get("kept", []))


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock(CONSOLE_T0)


@pytest.fixture
def demo_cluster(clock: FixedClock) -> Cluster:
    """A demo cluster (seed 7) that stands still unless the test moves `clock`."""
    return open_cluster(backend="demo", seed=7, clock=clock)


@pytest.fixture
def small_cluster() -> Cluster:
    """The small fixture snapshot (read-only: a snapshot file cannot act)."""
    return open_cluster(snapshot=str(SMALL))


ConsoleFactory = Callable[..., GpuqConsole]


@pytest.fixture
def console(clock: FixedClock) -> ConsoleFactory:
    """`console(clusters, **settings)`: the console as `gpuq tui` builds it, on the test clock."""

    def build(clusters: list[Cluster], **settings: Any) -> GpuqConsole:
        return make_app(ConsoleSetup(clusters, ConsoleSettings(**settings), clock))

    return build


async def wait_for(pilot: Any, predicate: Callable[[], object], timeout: float = 20.0) -> None:
    """Let the app run until `predicate()` holds (workers post back in their own time)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError("timed out waiting for the console")
        await pilot.pause(0.05)
    await _laid_out(pilot, deadline)


async def _laid_out(pilot: Any, deadline: float) -> None:
    """Wait for the screen's next refresh: a pane the app has just un-hidden has no size until the
    screen lays it out again, and a test reading its lines before then reads none."""
    done = asyncio.Event()
    if not pilot.app.is_running or not pilot.app.call_after_refresh(done.set):
        return
    loop = asyncio.get_running_loop()
    while not done.is_set() and pilot.app.is_running:
        if loop.time() > deadline:
            raise AssertionError("timed out waiting for the console to lay out its screen")
        await pilot.pause(0.01)


async def loaded(pilot: Any) -> GpuqConsole:
    """Wait until the first read of every cluster in scope is shown."""
    app: GpuqConsole = pilot.app
    await wait_for(pilot, lambda: app.context() is not None and not app._computing and app._token > 0)
    return app
