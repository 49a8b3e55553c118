"""The read-path shortcuts on the real lab (qos mode): GPU indexes from a full detail read run
beside squeue, or kept in the disk cache for running jobs, equal those read one job at a time, and
sacct's QOS ids named by slurmctld equal the names sacct prints itself."""

from __future__ import annotations

import json
import time

import pytest

from gpuq.backends.slurm import SlurmBackend
from gpuq.backends.slurm.diskcache import SlurmDiskCache
from gpuq.model import Snapshot
from tests.slurm import lab

pytestmark = [pytest.mark.slurm, pytest.mark.usefixtures("qos_lab")]


def _names_only() -> SlurmBackend:
    """The fallback: slurmctld names no QOS, so sacct is asked for names (its own QOS lookup)."""
    backend = SlurmBackend(persist=False)
    backend.configs.qos_names = lambda: None  # type: ignore[method-assign]
    return backend


def _indexes(snap: Snapshot, ids: list[str]) -> dict[str, tuple[int, dict[str, tuple[int | None, ...]]]]:
    return {j.id: (j.gpus, dict(j.allocation)) for j in snap.jobs if j.id in ids}


def test_many_holders_path_gives_the_one_by_one_indexes() -> None:
    lab.cancel_all()
    ids = [lab.sbatch(gpus=g, qos="normal", name="holder") for g in (1, 2, 1, 2, 1, 1)]  # all 8 GPUs
    lab.wait_running(ids)
    one = SlurmBackend(persist=False)
    reference = _indexes(one.snapshot(), ids)
    assert one.detail_read == "one-by-one"
    # Every GPU of the lab, each held once, with a real index.
    held = [(node, i) for _gpus, alloc in reference.values() for node, idx in alloc.items() for i in idx]
    assert len(held) == len(set(held)) == 8 and None not in {i for _n, i in held}
    assert {g for g, _alloc in reference.values()} == {1, 2}
    first = SlurmBackend(detail_one_by_one_max=2)  # no hint yet: one full read after squeue
    assert _indexes(first.snapshot(), ids) == reference
    assert first.detail_read == "full" and first.gpu_holders == 0  # all 6 kept for the next read
    # As if all 6 had started since: none kept, and the last read had to read 6.
    path = SlurmDiskCache("").path
    data = json.loads(path.read_text())
    data["queue"].update(gpu_holders=6, held={})
    path.write_text(json.dumps(data))
    second = SlurmBackend(detail_one_by_one_max=2)  # the next invocation: the full read beside squeue
    assert _indexes(second.snapshot(), ids) == reference
    assert second.detail_read == "beside"
    lab.cancel_all()


def test_running_jobs_indexes_come_from_the_cache_until_requeued() -> None:
    lab.cancel_all()
    ids = [lab.sbatch(gpus=1, qos="normal", name="holder") for _ in range(8)]  # all 8 GPUs
    lab.wait_running(ids)
    reference = _indexes(SlurmBackend(persist=False).snapshot(), ids)
    first = SlurmBackend(detail_one_by_one_max=2)  # 8 > 2: the full read
    assert _indexes(first.snapshot(), ids) == reference and first.detail_read == "full"
    second = SlurmBackend(detail_one_by_one_max=2)  # the next invocation: no scontrol detail read
    assert _indexes(second.snapshot(), ids) == reference
    assert second.detail_read == "none" and second.detail_cached == 8 and second.gpu_holders == 0

    # A requeued job starts a new run (a new StartTime, perhaps other GPUs): it is read again.
    job = ids[0]
    lab.sh(["scontrol", "requeue", job])
    lab.start_requeued(job)
    fresh = _indexes(SlurmBackend(persist=False).snapshot(), ids)
    third = SlurmBackend(detail_one_by_one_max=2)
    assert _indexes(third.snapshot(), ids) == fresh
    assert third.detail_read == "one-by-one" and third.detail_cached == 7 and third.gpu_holders == 1
    lab.cancel_all()


def test_sacct_with_qos_ids_equals_sacct_with_names() -> None:
    backend = SlurmBackend(persist=False)
    names = backend.configs.qos_names()
    assert names is not None
    assert set(names.values()) == set(backend.preempt_config(fresh=True).qos)
    # A run of its own, so the window holds one on a fresh lab too; then a closed window: nothing
    # runs, and records reach slurmdbd a few seconds late, so wait for this one's to be read back.
    lab.cancel_all()
    job = lab.sbatch(gpus=1, qos="urgent", name="sacct-ids", sleep=1)
    lab.wait_for(lambda: job not in lab.states(), 60, f"job {job} to finish")
    until = time.time() + 1
    lab.wait_for(lambda: any(j.id == job for j in backend.history(until - 86400, until)), 60, "its sacct record")
    # Earlier tests' records may still be settling in slurmdbd (a job preempted and cancelled
    # moments ago): compare reads between which nothing changed, read by id again to know.
    settle_by = time.monotonic() + 60
    while True:
        by_id = backend.history(until - 86400, until)
        by_name = _names_only().history(until - 86400, until)
        if by_id == backend.history(until - 86400, until) or time.monotonic() > settle_by:
            break
        time.sleep(1)
    assert by_id == by_name
    assert [j.job_class for j in by_id if j.id == job] == ["urgent"]  # (an id read as a name would not say so)
