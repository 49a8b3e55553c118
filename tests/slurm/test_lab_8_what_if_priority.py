"""What-ifs at slurmctld's own priority, on the real lab (preempt/qos, priority/multifactor): the
priority gpuq previews a --qos what-if or a held job at is the one slurmctld then gives the job,
and gpuq's plan preempts as many jobs as slurmctld did; unknown QOS/partitions are usage errors;
`bump --urgent` never lowers a priority."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.slurm import lab

pytestmark = [pytest.mark.slurm, pytest.mark.usefixtures("qos_lab")]


def _gpuq(*args: str) -> subprocess.CompletedProcess[str]:
    gpuq = Path(sys.executable).with_name("gpuq")
    env = {k: v for k, v in os.environ.items() if k not in ("GPUQ_SLURM_URGENT_QOS", "GPUQ_SLURM_EXEMPT_QOS")}
    return subprocess.run(  # noqa: S603
        [str(gpuq), "--backend", "slurm", *args], capture_output=True, text=True, timeout=120, check=False, env=env
    )


#: gpuq's policy with no protections of its own (the shipped defaults protect jobs younger than
#: 30 minutes, which slurmctld's lab set-up does not): what these tests compare is the priority
#: scale, so gpuq's plan and slurmctld's may then agree job for job
UNGUARDED = """[preemption]
delta = 0
min_runtime = "0s"
max_preemptions_per_day = 0
default_checkpoint_interval = "0s"
"""


_policy: list[Path] = []


@pytest.fixture(scope="module", autouse=True)
def _unguarded_policy(tmp_path_factory: pytest.TempPathFactory) -> None:
    path = tmp_path_factory.mktemp("policy") / "unguarded.toml"
    path.write_text(UNGUARDED)
    _policy[:] = [path]


def _preview(*args: str) -> dict[str, Any]:
    proc = _gpuq("--policy", str(_policy[0]), "preview", *args, "-o", "json")
    assert proc.returncode == 0, proc.stderr
    doc: dict[str, Any] = json.loads(proc.stdout)
    return doc


def _priority(job: str) -> int:
    return int(lab.sh(["squeue", "-h", "-j", job, "-O", "PriorityLong"]).strip())


def _fill_low() -> list[str]:
    lab.cancel_all()
    ids = [lab.sbatch(gpus=1, qos="low") for _ in range(8)]
    lab.wait_running(ids)
    return ids


def test_a_qos_what_if_is_counted_at_the_priority_slurmctld_gives_such_a_job() -> None:
    _fill_low()
    doc = _preview("--gpus", "2", "--qos", "urgent")
    offset = lab.ctld_log_offset()
    urgent = lab.sbatch(gpus=2, qos="urgent")
    lab.wait_running([urgent], timeout=60)
    preempted = lab.preempted_since(offset)
    assert doc["request"]["priority"] == _priority(urgent)  # 101000 here, not the QOS's Priority 1000
    assert doc["would_preempt"] is True  # was "would not preempt: priority gap -1000"
    assert len(doc["victims"]) == len(preempted) == 2
    assert {v["id"] for v in doc["native"]["victims"]} == preempted


def test_a_held_job_is_previewed_at_its_priority_on_release() -> None:
    _fill_low()
    held = lab.sbatch("-H", gpus=2, qos="urgent")
    lab.wait_for(lambda: lab.states().get(held, ("", "", ""))[1].startswith("JobHeld"), 30, f"job {held} held")
    assert _priority(held) == 0
    table = _gpuq("preview", held)
    assert table.returncode == 0, table.stderr
    assert table.stdout.startswith(f"note: job {held} is held (JobHeld"), table.stdout
    doc = _preview(held)
    assert doc["request"]["priority_note"].startswith(f"job {held} is held (JobHeld")
    offset = lab.ctld_log_offset()
    lab.sh(["scontrol", "release", held])
    lab.wait_running([held], timeout=60)
    preempted = lab.preempted_since(offset)
    assert doc["request"]["priority"] == _priority(held)
    assert doc["would_preempt"] is True
    assert len(doc["victims"]) == len(preempted) == 2
    assert {v["id"] for v in doc["native"]["victims"]} == preempted


@pytest.mark.parametrize(
    ("flag", "known"),
    [("--qos", "(QOS: exempt, low, lowgrace, normal, urgent)"), ("--partition", "(partitions: debug, gpu)")],
)
def test_an_unknown_qos_or_partition_is_a_usage_error(flag: str, known: str) -> None:
    proc = _gpuq("preview", "--gpus", "2", flag, "nosuch", "--priority", "5")
    assert proc.returncode == 2, proc.stdout
    assert f"{flag} nosuch: no such" in proc.stderr and known in proc.stderr
    assert "Traceback" not in proc.stderr


def test_bump_urgent_never_lowers_a_running_job() -> None:
    lab.cancel_all()
    running = [lab.sbatch(gpus=1, qos="normal") for _ in range(8)]
    lab.wait_running(running)
    waiting = lab.sbatch(gpus=1, qos="low")  # low may preempt nothing: it waits, below the running jobs
    lab.wait_for(lambda: lab.states().get(waiting, ("",))[0] == "PENDING", 30, f"job {waiting} pending")
    target = running[0]
    before = _priority(target)
    assert before > _priority(waiting)
    proc = _gpuq("bump", target, "--urgent", "--yes")  # no urgent QOS: --urgent means the pending top
    assert proc.returncode == 0, proc.stderr
    assert f"job {target} is already at priority {before}, above the top of the pending queue" in proc.stdout
    assert "nothing changed" in proc.stdout
    assert _priority(target) == before
