"""A FIFO, a device or a socket given where gpuq reads a file is refused before it is opened:
opening a FIFO that no one writes would block for ever (a separate process, each with a time
limit, so that a regression fails instead of hanging the suite)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.parametrize(
    ("args", "what"),
    [
        (["sla", "--trace", "{fifo}"], "trace file"),
        (["replay", "{fifo}"], "trace file"),
        (["--snapshot", "{fifo}", "queue"], "snapshot file"),
        (["tui", "--replay", "{fifo}"], "recording"),
    ],
    ids=["sla-trace", "replay", "snapshot", "tui-replay"],
)
def test_a_fifo_is_refused_not_waited_on(xdg: dict[str, Path], tmp_path: Path, args: list[str], what: str) -> None:
    fifo = tmp_path / "trace.fifo"
    os.mkfifo(fifo)
    argv = [a.replace("{fifo}", str(fifo)) for a in args]
    env = {**os.environ, "XDG_CONFIG_HOME": str(xdg["config"]), "XDG_STATE_HOME": str(xdg["state"])}
    proc = subprocess.run(  # noqa: S603
        [sys.executable, "-m", "gpuq", *argv], capture_output=True, text=True, env=env, timeout=60, check=False
    )
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert f"{fifo}: is a FIFO (named pipe), not a {what}" in proc.stderr
    assert "Traceback" not in proc.stderr
