"""The cheap revalidation of the cached reads on the real lab (qos mode): a `gpuq queue` past the
history TTL does not wait for sacct while the queue shows no change, and after a real preemption
or ``scontrol requeue`` of a running job the next one does wait and shows the new preemption."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from click.testing import CliRunner

from gpuq.backends.slurm import SlurmBackend
from gpuq.cli.main import cli
from tests.slurm import cachefile, lab

pytestmark = [pytest.mark.slurm, pytest.mark.usefixtures("qos_lab")]


def _queue() -> dict[str, dict[str, Any]]:
    """`gpuq --backend slurm queue -o json`, as an operator runs it (a new backend each time)."""
    result = CliRunner().invoke(cli, ["--backend", "slurm", "queue", "-o", "json"], prog_name="gpuq")
    assert result.exit_code == 0, result.output
    return {job["id"]: job for job in json.loads(result.stdout)["jobs"]}


def _sacct_has(job_id: str, state: str) -> bool:
    """slurmdbd holds a run of the job that ended in `state`, with its end time. (While a requeue
    is still completing, sacct shows the state with End "Unknown"; the ledger dates a lost run
    by its end, so it counts the run from the read after the end time is recorded.)"""
    out = lab.sh(["sacct", "-n", "-P", "-X", "-D", "-j", job_id, "-o", "State,End"])
    return any(
        row[0].startswith(state) and row[1] not in ("", "Unknown", "None")
        for row in (line.split("|") for line in out.splitlines())
        if len(row) >= 2
    )


def _restarts(job_id: str) -> int:
    return int(lab.sh(["squeue", "-h", "-j", job_id, "-O", "RestartCnt:|"]).strip().rstrip("|") or 0)


def test_queue_waits_for_sacct_only_after_a_preemption_or_requeue() -> None:
    lab.cancel_all()
    low = [lab.sbatch(gpus=4, qos="low", name="low") for _ in range(2)]  # both nodes full
    lab.wait_running(low)
    first = _queue()
    assert all(first[j]["preemptions"] == 0 for j in low)

    # Nothing changed: past the TTL, a ledger-free read does not wait; its cached window stays.
    cachefile.age(history=60)
    before = cachefile.read()["history"]
    quiet = SlurmBackend()
    snap = quiet.snapshot(ledger=False)
    assert quiet.history_skipped, quiet.history_wait
    assert cachefile.read()["history"]["read_until"] == before["read_until"]
    assert all(snap.job(j) is not None and not snap.job(j).preemption_times for j in low)  # type: ignore[union-attr]

    # A real preemption: an urgent job takes a GPU, slurmctld requeues one low job for it.
    offset = lab.ctld_log_offset()
    urgent = lab.sbatch(gpus=1, qos="urgent", name="urgent")
    lab.wait_running([urgent], timeout=60)
    lab.wait_for(lambda: bool(lab.preempted_since(offset) & set(low)), 30, "slurmctld to preempt a low job")
    (victim,) = lab.preempted_since(offset) & set(low)
    (other,) = set(low) - {victim}
    assert _restarts(victim) == 1
    lab.wait_for(lambda: _sacct_has(victim, "PREEMPTED"), 30, "slurmdbd to record the preemption")

    # The next queue read past the TTL sees the victim's RestartCnt grow, waits for sacct, shows it.
    cachefile.age(history=60)
    rows = _queue()
    assert rows[victim]["preemptions"] == 1, rows[victim]
    assert rows[other]["preemptions"] == 0
    assert cachefile.read()["history"]["read_until"] > before["read_until"]  # the window moved: sacct was read
    assert cachefile.read()["history"]["accounted"]["restarts"].get(victim) == 1

    # Accounted for now: the next read past the TTL no longer waits, and still shows it.
    cachefile.age(history=60)
    again = SlurmBackend()
    snap = again.snapshot(ledger=False)
    assert again.history_skipped, again.history_wait
    job = snap.job(victim)
    assert job is not None and len(job.preemption_times) == 1

    # An operator's requeue of the other, still running, low job: the same.
    assert lab.states()[other][0] == "RUNNING"
    lab.sh(["scontrol", "requeue", other])
    lab.wait_for(lambda: _sacct_has(other, "REQUEUED"), 30, "slurmdbd to record the requeue")
    # slurmdbd may answer a windowed query without the requeued run for a moment after `sacct -j`
    # shows it (seen on a loaded 2-core CI machine): until a read shows the run, every read must
    # wait for sacct again, never stand in with the cached one.
    shown = False
    deadline = time.monotonic() + 30
    while not shown and time.monotonic() < deadline:
        cachefile.age(history=60)
        waited = SlurmBackend()
        snap = waited.snapshot(ledger=False)
        assert not waited.history_skipped
        assert f"job {other} has RestartCnt 1" in waited.history_wait
        job = snap.job(other)
        assert job is not None
        shown = len(job.preemption_times) == 1
        time.sleep(0 if shown else 0.5)
    assert shown, f"no read within 30 s showed the requeue of job {other}"
    cachefile.age(history=60)
    assert _queue()[other]["preemptions"] == 1
    lab.cancel_all()
