"""Incident recording and replay in the console: `--record DIR` keeps each read, `--replay DIR`
opens the same views on the recording, read-only, moved by the scrubber."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Static

from gpuq.service import Cluster, open_recorder, open_replay
from gpuq.tui.app import ConsoleSettings, GpuqConsole, make_app
from gpuq.tui.options import ConsoleSetup
from gpuq.tui.replaying import ReplayClock, scrubber_line
from tests.clock import FixedClock
from tests.tui.conftest import loaded, noted, wait_for


def test_replay_clock_steps_jumps_and_plays() -> None:
    clock = ReplayClock([0.0, 2.0, 4.0, 10.0])
    assert clock.step(1) == 1 and clock.step(10) == 3 and clock.step(-99) == 0
    assert clock.faster(2.0) == 2.0 and clock.faster(1e9) == 512.0 and clock.faster(1e-9) == 0.25
    clock.speed, clock.playing = 2.0, True
    assert clock.advance(0.5) is None  # 1 recorded second: still frame 0
    assert clock.advance(0.5) == 1  # 2 s: frame 1
    assert clock.advance(2.0) == 2  # 6 s: frame 2 (frame 3 is at 10 s)
    assert clock.advance(2.0) == 3 and not clock.playing  # stops at the end
    assert clock.advance(5.0) is None


def test_scrubber_fits_its_width() -> None:
    clock = ReplayClock([1_795_114_800.0 + 2 * i for i in range(100)], index=49)
    for width in (200, 80, 60, 40):
        line = scrubber_line(clock, width)
        assert len(line) <= width and "50/100" in line and "2026-11-19T19:01:38Z" in line
    assert "●" in scrubber_line(clock, 80) and "p play" in scrubber_line(clock, 120)


async def _record(tmp_path: Path, demo_cluster: Cluster, clock: FixedClock, frames: int) -> Path:
    directory = tmp_path / "incident"
    setup = ConsoleSetup([demo_cluster], ConsoleSettings(), clock, recorder=open_recorder(directory))
    app = make_app(setup)
    async with app.run_test(size=(120, 30)) as pilot:
        await loaded(pilot)
        for n in range(1, frames):
            clock.now += 60  # a simulated hour passes per step at the demo's speed: jobs move
            app.action_refresh_now()
            await wait_for(pilot, lambda n=n: setup.recorder.bytes_written > 0 and _frames(directory) >= n + 1)
        assert "REC" in str(app.query_one("#status", Static).render())
    return directory


def _frames(directory: Path) -> int:
    try:
        replay = open_replay(directory)
    except Exception:  # noqa: BLE001 - not written yet
        return 0
    return len(replay.times(replay.clusters[0].name))


async def test_record_then_replay_shows_each_recorded_frame(tmp_path: Path, demo_cluster: Cluster,
                                                            clock: FixedClock) -> None:  # fmt: skip
    directory = await _record(tmp_path, demo_cluster, clock, 4)
    replay = open_replay(directory)
    name = replay.clusters[0].name
    times = replay.times(name)
    assert len(times) == 4 and times == sorted(times)
    expected = [len(replay.seek(name, i).jobs) for i in range(4)]
    from gpuq.config import Config
    from gpuq.tui.options import console_setup

    setup = console_setup(Config(), replay=str(directory), clock=clock)  # as `gpuq tui --replay DIR` does
    assert setup.settings.read_only
    app = make_app(setup)
    async with app.run_test(size=(120, 30)) as pilot:
        await loaded(pilot)
        scrubber = app.query_one("#scrubber", Static)
        assert "frame 1/4" in str(scrubber.render())

        def shown_jobs() -> int | None:
            snap = app.snapshots[0]
            return None if snap is None else len(snap.jobs)

        assert shown_jobs() == expected[0]
        await pilot.press("full_stop")
        await wait_for(pilot, lambda: app.snapshots[0] is not None and app.snapshots[0].now == times[1])
        assert shown_jobs() == expected[1] and "frame 2/4" in str(scrubber.render())
        await pilot.press("greater_than_sign")  # 30 forward: clamped to the last
        await wait_for(pilot, lambda: app.snapshots[0] is not None and app.snapshots[0].now == times[3])
        await pilot.press("comma")
        await wait_for(pilot, lambda: app.snapshots[0] is not None and app.snapshots[0].now == times[2])
        # jump to a time: the last frame at or before it
        from gpuq.timefmt import format_time

        await pilot.press("g", *format_time(times[1] + 1), "enter")
        await wait_for(pilot, lambda: app.snapshots[0] is not None and app.snapshots[0].now == times[1])
        await pilot.press("g", *"not a time", "enter")
        await pilot.pause(0.1)
        assert any("not a time" in n.message or "RFC 3339" in n.message for n in noted(app))
        # play: the wall clock moves, the frames follow at the chosen speed
        await pilot.press("plus", "plus")  # 4x
        assert app.replay_clock is not None and app.replay_clock.speed == 4.0
        await pilot.press("p")
        clock.now += (times[3] - times[1]) / 4 + 0.1
        await wait_for(pilot, lambda: app.snapshots[0] is not None and app.snapshots[0].now == times[3])
        assert app.replay_clock.playing is False  # stopped at the end
        # read-only, saying why
        await pilot.press("b")
        await pilot.pause(0.1)
        assert any("recording" in n.message and "disabled" in n.message for n in noted(app))


async def test_scrubber_keys_outside_a_replay_say_what_they_need(small_cluster: Cluster, console: object) -> None:
    app: GpuqConsole = console([small_cluster])  # type: ignore[operator]
    async with app.run_test(size=(100, 24)) as pilot:
        await loaded(pilot)
        await pilot.press("full_stop")
        await pilot.pause(0.1)
        assert any("--replay DIR" in n.message for n in noted(app))
        assert not app.query("#scrubber")


async def test_recording_that_fails_stops_and_says_so_once(tmp_path: Path, demo_cluster: Cluster, clock: FixedClock,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    recorder = open_recorder(tmp_path / "rec")
    import errno

    def full(*args: object, **kwargs: object) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    app = make_app(ConsoleSetup([demo_cluster], ConsoleSettings(), clock, recorder=recorder))
    async with app.run_test(size=(120, 30)) as pilot:
        await loaded(pilot)
        await wait_for(pilot, lambda: recorder.bytes_written > 0)  # (recorded after it is shown)
        from gpuq.backends.recording import writer

        monkeypatch.setattr(writer, "_write_all", full)  # every frame from here meets a full disk

        def said() -> list[Any]:
            return [n for n in noted(app) if n.message.startswith("recording stopped")]

        clock.now += 5
        app.action_refresh_now()
        await wait_for(pilot, said)
        for _ in range(2):  # later reads are not recorded, and it is not said again
            clock.now += 5
            app.action_refresh_now()
            await pilot.pause(0.2)
        stopped = said()
        assert len(stopped) == 1 and "No space left on device" in stopped[0].message
        assert "REC stopped" in str(app.query_one("#status", Static).render())
        assert app.snapshots[0] is not None  # the console goes on
