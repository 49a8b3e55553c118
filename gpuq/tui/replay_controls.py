"""The console's scrubber keys over a recording (`gpuq tui --replay DIR`): a part of the app.

The replay's state is `ReplayClock` (gpuq/tui/replaying.py); the seeking runs in a worker, and
its snapshots come back as the `Refreshed` messages a live read posts, so every view shows a
recorded frame exactly as it showed the live one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from textual import work

from gpuq.errors import GpuqError
from gpuq.textsafe import visible
from gpuq.timefmt import format_time
from gpuq.tui.messages import Refreshed, RefreshFailed
from gpuq.tui.replaying import ReplayClock

if TYPE_CHECKING:
    from textual.notifications import SeverityLevel

    from gpuq.service import Cluster, Replay

__all__ = ["ReplayControls"]


class ReplayControls:
    """Mixed into `GpuqConsole`: the scrubber's actions."""

    replay: Replay | None
    replay_clock: ReplayClock | None
    clusters: list[Cluster]
    _played_at: float
    clock: Callable[[], float]

    if TYPE_CHECKING:
        def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
                   timeout: float | None = None, markup: bool = False) -> None: ...
        def post_message(self, message: Any) -> bool: ...
        def _paint_status(self) -> None: ...
        def _open_prompt(self, mode: str, value: str) -> None: ...

    def _replaying(self) -> ReplayClock | None:
        if self.replay_clock is None:
            self.notify("the scrubber works on a recording: gpuq tui --replay DIR", severity="warning", timeout=4)
        return self.replay_clock

    def action_replay_step(self, frames: int) -> None:
        clock = self._replaying()
        if clock is not None:
            clock.playing = False
            self._seek(clock.step(frames))

    def action_replay_play(self) -> None:
        clock = self._replaying()
        if clock is not None:
            if clock.index >= clock.last:
                clock.jump(0)
            clock.playing = not clock.playing
            self._played_at = self.clock()
            self._paint_status()

    def action_replay_speed(self, factor: float) -> None:
        clock = self._replaying()
        if clock is not None:
            clock.faster(factor)
            self._paint_status()

    def action_replay_jump(self) -> None:
        if self._replaying() is not None:
            self._open_prompt("g", "")

    def _jump_to(self, text: str) -> None:
        from gpuq.timefmt import parse_time

        clock, replay = self.replay_clock, self.replay
        if clock is None or replay is None or not text:
            return
        try:
            if len(text) <= 8 and ":" in text:  # a time of day, on the first frame's day
                text = format_time(float(int(clock.times[0])))[:11] + (text if text.count(":") == 2 else text + ":00")
                text = text if text.endswith("Z") else text + "Z"
            moment = parse_time(text)
        except (GpuqError, ValueError):
            self.notify(f"not a time: {visible(text)!r} (give 2026-11-19T19:04:00Z, or 19:04[:00] on the "
                        "recording's first day)", severity="error")  # fmt: skip
            return
        clock.playing = False
        self._seek(clock.jump(replay.index_at(self.clusters[0].name, moment)))

    def _play(self, now: float) -> None:
        clock = self.replay_clock
        if clock is None or not clock.playing:
            return
        moved = clock.advance(now - self._played_at)
        self._played_at = now
        if moved is not None:
            self._seek(moved)
        self._paint_status()

    def _seek(self, index: int) -> None:
        """Show frame `index` of the leading cluster, and every other at that recorded time."""
        clock = self.replay_clock
        if clock is None:
            return
        self._seek_worker(clock.times[index])
        self._paint_status()

    @work(thread=True, exclusive=True, group="seek", exit_on_error=False, description="seek the recording")
    def _seek_worker(self, moment: float) -> None:
        replay = self.replay
        assert replay is not None
        for index, cluster in enumerate(self.clusters):
            name = cluster.name
            try:
                snapshot = replay.seek(name, replay.index_at(name, moment))
            except GpuqError as exc:
                self.post_message(RefreshFailed(index, str(exc)))
            else:
                self.post_message(Refreshed(index, snapshot, 0.0))

