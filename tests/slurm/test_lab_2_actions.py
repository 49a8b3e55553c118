"""bump / exempt / preempt round trips on the real lab, observed through squeue and sacct: each
prepared (a dry run is a plan never applied), then applied."""

from __future__ import annotations

import os
import subprocess
import time
from typing import Any

import pytest
from click.testing import CliRunner

from gpuq.backends.base import PriorityChange
from gpuq.backends.slurm import SlurmBackend
from gpuq.backends.slurm import runner as runner_module
from gpuq.cli.main import cli
from gpuq.errors import JobChanged, NotFound, PermissionDenied
from gpuq.model import from_epoch
from gpuq.policy.config import Mode
from tests.slurm import lab

pytestmark = [pytest.mark.slurm, pytest.mark.usefixtures("qos_lab")]


def _field(job_id: str, name: str) -> str:
    return lab.sh(["squeue", "-h", "-j", job_id, "-O", f"{name}:|"]).strip().rstrip("|")


@pytest.fixture
def backend() -> SlurmBackend:
    return SlurmBackend(urgent_qos="urgent", exempt_qos="exempt", graceful_wait_s=5.0)


@pytest.fixture
def blocked() -> str:
    """A pending low job: both nodes are full of non-preemptable urgent jobs."""
    lab.cancel_all()
    full = [lab.sbatch(gpus=4, qos="urgent", name="wall") for _ in range(2)]
    lab.wait_running(full)
    job = lab.sbatch(gpus=1, qos="low", name="blocked")
    lab.wait_for(lambda: lab.states()[job][1] in ("Resources", "Priority"), 20, "the job to pend")
    return job


def test_bump_priority_round_trip(backend: SlurmBackend, blocked: str) -> None:
    plan = backend.prepare_bump(blocked, PriorityChange(to=424242), reason="test")
    assert plan.commands == (("scontrol", "update", f"JobId={blocked}", "Priority=424242"),)
    assert _field(blocked, "PriorityLong") != "424242"  # a prepared plan (a dry run) changes nothing
    done = backend.apply(plan)
    assert done.commands == plan.commands
    assert _field(blocked, "PriorityLong") == "424242"
    assert done.before["priority"] != 424242
    assert done.after["priority"] == 424242
    snap = backend.snapshot()
    assert snap.job(blocked) is not None
    assert snap.job(blocked).priority == 424242


def test_relative_bump_and_slurms_highest_priority(backend: SlurmBackend, blocked: str) -> None:
    # An admin-set priority is sticky (multifactor no longer recomputes it): a fixed start.
    backend.apply(backend.prepare_bump(blocked, PriorityChange(to=424000), reason="test"))
    before = int(_field(blocked, "PriorityLong"))
    assert before == 424000
    plan = backend.prepare_bump(blocked, PriorityChange(by=7), reason="test")
    backend.apply(plan)
    assert int(_field(blocked, "PriorityLong")) == before + 7
    # The guard: applied again, the plan finds the job no longer at the priority it was made on.
    with pytest.raises(JobChanged, match=rf"priority {before} -> {before + 7}"):
        backend.apply(plan)
    assert int(_field(blocked, "PriorityLong")) == before + 7
    # The top of the range gpuq offers is what scontrol accepts.
    top = backend.capabilities.priority_range[1]
    backend.apply(backend.prepare_bump(blocked, PriorityChange(to=top), reason="test"))
    assert _field(blocked, "PriorityLong") == str(top)


def test_bump_urgent_moves_to_the_urgent_qos(backend: SlurmBackend, blocked: str) -> None:
    result = backend.apply(backend.prepare_bump(blocked, PriorityChange(urgent=True), reason="test"))
    assert _field(blocked, "QOS") == "urgent"
    assert result.before["qos"] == "low"
    assert result.after["qos"] == "urgent"


def test_exempt_round_trip_on_a_pending_job(backend: SlurmBackend, blocked: str) -> None:
    until = time.time() + 3600
    on = backend.apply(backend.prepare_exempt(blocked, until, reason="test"))
    assert _field(blocked, "QOS") == "exempt"
    job = backend.snapshot().job(blocked)
    assert job is not None
    assert job.exempt_until == from_epoch(int(until))
    assert "gpuq:prev-qos=low" in on.after["admin_comment"]
    off = backend.apply(backend.prepare_exempt(blocked, None, reason="test"))
    assert _field(blocked, "QOS") == "low"
    assert off.after["exempt_until"] is None
    job = backend.snapshot().job(blocked)
    assert job is not None
    assert job.exempt_until is None


