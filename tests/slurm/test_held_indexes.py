"""GPU indexes kept in the disk cache for running jobs (stand-in CLIs, real 22.05 captures).

A holder whose squeue StartTime, nodes, GPU count and suspended state equal those kept with its
indexes takes them (and its suspension) from the cache; a requeue (new StartTime), a resize (other
nodes or GPU count), a suspend or a resume, a job new to the cache, or a missing or corrupt cache
is read from scontrol. The cache keeps the current holders only.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gpuq.backends.slurm.diskcache import SlurmDiskCache
from gpuq.backends.slurm.text import DELIM
from gpuq.backends.slurm.values import text_time
from gpuq.model import Job, JobState, Snapshot
from tests.slurm import cachefile
from tests.slurm.samples import LIVE, jobs_at_capture, stand_in
from tests.slurm.test_backend_fake_cli import fake  # noqa: F401 - the stand-in CLIs, by name below

pytestmark = pytest.mark.usefixtures("fake")

#: The captured queue's GPU holders (raw ids) and job 73's line: 3 GPUs on gpu1.
HOLDERS = {"65", "66", "67", "68", "72", "73"}
STATE, START, TRES_ALLOC, NODELIST = 11, 15, 19, 21


def _calls() -> list[str]:
    return Path(os.environ["FAKE_LOG"]).read_text().splitlines()


def _detail_reads() -> list[str]:
    return [c for c in _calls() if c.startswith("scontrol show job -d -o")]


def _reset_log() -> None:
    Path(os.environ["FAKE_LOG"]).write_text("")


def _indexes(snap: Snapshot) -> dict[str, tuple[int, dict[str, tuple[int | None, ...]]]]:
    return {j.id: (j.gpus, dict(j.allocation)) for j in snap.jobs if j.allocation}


def _bindir() -> Path:
    return Path(os.environ["PATH"].split(os.pathsep)[0])


def _squeue(bindir: Path, raw: str, edit: Callable[[list[str]], None]) -> None:
    """squeue shows job ``raw`` with its fields changed by ``edit`` (the rest as captured)."""
    lines = (LIVE / "squeue-format.txt").read_text().splitlines()
    for i, line in enumerate(lines):
        fields = line.split(DELIM)
        if fields[0] == raw:
            edit(fields)
            lines[i] = DELIM.join(fields)
    text = bindir.parent / "squeue-edited.txt"
    text.write_text("\n".join(lines) + "\n")
    squeue = bindir / "squeue"
    squeue.write_text(f'#!/bin/bash\necho "squeue $*" >> "$FAKE_LOG"\ncat {text}\n')


def _warm(**kw: Any) -> Snapshot:
    """A first invocation (every holder read), then a clean log."""
    snap = stand_in(**kw).snapshot()
    assert sorted(cachefile.read()["queue"]["held"]) == sorted(HOLDERS)
    _reset_log()
    return snap


@pytest.mark.parametrize("threshold", [2, 32])
def test_a_later_read_takes_every_running_jobs_indexes_from_the_cache(threshold: int) -> None:
    reference = stand_in(persist=False).snapshot()
    first = stand_in(detail_one_by_one_max=threshold)
    first.snapshot()
    assert first.detail_read == ("full" if threshold == 2 else "one-by-one") and first.detail_cached == 0
    assert first.gpu_holders == 0  # all 6 kept: the next read need read none (no full read beside squeue)
    _reset_log()
    second = stand_in(detail_one_by_one_max=threshold)
    snap = second.snapshot()
    assert _detail_reads() == []
    assert second.detail_read == "none" and second.detail_cached == 6 and second.gpu_holders == 0
    assert _indexes(snap) == _indexes(reference)
    assert jobs_at_capture(snap) == jobs_at_capture(reference)
    assert any(None not in idx for _g, alloc in _indexes(snap).values() for idx in alloc.values())


def test_a_requeued_job_is_read_again() -> None:
    _warm()
    before = cachefile.read()["queue"]["held"]["73"][0]
    _squeue(_bindir(), "73", lambda f: f.__setitem__(START, "2026-11-29T19:30:00"))  # started again
    backend = stand_in()
    backend.snapshot()
    assert _detail_reads() == ["scontrol show job -d -o 73"] and backend.detail_cached == 5
    assert cachefile.read()["queue"]["held"]["73"][0] != before  # kept under its new run


def test_a_resized_job_is_read_again() -> None:
    bindir = _bindir()
    _warm()
    # Fewer GPUs (same StartTime, as after `scontrol update NumNodes=`): read again.
    _squeue(bindir, "73", lambda f: f.__setitem__(TRES_ALLOC, f[TRES_ALLOC].replace("gres/gpu=3", "gres/gpu=2")))
    backend = stand_in()
    backend.snapshot()
    assert _detail_reads() == ["scontrol show job -d -o 73"] and backend.detail_cached == 5
    # Other nodes, same count: read again too.
    _squeue(bindir, "none", lambda f: None)  # the captured queue again
    _warm()
    _squeue(bindir, "72", lambda f: f.__setitem__(NODELIST, "gpu1"))
    backend = stand_in()
    backend.snapshot()
    assert _detail_reads() == ["scontrol show job -d -o 72"] and backend.detail_cached == 5


def test_a_job_new_to_the_cache_is_read() -> None:
    reference = stand_in(persist=False).snapshot()
    _warm()
    data = cachefile.read()
    del data["queue"]["held"]["68"]
    cachefile.write(data)
    backend = stand_in()
    snap = backend.snapshot()
    assert _detail_reads() == ["scontrol show job -d -o 68"] and backend.detail_cached == 5
    assert _indexes(snap) == _indexes(reference)
    assert sorted(cachefile.read()["queue"]["held"]) == sorted(HOLDERS)


def test_the_cache_keeps_the_current_holders_only() -> None:
    _warm()
    data = cachefile.read()
    data["queue"]["held"]["999"] = [1.0, ["gpu1"], 1, {"gpu1": [0]}, False, None]  # a job that has ended since
    cachefile.write(data)
    # ...and job 73 has ended too (squeue shows it COMPLETED).
    _squeue(_bindir(), "73", lambda f: f.__setitem__(STATE, "COMPLETED"))
    backend = stand_in()
    backend.snapshot()
    assert _detail_reads() == [] and backend.detail_cached == 5
    assert sorted(cachefile.read()["queue"]["held"]) == sorted(HOLDERS - {"73"})


@pytest.mark.parametrize(
    "spoil",
    [
        lambda path, data: path.unlink(),
        lambda path, data: path.write_text('{"format": "gpuq.slurm-cache/v1", "held": '),
        lambda path, data: path.write_text(json.dumps({**data, "queue": {**data["queue"], "held": {"73": "x"}}})),
        lambda path, data: path.write_text(
            json.dumps({**data, "queue": {**data["queue"], "held": {"73": [1.0, ["gpu1"], 3, {"gpu1": [0, None]}]}}})
        ),
        lambda path, data: path.write_text(json.dumps({**data, "queue": {**data["queue"], "held": []}})),
    ],
    ids=["missing", "truncated", "bad-entry", "bad-index", "not-a-map"],
)
def test_a_missing_or_corrupt_cache_means_reading(spoil: Callable[[Path, dict[str, Any]], None]) -> None:
    reference = stand_in(persist=False).snapshot()
    _warm()
    path = SlurmDiskCache("").path
    spoil(path, cachefile.read())
    backend = stand_in()
    snap = backend.snapshot()
    assert sorted(c.rsplit(" ", 1)[1] for c in _detail_reads()) == sorted(HOLDERS)
    assert backend.detail_cached == 0 and backend.detail_read == "one-by-one"
    assert _indexes(snap) == _indexes(reference)
    assert sorted(cachefile.read()["queue"]["held"]) == sorted(HOLDERS)  # and kept again


def test_wrong_indexes_under_another_run_are_never_shown() -> None:
    reference = stand_in(persist=False).snapshot()
    _warm()
    data = cachefile.read()
    start, nodes, gpus, _alloc, suspended, suspension = data["queue"]["held"]["73"]
    # an earlier run's
    data["queue"]["held"]["73"] = [start - 60, nodes, gpus, {nodes[0]: [5, 6, 7]}, suspended, suspension]
    cachefile.write(data)
    snap = stand_in().snapshot()
    assert _detail_reads() == ["scontrol show job -d -o 73"]
    assert _indexes(snap) == _indexes(reference)


def _job(snap: Snapshot, job_id: str) -> Job:
    found = snap.job(job_id)
    assert found is not None
    return found


def test_a_suspended_holder_runs_only_for_the_seconds_before_its_suspension() -> None:
    """Job 68 of the captures is suspended: 10 s of run (SecsPreSuspend) before it. squeue does
    not say so; the detail read does, and the cache keeps it for the reads that take the job's
    indexes from there."""
    first = stand_in().snapshot()
    second = stand_in().snapshot()  # (from the cache)
    for snap in (first, second):
        job = _job(snap, "68")
        origin = job.run_origin()
        assert job.state is JobState.SUSPENDED and origin is not None
        assert snap.now - origin == pytest.approx(10.0, abs=1e-6)  # its run time: SecsPreSuspend
        assert job.resumed_time is None  # (no resume of this run is known)


def test_a_resume_is_read_once_then_kept_with_the_indexes(tmp_path: Path) -> None:
    """A resume changes what scontrol says of the run's suspension, not its StartTime, nodes or
    GPUs: squeue's state changing is what has the job read again, once; after that the cache
    keeps the suspended time and the resume with its indexes."""
    _warm()
    _squeue(_bindir(), "68", lambda f: f.__setitem__(STATE, "RUNNING"))
    resumed = "2026-11-29T19:30:00"
    lines = (LIVE / "scontrol-show-job-d-o.txt").read_text().splitlines()
    edited = [
        line.replace("JobState=SUSPENDED", "JobState=RUNNING").replace(
            "SuspendTime=2026-11-29T19:21:08", f"SuspendTime={resumed}")
        if line.startswith("JobId=68 ") else line
        for line in lines
    ]  # fmt: skip
    assert edited != lines
    jobs = tmp_path / "jobs-after-resume.txt"
    jobs.write_text("\n".join(edited) + "\n")
    os.environ["FAKE_JOBS_FILE"] = str(jobs)
    try:
        snaps = [stand_in().snapshot()]
        assert _detail_reads() == ["scontrol show job -d -o 68"]
        _reset_log()
        snaps.append(stand_in().snapshot())
        assert _detail_reads() == []
    finally:
        del os.environ["FAKE_JOBS_FILE"]
    resume_at, start = text_time(resumed), text_time("2026-11-29T19:20:58")
    assert resume_at is not None and start is not None
    for snap in snaps:
        job = _job(snap, "68")
        assert job.state is JobState.RUNNING and job.resumed_time is not None
        assert job.resumed_time.timestamp() == resume_at
        assert job.suspended_s == resume_at - start - 10.0  # suspended from 10 s in until the resume
        assert job.start_time is not None and job.start_time.timestamp() == start  # (the first start kept)


def test_a_job_read_alone_is_read_again_by_the_next_snapshot() -> None:
    """Suspended and resumed between two reads, a job looks the same to squeue both times: a job
    read alone (`gpuq job`, every action) drops what the cache held of it, so that the next
    snapshot, in this process or the next, reads its details again: once."""
    _warm()
    stand_in().read_job("73")
    _reset_log()
    stand_in().snapshot()  # (a new invocation)
    assert _detail_reads() == ["scontrol show job -d -o 73"]
    _reset_log()
    stand_in().snapshot()
    assert _detail_reads() == []
