"""A command run as the console script that kept what it built (`App.keep`, `ProcessEnd`) ends
the process at once once its output is flushed: all of the output, the same exit code, and no
freeing (nor atexit handlers) after it. Anything else ends as Python ends it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpuq.cli.options import PROCESS_END, App, GlobalOptions

# An interpreter that registers an atexit handler, then runs gpuq's console-script entry.
_RUN = (
    "import atexit, sys\n"
    "atexit.register(lambda: print('atexit ran', file=sys.stderr))\n"
    "from gpuq.cli.main import main\n"
    "main(sys.argv[1:])\n"
)


def _buffered_env(**extra: str) -> dict[str, str]:
    """The environment, with stdout block-buffered into a pipe whatever PYTHONUNBUFFERED says here."""
    return {**{k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}, **extra}


def _gpuq(xdg: dict[str, Path], *args: str) -> subprocess.CompletedProcess[str]:
    env = _buffered_env(XDG_CONFIG_HOME=str(xdg["config"]), XDG_STATE_HOME=str(xdg["state"]))
    return subprocess.run([sys.executable, "-c", _RUN, *args], capture_output=True, text=True, env=env,  # noqa: S603
                          timeout=120, check=False)  # fmt: skip


def test_a_queue_ends_at_once_with_all_of_its_output(xdg: dict[str, Path], small: str) -> None:
    proc = _gpuq(xdg, "--snapshot", small, "queue", "-o", "json", "--state", "all")
    assert proc.returncode == 0, proc.stderr
    assert "atexit ran" not in proc.stderr  # ended by os._exit, past the handlers
    document = json.loads(proc.stdout)
    with open(small, "rb") as stream:
        assert len(document["jobs"]) == len(json.load(stream)["jobs"])


def test_the_end_flushes_what_is_still_buffered_and_keeps_the_code() -> None:
    code = (
        "import sys\n"
        "from gpuq.cli.main import _end_at_once\n"
        "print('still buffered', end='')\n"  # (stdout is a pipe: block-buffered)
        "print('and on stderr', end='', file=sys.stderr)\n"
        "_end_at_once(3)\n"
        "print('not reached')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,  # noqa: S603
                          env=_buffered_env(), check=False)  # fmt: skip
    assert (proc.returncode, proc.stdout, proc.stderr) == (3, "still buffered", "and on stderr")


def test_a_message_as_the_code_is_left_to_python() -> None:
    """`sys.exit("text")`: Python prints the text and exits with 1; `_end_at_once` returns."""
    code = "from gpuq.cli.main import _end_at_once\n_end_at_once('a message')\nprint('returned')\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,  # noqa: S603
                          check=False)  # fmt: skip
    assert (proc.returncode, proc.stdout) == (0, "returned\n")


def test_a_command_that_kept_nothing_ends_as_python_ends_it(xdg: dict[str, Path], small: str) -> None:
    proc = _gpuq(xdg, "--snapshot", small, "sla", "-o", "json")
    assert proc.returncode == 0, proc.stderr
    assert "atexit ran" in proc.stderr


def test_an_error_keeps_its_exit_code_and_message(xdg: dict[str, Path], small: str) -> None:
    proc = _gpuq(xdg, "--snapshot", small, "queue", "--state", "nosuch")
    assert proc.returncode == 2
    assert "--state: unknown state 'nosuch'" in proc.stderr


def test_nothing_is_kept_in_process_or_under_watch(monkeypatch: pytest.MonkeyPatch) -> None:
    """Unarmed (gpuq called in process, as by tests), `keep` holds nothing; armed, a watching
    command (a new view every frame) holds nothing either."""
    monkeypatch.setattr(PROCESS_END, "kept", [])
    app = App(GlobalOptions())
    app.keep("view")
    assert PROCESS_END.kept == []
    monkeypatch.setattr(PROCESS_END, "armed", True)
    app.watching = True
    app.keep("frame")
    assert PROCESS_END.kept == []
    app.watching = False
    app.keep("view")
    assert PROCESS_END.kept == ["view"]
