"""`gpuq job` explanations: why a job is pending, in plain words."""

from __future__ import annotations

from gpuq.model import Job, JobClass, JobState, Node, Snapshot
from gpuq.policy.config import Policy
from gpuq.policy.order import queue_position
from gpuq.views.job import pending_reasons
from tests.factories import make_job, make_snapshot

NOW = 1_800_000_000.0


def pending(job_id: str, gpus: int, priority: int = 100, age: float = 600, cls: str = "normal") -> Job:
    return make_job(job_id, job_id, "u", "t", cls, priority, JobState.PENDING, NOW - age, gpus, reason="Resources")


def running(job_id: str, node: str, gpus: int, priority: int = 10) -> Job:
    return make_job(job_id, job_id, "u", "t", "normal", priority, JobState.RUNNING, NOW - 7200, gpus,
               start_time=NOW - 3600, allocation={node: tuple(range(gpus))})


def snap(*jobs: Job) -> Snapshot:
    return make_snapshot("c", "demo", NOW, (JobClass("normal", 100, True, 1800, 3600),), (Node("n1", 8),), jobs)


def test_blocked_job_names_its_victims() -> None:
    s = snap(running("r", "n1", 8), pending("p", 4))
    lines, plan = pending_reasons(s, Policy(), s.jobs[1], NOW)
    text = "\n".join(lines)
    assert "waiting 10m in class normal" in text and "target P95 30m" in text
    assert "the scheduler gives the reason: Resources" in text
    assert "could preempt 1 job(s) (r) on n1" in text
    assert plan is not None and plan.would_preempt


def test_protected_victims_explain_the_block() -> None:
    s = snap(running("r", "n1", 8, priority=500), pending("p", 4))
    text = "\n".join(pending_reasons(s, Policy(), s.jobs[1], NOW)[0])
    assert "cannot preempt anything" in text and "1 delta" in text


def test_free_gpus_and_queue_position() -> None:
    s = snap(running("r", "n1", 4), pending("hi", 2, priority=200), pending("p", 2))
    assert queue_position(s, Policy(), s.jobs[2], NOW) == 1
    text = "\n".join(pending_reasons(s, Policy(), s.jobs[2], NOW)[0])
    assert "2 GPUs are free now on n1; 1 higher-priority pending jobs are ahead of it" in text


def test_infeasible_and_not_pending() -> None:
    s = snap(pending("big", 64), running("r", "n1", 8))
    assert "can never start here" in "\n".join(pending_reasons(s, Policy(), s.jobs[0], NOW)[0])
    assert pending_reasons(s, Policy(), s.jobs[1], NOW)[0] == ["it is not pending: it is running"]


def test_aging_is_reported() -> None:
    s = snap(running("r", "n1", 8, priority=150), pending("old", 8, age=3600 + 600))
    text = "\n".join(pending_reasons(s, Policy(), s.jobs[1], NOW)[0])
    assert "aging for 10m past max_wait 1h00m" in text
    assert "effective priority 200 (base 100)" in text  # 10 points/min x 10 min
