"""`gpuq overview | head -1`: a reader that stops early ends gpuq quietly with exit 0."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def _env(xdg: dict[str, Path]) -> dict[str, str]:
    return {**os.environ, "XDG_CONFIG_HOME": str(xdg["config"]), "XDG_STATE_HOME": str(xdg["state"])}


@pytest.mark.parametrize(
    "command",
    [["overview"], ["overview", "-o", "csv"], ["preemptions"], ["queue"], ["queue", "-o", "json"], ["gpus"], ["sla"]],
    ids=" ".join,
)
def test_a_closed_pipe_exits_0_without_a_word(xdg: dict[str, Path], small: str, command: list[str]) -> None:
    """The reader is gone before gpuq writes: every write meets EPIPE, deterministically."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run(  # noqa: S603
            [sys.executable, "-m", "gpuq", "--snapshot", small, *command], stdout=write_end,
            stderr=subprocess.PIPE, env=_env(xdg), timeout=60, check=False,
        )  # fmt: skip
    finally:
        os.close(write_end)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == b""


def test_head_1(xdg: dict[str, Path], small: str) -> None:
    """As in a shell: the reader takes the first line and goes away."""
    proc = subprocess.Popen(  # noqa: S603
        [sys.executable, "-m", "gpuq", "--snapshot", small, "overview"], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, env=_env(xdg),
    )  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 0, err
    assert first.startswith(b"lab (demo) at 2026-11-29T18:00:00Z")
    assert err == b""
