"""`-w/--watch [SECONDS]` on the read commands: read the cluster again and redraw every SECONDS
until Ctrl-C, which ends it with exit 0 (kubectl's `-w`, the `watch` command's loop).

Each frame is rendered into a buffer first and then written at once, so the screen is never
blank while the backend is read. On a terminal a frame replaces the one before in place (cursor
home, each line erasing what was after it, the rest of the screen erased) and is cut to the
window's height; in a pipe frames follow each other. A table frame opens with a line naming the
command, the interval and the wall time it was read at (the table's own title says the cluster's
time); a JSON or CSV frame, or a table under `--no-headers`, has no such line, so a pipe gets
one document per frame.

An error in the first frame ends the command with its exit code (a bad option stays a bad
option); a later one (the backend briefly unreachable) is shown in place of the frame, and the
next frame tries again.
"""

from __future__ import annotations

import gc
import io
import shutil
import sys
import time
from collections.abc import Callable

import click

from gpuq.cli.options import App
from gpuq.cli.output import writing_stdout
from gpuq.errors import GpuqError
from gpuq.textsafe import visible
from gpuq.timefmt import format_time

__all__ = ["watch_loop"]

_HOME, _CLEAR, _ERASE_LINE, _ERASE_BELOW, _RESET = "\x1b[H", "\x1b[2J", "\x1b[K", "\x1b[J", "\x1b[0m"


class _Frame(io.TextIOWrapper):
    """A stand-in stdout that keeps what a frame writes and answers `isatty()` as the real one
    does (Rich and the JSON writer ask it: widths, colours, indentation stay as without -w)."""

    def __init__(self, tty: bool) -> None:
        super().__init__(io.BytesIO(), encoding="utf-8", errors="backslashreplace", write_through=True)
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty

    def text(self) -> str:
        self.flush()
        raw = self.buffer
        assert isinstance(raw, io.BytesIO)
        return raw.getvalue().decode("utf-8", errors="backslashreplace")


def _render(render: Callable[[], None], tty: bool) -> str:
    frame = _Frame(tty)
    real = sys.stdout
    sys.stdout = frame
    try:
        render()
    finally:
        sys.stdout = real
    return frame.text()


def _fit(text: str, rows: int) -> str:
    """At most `rows` lines, each erasing the rest of its line; a last line says what was cut."""
    lines = text.rstrip("\n").split("\n")
    if len(lines) > rows:
        cut = len(lines) - (rows - 1)
        lines = [*lines[: rows - 1], f"{_RESET}… {cut} more lines (a taller window shows them)"]
    return "\n".join(line + _ERASE_LINE for line in lines) + _RESET


def watch_loop(app: App, render: Callable[[], None], interval: float) -> None:
    """Call `render` (one frame of the command) every `interval` seconds until Ctrl-C."""
    clock = app.injected.clock or time.time
    sleep = app.injected.sleep or time.sleep
    out = sys.stdout
    tty = out.isatty()
    command = click.get_current_context().command_path
    app.watching = True  # no gc.freeze per frame: a long watch would pin every snapshot it read
    gc.enable()  # (main() disables the collector for one-shot commands)
    frames = 0
    try:
        while True:
            app.next_frame()
            try:
                body = _render(render, tty)
            except GpuqError as exc:
                if frames == 0:
                    raise
                body = f"gpuq: error: {visible(str(exc))} (trying again in {interval:g}s)\n"
            head = ""
            if app.output == "table" and not app.no_headers:
                head = f"every {interval:g}s: {command} | wall time {format_time(int(clock()))} | Ctrl-C stops\n\n"
            with writing_stdout():
                if tty:
                    rows = shutil.get_terminal_size().lines
                    out.write((_CLEAR if frames == 0 else "") + _HOME + _fit(head + body, max(rows - 1, 2))
                              + _ERASE_BELOW)  # fmt: skip
                else:
                    out.write(("\n" if frames and head else "") + head + body)
                out.flush()
            frames += 1
            sleep(interval)
    except KeyboardInterrupt:
        if tty:
            out.write("\n")
            out.flush()