def test_preempt_requeue_then_history_counts_it(backend: SlurmBackend) -> None:
    lab.cancel_all()
    job = lab.sbatch(gpus=1, qos="low", name="victim")
    lab.wait_running([job])
    result = backend.apply(backend.prepare_preempt(job, Mode.REQUEUE, reason="test"))
    assert result.before["state"] == "running"
    assert result.after["state"] == "pending"
    assert lab.states()[job][0] == "PENDING"

    # The REQUEUED run reaches slurmdbd a little later; the snapshot then counts the preemption.
    # (history_ttl_s=0: poll sacct each time rather than reuse a read younger than the TTL.)
    def counted() -> bool:
        j = SlurmBackend(history_ttl_s=0).snapshot().job(job)
        return j is not None and len(j.preemption_times) == 1

    lab.wait_for(counted, 30, "sacct to record the requeue")


def test_preempt_cancel_and_graceful(backend: SlurmBackend) -> None:
    lab.cancel_all()
    a = lab.sbatch(gpus=1, qos="low", name="cancel-me")
    b = lab.sbatch(gpus=1, qos="low", name="graceful")
    lab.wait_running([a, b])
    backend.apply(backend.prepare_preempt(a, Mode.CANCEL, reason="test"))
    lab.wait_for(lambda: lab.states().get(a, ("CANCELLED",))[0] in ("CANCELLED", "COMPLETING"), 20, "cancel")
    started = time.monotonic()
    result = backend.apply(backend.prepare_preempt(b, Mode.GRACEFUL, reason="test"))
    assert time.monotonic() - started < 20
    assert [c[0] for c in result.commands] == ["scancel", "scontrol"]
    assert lab.states()[b][0] == "PENDING"


def test_unknown_job_is_not_found(backend: SlurmBackend) -> None:
    with pytest.raises(NotFound, match="no job 999999"):
        backend.prepare_bump("999999", PriorityChange(to=5), reason="t")


class _AsTestUser:
    """Stands in for the runner's `subprocess`: every Slurm CLI runs as the unprivileged user.

    (The venv's Python may live where that user cannot execute it, so gpuq itself stays in this
    process; what slurmctld sees is a request from uid gpuqtest.)
    """

    TimeoutExpired = subprocess.TimeoutExpired
    PIPE = subprocess.PIPE

    @staticmethod
    def _wrap(argv: list[str]) -> list[str]:
        return ["runuser", "-u", lab.TEST_USER, "--", "env", f"SLURM_CONF={os.environ['SLURM_CONF']}", *argv]

    @staticmethod
    def run(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.run(_AsTestUser._wrap(argv), **kwargs)  # noqa: S603

    @staticmethod
    def Popen(argv: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:  # noqa: N802 - stands in for subprocess.Popen
        return subprocess.Popen(_AsTestUser._wrap(argv), **kwargs)  # noqa: S603


def test_plain_user_gets_permission_denied(blocked: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner_module, "subprocess", _AsTestUser)
    backend = SlurmBackend()
    assert backend.snapshot().job(blocked) is not None  # reading is allowed
    bump = backend.prepare_bump(blocked, PriorityChange(to=99), reason="t")  # preparing only reads
    with pytest.raises(PermissionDenied, match="operator or admin") as denied:
        backend.apply(bump)
    assert "Invalid user id" in str(denied.value)
    preempt = backend.prepare_preempt(lab.states_running_one(), Mode.REQUEUE, reason="t")
    with pytest.raises(PermissionDenied, match="Access/permission denied"):
        backend.apply(preempt)
    assert _field(blocked, "PriorityLong") != "99"
    # The CLI turns it into exit code 4.
    result = CliRunner().invoke(cli, ["--backend", "slurm", "bump", blocked, "--to", "99", "--yes"], prog_name="gpuq")
    assert result.exit_code == 4, result.output
