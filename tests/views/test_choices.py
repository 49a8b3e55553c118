"""What shell completion offers: the jobs a command takes, latest first, and printable values."""

from __future__ import annotations

from gpuq.model import JobClass, JobState, Snapshot, from_epoch
from gpuq.views.choices import class_choices, job_choices, value_choices
from tests.factories import make_job

P, R, S, CD = JobState.PENDING, JobState.RUNNING, JobState.SUSPENDED, JobState.COMPLETED


def _snapshot() -> Snapshot:
    jobs = (
        make_job("9", "a", "ann", "t1", "low", 1, P, 100.0, 1),
        make_job("10", "b", "bo", "t2", "urgent", 1, R, 300.0, 4),
        make_job("11", "c", "ann", "t1", "normal", 1, S, 200.0, 2),
        make_job("12", "d", "cy", "t3", "low", 1, CD, 400.0, 1),
        make_job("13", "e", "ann", "t1", "low", 1, P, 300.0, 1),  # same submit time as 10: higher id first
        make_job("bad id", "f", "dee", "t1", "low", 1, P, 500.0, 1),
        make_job("14\x1b[2J", "g", "dee", "t1", "low", 1, P, 500.0, 1),
        make_job("15", "h", "ev\nil", "t1", "low", 1, P, 50.0, 1),
    )
    classes = (JobClass("low", 10), JobClass("urgent", 1000), JobClass("normal", 100))
    return Snapshot("c", "demo", from_epoch(1000.0), classes=classes, jobs=jobs)


def test_jobs_in_the_states_asked_for_latest_submitted_first() -> None:
    snap = _snapshot()
    assert [i for i, _ in job_choices(snap, (P, R))] == ["13", "10", "9", "15"]
    assert [i for i, _ in job_choices(snap, (R,))] == ["10"]
    assert [i for i, _ in job_choices(snap)] == ["12", "13", "10", "11", "9", "15"]


def test_descriptions_are_printable_and_keep_their_commas() -> None:
    described = dict(job_choices(_snapshot()))
    assert described["10"] == "running, 4 GPUs, bo, urgent"
    assert described["9"] == "pending, 1 GPU, ann, low"
    assert described["15"] == "pending, 1 GPU, ev?il, low"
    assert all(d.isprintable() for d in described.values())


def test_ids_a_shell_cannot_take_back_are_left_out() -> None:
    ids = [i for i, _ in job_choices(_snapshot())]
    assert "bad id" not in ids and not any("\x1b" in i for i in ids)


def test_classes_by_rank_and_users_sorted() -> None:
    snap = _snapshot()
    assert class_choices(snap) == ["urgent", "normal", "low"]
    assert value_choices(snap, "user") == ["ann", "bo", "cy", "dee"]  # "ev\nil" is left out
    assert value_choices(snap, "tenant") == ["t1", "t2", "t3"]
