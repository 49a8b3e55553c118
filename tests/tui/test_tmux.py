"""The real console in a real terminal: `gpuq --backend demo tui` started inside tmux, driven with
`send-keys`, read back with `capture-pane`, resized with `resize-window`, and quit with `q`.

Each test runs its own tmux server (`tmux -L <unique socket>`, no user config) with private XDG
dirs, so parallel runs and the operator's own tmux never meet; the server is killed afterwards
whatever happened. gpuq runs under a two-line `sh` that writes its exit status to a file (tmux's
own `#{pane_dead_status}` is not reliable: tmux 3.3 can miss the SIGCHLD and leave the pane dead
with its process a zombie). The console runs on the real clock (it is another process):
what is asserted is the frame (the view names, the headers, the redraw at each size), never a
time or a number of the simulation.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

TMUX = shutil.which("tmux")
#: the first start of a demo cluster warms its simulation up; a loaded CI machine is slow
START_S = 90.0
STEP_S = 30.0


def gpuq_command() -> list[str]:
    """The venv's `gpuq` console script (what an operator runs), else `python -m gpuq`."""
    script = Path(sys.executable).with_name("gpuq")
    return [str(script)] if script.exists() else [sys.executable, "-m", "gpuq"]


class Terminal:
    """One tmux server with one 80×24 window running `command`."""

    def __init__(self, tmp_path: Path, command: list[str]) -> None:
        if TMUX is None:
            raise AssertionError("tmux is not installed (scripts/bootstrap.sh dev installs it on Debian)")
        self.tmux_path = TMUX
        self.socket = f"gpuq-test-{uuid.uuid4().hex[:12]}"
        conf = tmp_path / "tmux.conf"
        conf.write_text("set -g remain-on-exit on\nset -g status off\n")
        env = {f"XDG_{n.upper()}_HOME": str(tmp_path / f"xdg-{n}") for n in ("config", "state", "cache", "data")}
        self.env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8", "TERM": "xterm-256color",
                    **env}  # fmt: skip
        # (the pane's TERM is tmux's own, as for an operator's)
        extra = [a for key, value in self.env.items() if key != "TERM" for a in ("-e", f"{key}={value}")]
        self.status_file = tmp_path / f"{self.socket}.status"
        wrapper = ["sh", "-c", 'out="$1"; shift; "$@"; echo "$?" > "$out"', "sh", str(self.status_file), *command]
        self.tmux("-f", str(conf), "new-session", "-d", "-s", "gpuq", "-x", "80", "-y", "24", *extra, "--", *wrapper)

    def tmux(self, *args: str) -> str:
        argv = [self.tmux_path, "-L", self.socket, *args]
        done = subprocess.run(argv, capture_output=True, text=True, env=self.env, timeout=30, check=False)  # noqa: S603 - an argument list
        if done.returncode != 0:
            raise AssertionError(f"tmux {' '.join(args[:2])} failed: {done.stderr.strip()}")
        return done.stdout

    def screen(self) -> list[str]:
        return self.tmux("capture-pane", "-p", "-t", "gpuq").split("\n")[:-1]

    def text(self) -> str:
        """The screen's lines that are not blank (for messages)."""
        return "\n".join(line for line in self.screen() if line.strip())

    def press(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "gpuq", *keys)

    def pane(self, fmt: str) -> str:
        return self.tmux("display-message", "-p", "-t", "gpuq", fmt).strip()

    def wait(self, what: str, ready: Callable[[list[str]], bool], timeout: float = STEP_S) -> list[str]:
        """Poll the screen until `ready(lines)` holds; fail with what the screen shows."""
        deadline = time.monotonic() + timeout
        lines = self.screen()
        while not ready(lines):
            if self.status_file.exists():
                raise AssertionError(f"gpuq exited (status {self.status_file.read_text().strip()}) before {what}; "
                                     f"the screen:\n{self.text()}")  # fmt: skip
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; the screen:\n" + self.text())
            time.sleep(0.1)
            lines = self.screen()
        assert not any("Traceback" in line for line in lines), "\n".join(lines)
        return lines

    def exit_status(self, timeout: float = STEP_S) -> int:
        """gpuq's exit status, as the wrapper wrote it."""
        deadline = time.monotonic() + timeout
        while not (self.status_file.exists() and self.status_file.read_text().strip()):
            if time.monotonic() > deadline:
                raise AssertionError("gpuq did not exit; the screen:\n" + self.text())
            time.sleep(0.1)
        return int(self.status_file.read_text())

    def close(self) -> None:
        argv = [self.tmux_path, "-L", self.socket, "kill-server"]
        subprocess.run(argv, capture_output=True, env=self.env, timeout=30, check=False)  # noqa: S603 - an argument list


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Callable[[list[str]], Terminal]]:
    started: list[Terminal] = []

    def start(args: list[str]) -> Terminal:
        term = Terminal(tmp_path, [*gpuq_command(), *args])
        started.append(term)
        return term

    try:
        yield start
    finally:
        for term in started:
            term.close()


