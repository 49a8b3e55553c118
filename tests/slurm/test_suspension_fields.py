"""Slurm's suspension fields (``SuspendTime=``/``SecsPreSuspend=``, ``suspend_time``/``pre_sus_time``)
become `Job.suspended_s` and `Job.resumed_time`: time suspended is neither queue wait nor run time.

Job 8 of the 22.05 capture is suspended (started 18:17:36, suspended at 18:18:26 after 50 s of
run). No capture shows a job resumed after a suspension; `test_a_resumed_run` takes job 8's real
record as slurmctld prints it after a resume (JobState RUNNING, SuspendTime the resume moment,
SecsPreSuspend the run before it, per its job_info.c) and says so; the lab test
tests/slurm/test_lab_10_resumed_run_time.py checks the same on a real resume.
"""

from __future__ import annotations

from gpuq.backends.slurm.jobs import apply_suspensions
from gpuq.backends.slurm.jsonread import load_json, parse_jobs_json
from gpuq.backends.slurm.text import parse_scontrol_jobs, scontrol_records
from gpuq.backends.slurm.values import text_time
from gpuq.model import Job, JobState
from tests.slurm.samples import live, read

START = text_time("2026-11-29T18:17:36") or 0.0
SUSPENDED_AT = text_time("2026-11-29T18:18:26") or 0.0
NOW = SUSPENDED_AT + 120  # the snapshot's moment: two minutes into the suspension


def _job8(jobs: list[Job]) -> Job:
    return next(j for j in jobs if j.id == "8")


def _check_suspended(job: Job) -> None:
    assert job.state is JobState.SUSPENDED
    assert job.suspended_s == 120.0  # (NOW − start) − SecsPreSuspend
    origin = job.run_origin()
    assert origin is not None and NOW - origin == 50.0  # run time: Slurm's RunTime=00:00:50
    assert job.wait_s(NOW) == 0.0  # the first start stays: the suspension is no queue wait
    assert job.resumed_time is None  # (no resume reported: lost work counts from the start)


def test_a_suspended_job_from_scontrol_text() -> None:
    for name in ("scontrol-show-job-d.txt", "scontrol-show-job-d-oneliner.txt"):
        _check_suspended(_job8(apply_suspensions(parse_scontrol_jobs(read("22.05", name), "qos"), NOW).jobs))


def test_a_suspended_job_from_squeue_json() -> None:
    data, _ = load_json(read("22.05", "squeue.json"), "squeue --json")
    _check_suspended(_job8(apply_suspensions(parse_jobs_json(data, "qos"), NOW).jobs))


def test_the_live_capture_suspended_job_from_scontrol_text() -> None:
    # The live capture's job 68: started 19:20:58, SuspendTime=19:21:08 SecsPreSuspend=10.
    at = text_time("2026-11-29T19:21:08") or 0.0
    now = at + 60
    read_ = apply_suspensions(parse_scontrol_jobs(live("scontrol-show-job-d-o.txt"), "qos"), now)
    assert list(read_.suspensions) == ["68"]  # SuspendTime=None on every other line
    job = next(j for j in read_.jobs if j.id == "68")
    assert job.state is JobState.SUSPENDED and job.suspended_s == 60.0
    origin = job.run_origin()
    assert origin is not None and now - origin == 10.0  # Slurm's RunTime=00:00:10
    assert all(j.suspended_s == 0.0 and j.resumed_time is None for j in read_.jobs if j.id != "68")


def test_a_resumed_run() -> None:
    resumed_at = SUSPENDED_AT + 30  # suspended 30 s, then resumed
    line = next(
        r for r in scontrol_records(read("22.05", "scontrol-show-job-d-oneliner.txt")) if r.startswith("JobId=8 ")
    )
    line = line.replace("JobState=SUSPENDED", "JobState=RUNNING").replace(
        "SuspendTime=2026-11-29T18:18:26", "SuspendTime=2026-11-29T18:18:56"
    )
    now = resumed_at + 10
    job = _job8(apply_suspensions(parse_scontrol_jobs(line, "qos"), now).jobs)
    assert job.suspended_s == 30.0  # (SuspendTime − StartTime) − SecsPreSuspend: exact
    origin = job.run_origin()
    assert origin is not None and now - origin == 60.0  # Slurm's RunTime: now − SuspendTime + SecsPreSuspend
    assert job.start_time is not None and job.start_time.timestamp() == START  # the first start kept
    assert job.wait_s(now) == 0.0
    assert job.resumed_time is not None and job.resumed_time.timestamp() == resumed_at  # lost work from here
