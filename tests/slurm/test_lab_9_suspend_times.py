"""On the real lab: `scontrol suspend` then `resume` of a running job leaves the job's start as
Slurm keeps it (StartTime does not move on resume), so the start and the queue wait gpuq reads
are the ones it read before the suspension; the SLA figures do not take the suspension in."""

from __future__ import annotations

import time

import pytest

from gpuq.backends.slurm import SlurmBackend
from tests.slurm import lab

pytestmark = [pytest.mark.slurm, pytest.mark.usefixtures("qos_lab")]


def test_suspend_and_resume_keep_the_start_and_the_wait_gpuq_reads() -> None:
    backend = SlurmBackend()
    job = lab.sbatch(gpus=1, qos="low", name="suspended")
    lab.wait_running([job])
    before = backend.snapshot().job(job)
    assert before is not None and before.start_time is not None
    lab.sh(["scontrol", "suspend", job])
    lab.wait_for(lambda: lab.states()[job][0] == "SUSPENDED", 20, "the job to be suspended")
    time.sleep(3)  # (the suspension must last whole seconds for a moved start to show)
    lab.sh(["scontrol", "resume", job])
    lab.wait_for(lambda: lab.states()[job][0] == "RUNNING", 20, "the job to run again")
    after = backend.snapshot().job(job)
    assert after is not None and after.state.value == "running"
    assert after.start_time == before.start_time
    assert after.wait_s(0.0) == before.wait_s(0.0)
    lab.cancel_all()