def status_line(lines: list[str]) -> str:
    return lines[0] if lines else ""


def shows(view: str, header: str) -> Callable[[list[str]], bool]:
    """The status bar names `view` and a line of the screen starts with the table's `header`."""

    def ready(lines: list[str]) -> bool:
        return f"· {view} ·" in status_line(lines) and any(line.lstrip().startswith(header) for line in lines)

    return ready


def queue_header(lines: list[str]) -> str:
    return next(line for line in lines if line.startswith("ID "))


def test_the_console_in_tmux_views_help_commands_resize_and_quit(terminal: Callable[[list[str]], Terminal]) -> None:
    term = terminal(["--backend", "demo", "tui"])
    lines = term.wait("the queue", shows("Queue", "ID "), timeout=START_S)
    assert len(lines) == 24 and all(len(line) <= 80 for line in lines)
    assert status_line(lines).startswith("gpuq · [")
    narrow = queue_header(lines).split()
    assert "NAME" not in narrow  # 80 columns: the least important columns are dropped

    term.press("2")
    term.wait("the GPUs view", shows("GPUs", "NODE"))
    term.press("3")
    term.wait("the SLA view", shows("SLA", "CLASS"))
    term.press("?")
    term.wait("the help", lambda ls: any("Keys (rebind any action" in line for line in ls))
    term.press("Escape")
    lines = term.wait("the help closed", lambda ls: not any("Keys (rebind" in line for line in ls))
    assert shows("SLA", "CLASS")(lines)
    term.press(":")
    term.wait("the prompt", lambda ls: any("view (queue, gpus" in line for line in ls))
    term.press("queue", "Enter")
    term.wait("the queue again", shows("Queue", "ID "))

    term.tmux("resize-window", "-t", "gpuq", "-x", "200", "-y", "60")
    # redrawn at the new size: the columns dropped at 80 are back
    lines = term.wait("the queue at 200×60", lambda ls: len(ls) == 60 and shows("Queue", "ID ")(ls)
                      and {"NAME", "REASON"} <= set(queue_header(ls).split()))  # fmt: skip
    assert len(queue_header(lines).split()) > len(narrow)
    assert all(len(line) <= 200 for line in lines)

    term.tmux("resize-window", "-t", "gpuq", "-x", "60", "-y", "20")
    lines = term.wait("the queue at 60×20", lambda ls: len(ls) == 20 and shows("Queue", "ID ")(ls)
                      and len(queue_header(ls).split()) < len(narrow))  # fmt: skip
    assert all(len(line) <= 60 for line in lines)

    # resizes in a burst, while refreshes go on (no wait between them), down to a sliver
    for width, height in ((120, 30), (20, 5), (150, 40), (1, 1), (100, 30)):
        term.tmux("resize-window", "-t", "gpuq", "-x", str(width), "-y", str(height))
    lines = term.wait("the queue at 100×30", lambda ls: len(ls) == 30 and shows("Queue", "ID ")(ls)
                      and max(len(line) for line in ls) > 80)  # fmt: skip
    term.press("2")
    term.wait("the GPUs view after the resizes", shows("GPUs", "NODE"))

    term.press("q")
    assert term.exit_status() == 0


def test_plain_gpuq_on_a_terminal_opens_the_console(terminal: Callable[[list[str]], Terminal]) -> None:
    term = terminal(["--backend", "demo"])
    term.wait("the queue", shows("Queue", "ID "), timeout=START_S)
    term.press("q")
    assert term.exit_status() == 0
