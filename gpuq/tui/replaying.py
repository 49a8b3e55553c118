"""Replaying a recording in the console (`gpuq tui --replay DIR`): the scrubber's state and moves.

The console is the same; only where snapshots come from changes. Each cluster's handle shows a
frame of the recording (`Replay.seek`); the scrubber moves the cluster in scope (in the combined
view: every cluster, to the same recorded time), steps, jumps to a time, or plays the recording
at a speed (recorded seconds per wall-clock second). `ReplayClock` is pure bookkeeping; the app
does the seeking in a worker.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuq.timefmt import format_time

__all__ = ["MAX_SPEED", "MIN_SPEED", "ReplayClock", "scrubber_line"]

MIN_SPEED, MAX_SPEED = 0.25, 512.0


@dataclass(slots=True)
class ReplayClock:
    """Where the replay stands: the frame times of the cluster that leads, the frame shown, and
    whether (and how fast) it plays."""

    times: list[float]
    index: int = 0
    playing: bool = False
    speed: float = 1.0
    #: the recorded time playback has reached (between two frames while playing)
    at: float = 0.0

    def __post_init__(self) -> None:
        self.at = self.times[self.index] if self.times else 0.0

    @property
    def last(self) -> int:
        return len(self.times) - 1

    def step(self, frames: int) -> int:
        """Move by `frames` (clamped to the recording); the new index."""
        self.index = max(0, min(self.last, self.index + frames))
        self.at = self.times[self.index]
        return self.index

    def jump(self, index: int) -> int:
        return self.step(index - self.index)

    def faster(self, factor: float) -> float:
        self.speed = max(MIN_SPEED, min(MAX_SPEED, self.speed * factor))
        return self.speed

    def advance(self, wall_s: float) -> int | None:
        """Playing: `wall_s` wall-clock seconds went by. The frame to show now, if it changed;
        playback stops at the last frame."""
        if not self.playing or not self.times:
            return None
        self.at += wall_s * self.speed
        index = self.index
        while index < self.last and self.times[index + 1] <= self.at:
            index += 1
        if index >= self.last:
            self.playing = False
        if index == self.index:
            return None
        self.index = index
        return index


def scrubber_line(clock: ReplayClock, width: int) -> str:
    """`▶ 4× · frame 12/1800 · 2026-11-19T19:04:06Z · ━━━━●────` fitted to `width` columns."""
    if not clock.times:
        return "replay: no frames"
    state = "▶" if clock.playing else "⏸"
    speed = f"{clock.speed:g}×"
    moment = format_time(float(int(clock.times[clock.index])))
    head = f"REPLAY {state} {speed} · frame {clock.index + 1}/{clock.last + 1} · {moment} · "
    tail = " · . , step  < > 30  p play  + - speed  g jump"
    room = width - len(head) - len(tail)
    if room < 10:
        tail = ""
        room = width - len(head)
    if room < 3:  # narrow: the frame and its time, never cut
        return f"{state} {speed} {clock.index + 1}/{clock.last + 1} {moment}"
    share = clock.index / clock.last if clock.last else 1.0
    knob = round(share * (room - 1))
    bar = "━" * knob + "●" + "─" * (room - knob - 1)
    return head + bar + tail
