"""A pending CPU-only job (Slurm without --gres) waits for no GPU: the overview's most urgent
pending jobs leave it out, a preview of it says so in a clear error, and a bump of it goes through
(it once failed on its own preview: "--gpus 0: a request needs at least 1 GPU")."""

from __future__ import annotations

import dataclasses

import pytest

from gpuq.model import JobState
from tests.cli.conftest import FakeBackend, Runner, json_doc
from tests.factories import make_job

CPU_JOB = "900"


@pytest.fixture
def with_cpu_job(fake: type[FakeBackend]) -> type[FakeBackend]:
    snapshot = fake.state["snapshot"]
    cpu = make_job(CPU_JOB, state=JobState.PENDING, gpus=0, priority=900_000, submit_time=snapshot.now - 3600)
    fake.state["snapshot"] = dataclasses.replace(snapshot, jobs=(*snapshot.jobs, cpu))
    return fake


def test_overview_lists_only_jobs_waiting_for_gpus(gpuq: Runner, with_cpu_job: type[FakeBackend]) -> None:
    doc = json_doc(gpuq("--backend", "fake", "overview", "-o", "json"))
    listed = [row["id"] for row in doc["top_pending"]]
    assert listed and CPU_JOB not in listed
    table = gpuq("--backend", "fake", "overview")
    assert table.exit_code == 0, table.output


def test_preview_of_a_cpu_only_job_is_a_clear_usage_error(gpuq: Runner, with_cpu_job: type[FakeBackend]) -> None:
    result = gpuq("--backend", "fake", "preview", CPU_JOB)
    assert result.exit_code == 2
    assert f"job {CPU_JOB} asks for no GPUs" in result.stderr and "Traceback" not in result.output


def test_bump_of_a_cpu_only_job_goes_through(gpuq: Runner, with_cpu_job: type[FakeBackend]) -> None:
    result = gpuq("--backend", "fake", "bump", CPU_JOB, "--to", "999999", "--yes")
    assert result.exit_code == 0, result.output
    assert with_cpu_job.state["calls"] == [("bump", CPU_JOB, {"priority": 999999, "by": None})]
