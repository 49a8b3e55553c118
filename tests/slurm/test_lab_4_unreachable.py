"""slurmctld stopped mid-run: a clear Unreachable (exit 3) naming the controller, then recovery."""

from __future__ import annotations

import os
import signal
import time

import pytest
from click.testing import CliRunner

from gpuq.backends.slurm import SlurmBackend
from gpuq.cli.main import cli
from gpuq.errors import Unreachable
from tests.slurm import lab

pytestmark = [pytest.mark.slurm, pytest.mark.usefixtures("slurm_lab")]


def test_controller_stopped_mid_run() -> None:
    backend = SlurmBackend(timeout_s=15)
    assert backend.snapshot().nodes  # up: the same backend object reads fine
    pidfile = lab.LAB_DIR / "run" / "slurmctld.pid"
    pid = int(pidfile.read_text().strip())
    os.kill(pid, signal.SIGTERM)
    lab.wait_for(lambda: not os.path.exists(f"/proc/{pid}"), 30, "slurmctld to exit")
    try:
        started = time.monotonic()
        with pytest.raises(Unreachable, match=r"127\.0\.0\.1:6817"):
            backend.snapshot()
        assert time.monotonic() - started < 20
        result = CliRunner().invoke(cli, ["--backend", "slurm", "queue", "-o", "json"], prog_name="gpuq")
        assert result.exit_code == 3, result.output
        assert "unreachable" in result.output.lower() or "did not answer" in result.output
    finally:
        lab.start(lab.current_mode())
    assert SlurmBackend().snapshot().nodes
