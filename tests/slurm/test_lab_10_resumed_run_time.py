"""On the real lab: after `scontrol suspend` and `resume` gpuq's one-job read (`read_job`,
``scontrol show job -d -o ID``) and its snapshot (squeue, then the job's details read again once
for the resume) take the time the job spent suspended from Slurm's SuspendTime/SecsPreSuspend:
the queue wait is the one read before the suspension, the run time (`now − run_origin()`) leaves
the suspension out (as Slurm's RunTime does), and lost work counts from the resume."""

from __future__ import annotations

import time

import pytest

from gpuq.backends.slurm import SlurmBackend
from tests.slurm import lab

pytestmark = [pytest.mark.slurm, pytest.mark.usefixtures("qos_lab")]


def test_a_resumed_job_leaves_its_suspension_out_of_wait_and_run_time() -> None:
    backend = SlurmBackend()
    job = lab.sbatch(gpus=1, qos="low", name="resumed")
    lab.wait_running([job])
    before = backend.snapshot().job(job)
    assert before is not None and before.start_time is not None
    lab.sh(["scontrol", "suspend", job])
    lab.wait_for(lambda: lab.states()[job][0] == "SUSPENDED", 20, "the job to be suspended")
    held, _ = backend.read_job(job)
    assert held.suspended_s >= 0 and held.resumed_time is None
    time.sleep(5)  # (the suspension must last whole seconds to show in Slurm's fields)
    lab.sh(["scontrol", "resume", job])
    lab.wait_for(lambda: lab.states()[job][0] == "RUNNING", 20, "the job to run again")
    now = time.time()
    after, _ = backend.read_job(job)
    assert after.state.value == "running"
    assert after.start_time == before.start_time
    assert after.wait_s(0.0) == before.wait_s(0.0)
    assert after.suspended_s >= 5
    assert after.resumed_time is not None and after.resumed_time > before.start_time
    origin = after.run_origin()
    assert origin is not None
    wall = now - before.start_time.timestamp()
    assert now - origin <= wall - 5  # run time leaves the suspension out
    listed = backend.snapshot().job(job)  # (the snapshot path: squeue, and the details of the resumed job)
    assert listed is not None and listed.state.value == "running"
    assert (listed.suspended_s, listed.resumed_time) == (after.suspended_s, after.resumed_time)
    lab.cancel_all()
