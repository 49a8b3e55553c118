"""`-w/--watch [SECONDS]`: read again and redraw until Ctrl-C (exit 0), on an injected sleep."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Callable
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result

from gpuq.cli.main import cli
from gpuq.cli.options import App, GlobalOptions, Injected
from gpuq.cli.watch import watch_loop
from gpuq.errors import Unreachable
from tests.clock import TickingClock

READ_COMMANDS = (["queue"], ["gpus"], ["sla"], ["overview"], ["preemptions"])


class Sleeps:
    """An injected sleep: records each interval and presses Ctrl-C after `frames` frames."""

    def __init__(self, frames: int, between: Callable[[int], None] | None = None) -> None:
        self.frames = frames
        self.calls: list[float] = []
        self.between = between

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)
        if len(self.calls) >= self.frames:
            raise KeyboardInterrupt
        if self.between is not None:
            self.between(len(self.calls))


def _run(clock: TickingClock, sleep: Sleeps, *args: str) -> Result:
    return CliRunner().invoke(cli, list(args), prog_name="gpuq", obj=Injected(clock=clock, sleep=sleep))


@pytest.mark.parametrize("command", READ_COMMANDS, ids=lambda c: c[0])
def test_each_read_command_redraws_until_ctrl_c(clock: TickingClock, small: str, command: list[str]) -> None:
    sleep = Sleeps(3)
    result = _run(clock, sleep, "--snapshot", small, *command, "-w", "5", "--no-color")
    assert result.exit_code == 0, result.output
    assert sleep.calls == [5.0, 5.0, 5.0]
    heads = [line for line in result.stdout.splitlines() if line.startswith("every 5s: gpuq ")]
    assert len(heads) == 3
    assert all(f"gpuq {command[0]} | wall time 2026-11-19T15:00:0" in h for h in heads)
    assert "Traceback" not in result.output and "Aborted" not in result.output


def test_bare_flag_takes_the_default_interval(clock: TickingClock, small: str) -> None:
    sleep = Sleeps(2)
    result = _run(clock, sleep, "--snapshot", small, "queue", "-w", "--state", "pending")
    assert result.exit_code == 0, result.output
    assert sleep.calls == [2.0, 2.0]
    assert result.stdout.count("every 2s: gpuq queue") == 2
    assert "running" not in result.stdout  # the option after -w still applies


@pytest.mark.parametrize("value", ["0", "0.5", "3601", "-1", "soon"])
def test_interval_is_bounded(clock: TickingClock, small: str, value: str) -> None:
    sleep = Sleeps(1)
    result = _run(clock, sleep, "--snapshot", small, "queue", f"--watch={value}")
    assert result.exit_code == 2
    # (click reads "-1" after an option with an optional value as an option of its own)
    assert "Invalid value for '-w' / '--watch'" in result.stderr or "No such option '-1'" in result.stderr
    assert "Traceback" not in result.output
    assert sleep.calls == []


def test_every_frame_reads_the_cluster_again(clock: TickingClock, fake: Any) -> None:
    sleep = Sleeps(4)
    result = _run(clock, sleep, "--backend", "fake", "queue", "-w", "1")
    assert result.exit_code == 0, result.output
    assert len(fake.state["ledger"]) == 4


def test_json_frames_are_one_document_each_in_a_pipe(clock: TickingClock, small: str) -> None:
    result = _run(clock, Sleeps(3), "--snapshot", small, "queue", "-o", "json", "-w", "1")
    assert result.exit_code == 0, result.output
    docs = [json.loads(line) for line in result.stdout.splitlines()]
    assert [d["cluster"] for d in docs] == ["lab", "lab", "lab"]


def test_no_headers_drops_the_frame_line_too(clock: TickingClock, small: str) -> None:
    result = _run(clock, Sleeps(2), "--snapshot", small, "queue", "--no-headers", "-w", "1")
    assert result.exit_code == 0, result.output
    assert "every 1s" not in result.stdout
    assert result.stdout.count("train-llm") == 2


def test_an_error_in_a_later_frame_is_shown_and_retried(clock: TickingClock, fake: Any) -> None:
    def fail_once(frame: int) -> None:
        if frame == 1:
            fake.state["snapshot_error"] = Unreachable("slurmctld at ctl:6817 did not answer")
        else:
            fake.state.pop("snapshot_error", None)

    result = _run(clock, Sleeps(3, between=fail_once), "--backend", "fake", "queue", "-w", "1")
    assert result.exit_code == 0, result.output
    frames = result.stdout.split("every 1s: gpuq queue")[1:]
    assert len(frames) == 3
    assert "train-llm" in frames[0] and "train-llm" in frames[2]
    assert "gpuq: error: slurmctld at ctl:6817 did not answer (trying again in 1s)" in frames[1]


def test_an_error_in_the_first_frame_ends_with_its_exit_code(clock: TickingClock, fake: Any) -> None:
    fake.state["snapshot_error"] = Unreachable("slurmctld at ctl:6817 did not answer")
    sleep = Sleeps(5)
    result = _run(clock, sleep, "--backend", "fake", "queue", "-w", "1")
    assert result.exit_code == 3
    assert sleep.calls == []


def test_on_a_terminal_frames_replace_each_other_in_place(
    clock: TickingClock, small: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Frame 1 clears the screen; later ones go home and erase line ends and what is below,
    and a frame taller than the window is cut with a line saying so."""

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    out = Tty()
    monkeypatch.setattr("sys.stdout", out)
    monkeypatch.setattr("shutil.get_terminal_size", lambda *a, **k: os.terminal_size((80, 6)))
    frames = iter(["a\nb\n", "c\n", "1\n2\n3\n4\n5\n6\n7\n"])
    sleep = Sleeps(3)
    app = App(GlobalOptions(snapshot=small, output="json"), Injected(clock=clock, sleep=sleep))
    with click.Context(click.Command("queue")):
        watch_loop(app, lambda: print(next(frames), end=""), 2.0)
    text = out.getvalue()
    clear, first, second, third = text.split("\x1b[H")
    assert clear == "\x1b[2J"
    assert first == "a\x1b[K\nb\x1b[K\x1b[0m\x1b[J"
    assert second == "c\x1b[K\x1b[0m\x1b[J"
    # a window of 6 rows: 4 lines of the frame, a line saying what was cut, the cursor's row
    assert third.startswith("1\x1b[K\n2\x1b[K\n3\x1b[K\n4\x1b[K\n\x1b[0m… 3 more lines")
    assert "5\x1b[K" not in third
    assert text.endswith("\x1b[J\n")  # Ctrl-C leaves the prompt on a line of its own
