"""Output that cannot be written is one clear error, never a traceback: a full disk (Linux's
/dev/full answers every write with ENOSPC) or a closed standard output (`gpuq … >&-`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

FULL = "gpuq: error: cannot write the output: No space left on device\n"


def _env(xdg: dict[str, Path]) -> dict[str, str]:
    # (block-buffered, as a pipe or a file is, whatever PYTHONUNBUFFERED says here)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    return {**env, "XDG_CONFIG_HOME": str(xdg["config"]), "XDG_STATE_HOME": str(xdg["state"])}


@pytest.mark.parametrize(
    "command",
    [["queue", "-o", "json"], ["queue"], ["queue", "-o", "csv"], ["gpus"], ["sla", "-o", "csv"], ["overview"],
     ["job", "201", "-o", "json"], ["snapshot"], ["audit", "--path"], ["config", "path"], ["completion", "bash"],
     ["queue", "--watch", "1"]],
    ids=" ".join,
)  # fmt: skip
def test_a_full_disk_is_one_message_and_exit_1(xdg: dict[str, Path], small: str, command: list[str]) -> None:
    assert _on_full_disk(xdg, ["--snapshot", small, *command]) == (1, FULL)


def test_a_trace_streamed_to_a_full_disk_is_one_message_and_exit_1(xdg: dict[str, Path]) -> None:
    assert _on_full_disk(xdg, ["--backend", "demo", "trace", "export", "--since", "1h"]) == (1, FULL)


def _on_full_disk(xdg: dict[str, Path], args: list[str]) -> tuple[int, str]:
    with open("/dev/full", "wb") as full:
        proc = subprocess.run([sys.executable, "-m", "gpuq", *args], stdout=full, stderr=subprocess.PIPE,  # noqa: S603
                              text=True, env=_env(xdg), timeout=60, check=False)  # fmt: skip
    return proc.returncode, proc.stderr


def test_a_closed_standard_output_is_one_message_and_exit_1(xdg: dict[str, Path], small: str) -> None:
    proc = subprocess.run(  # noqa: S603
        [sys.executable, "-m", "gpuq", "--snapshot", small, "queue"], stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True, env=_env(xdg), timeout=60, check=False,
        preexec_fn=lambda: os.close(1),  # noqa: PLW1509 - the child closes its stdout before gpuq starts
    )  # fmt: skip
    assert (proc.returncode, proc.stderr) == (1, "gpuq: error: cannot write the output: standard output is closed\n")
