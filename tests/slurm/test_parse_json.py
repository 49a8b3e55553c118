"""squeue/scontrol/sinfo/sacct JSON of Slurm 22.05, 24.11 and 26.05, parsed from real captures."""

from __future__ import annotations

import json

import pytest

from gpuq.backends.slurm.jsonread import load_json, parse_jobs_json, parse_sinfo_json
from gpuq.backends.slurm.sacct import parse_sacct_json, preemption_times
from gpuq.backends.slurm.version import SlurmVersion, parse_version_text
from gpuq.model import Job, JobState, NodeState
from tests.slurm.samples import VERSIONS, read


@pytest.mark.parametrize(
    ("version", "expected"),
    [("22.05", SlurmVersion(22, 5, 8)), ("24.11", SlurmVersion(24, 11, 5)), ("26.05", SlurmVersion(26, 5, 5))],
)
def test_version_detected_from_json_meta(version: str, expected: SlurmVersion) -> None:
    _, found = load_json(read(version, "squeue.json"), "squeue --json")
    assert found == expected
    assert found.json_numbers_wrapped is (expected.major >= 23)


def test_version_text_and_unknown_versions() -> None:
    assert parse_version_text("slurm 22.05.8\n") == SlurmVersion(22, 5, 8)
    assert parse_version_text("slurm-wlm 24.11.5") == SlurmVersion(24, 11, 5)
    with pytest.raises(ValueError, match="unsupported Slurm JSON version 21.08"):
        load_json(json.dumps({"meta": {"Slurm": {"release": "21.08.8"}}, "jobs": []}), "squeue --json")
    with pytest.raises(ValueError, match="unknown JSON version"):
        load_json(json.dumps({"meta": {"plugin": {}}, "jobs": []}), "squeue --json")


def test_truncated_and_non_json_output_is_a_clear_error() -> None:
    text = read("24.11", "squeue.json")
    with pytest.raises(ValueError, match="truncated"):
        load_json(text[: len(text) // 2], "squeue --json")
    with pytest.raises(ValueError, match="not JSON"):
        load_json("squeue: error: Invalid user\n", "squeue --json")
    with pytest.raises(ValueError, match="without 'meta'"):
        load_json("[1, 2]", "squeue --json")


def _jobs(version: str, name: str = "squeue.json", key: str = "qos") -> dict[str, Job]:
    data, _ = load_json(read(version, name), name)
    return {j.id: j for j in parse_jobs_json(data, key).jobs}


def test_2205_squeue_json_jobs() -> None:
    jobs = _jobs("22.05")
    urgent = jobs["9"]
    assert urgent.state is JobState.RUNNING
    assert urgent.gpus == 4
    assert dict(urgent.allocation) == {"gpu1": (0, 1, 2, 3)}
    assert (urgent.qos, urgent.job_class, urgent.account) == ("urgent", "urgent", "research")
    assert urgent.priority == 101000
    # A suspended job keeps its GPU.
    suspended = jobs["8"]
    assert suspended.state is JobState.SUSPENDED
    assert dict(suspended.allocation) == {"gpu2": (3,)}
    # Array: a started task, and the pending meta-record with the rest.
    assert jobs["16_2"].state is JobState.PENDING
    assert "16_[0-1,3]" in jobs
    held = jobs["3"]
    assert held.reason == "JobHeldAdmin"
    assert held.priority == 0
    # Pending jobs have no start time even though squeue shows an expected one.
    assert jobs["15"].start_time is None
    assert jobs["15"].gpus == 2


@pytest.mark.parametrize("version", ["24.11", "26.05"])
@pytest.mark.parametrize("name", ["squeue.json", "scontrol-show-job.json"])
def test_2411_2605_jobs(version: str, name: str) -> None:
    jobs = _jobs(version, name, key="partition")
    assert set(jobs) == {"1", "2", "3", "4", "5", "6", "7", "8", "9_[0-3]", "11"}
    high = jobs["11"]
    assert high.state is JobState.RUNNING
    assert high.job_class == "high"
    assert high.gpus == 2
    assert dict(high.allocation) == {"gpu1": (0, 1)}
    # Preempted+requeued victims are pending again.
    assert jobs["1"].state is JobState.PENDING
    assert jobs["1"].reason == "BeginTime"
    assert sorted(n for j in jobs.values() for n in j.allocation) == ["gpu1"] * 3 + ["gpu2"] * 4
    data, _ = load_json(read(version, name), name)
    assert parse_jobs_json(data, "partition").restarts == {"1": 1, "2": 1}


@pytest.mark.parametrize("version", VERSIONS)
def test_sinfo_json(version: str) -> None:
    data, _ = load_json(read(version, "sinfo.json"), "sinfo --json")
    nodes = {n.name: n for n in parse_sinfo_json(data)}
    assert set(nodes) == {"gpu1", "gpu2"}
    assert all(n.gpus == 4 and n.gpu_model == "h100" for n in nodes.values())
    assert all(n.state in (NodeState.MIXED, NodeState.ALLOCATED) for n in nodes.values())


def test_sinfo_json_down_and_drained_nodes() -> None:
    data, _ = load_json(read("22.05", "sinfo.json"), "sinfo --json")
    data["nodes"][0]["state"] = "down"
    data["nodes"][1]["state"] = "idle"
    data["nodes"][1]["state_flags"] = ["DRAIN"]
    states = {n.name: n.state for n in parse_sinfo_json(data)}
    assert states == {"gpu1": NodeState.DOWN, "gpu2": NodeState.DRAIN}
    data, _ = load_json(read("26.05", "sinfo.json"), "sinfo --json")
    data["sinfo"][0]["node"]["state"] = ["IDLE", "DRAIN"]
    assert {n.state for n in parse_sinfo_json(data)} == {NodeState.DRAIN}


def test_2205_sacct_json_history() -> None:
    data, version = load_json(read("22.05", "sacct.json"), "sacct --json")
    assert version == SlurmVersion(22, 5, 8)
    records = {r.id: r for r in parse_sacct_json(data)}
    assert records["16_2"].raw_id == "17"
    assert records["16_2"].preempted
    assert records["7"].raw_state == "REQUEUED"
    assert records["7"].preempted
    assert records["21"].state is JobState.CANCELLED
    assert not records["21"].preempted
    assert records["9"].gpus == 4
    assert records["9"].start is not None
    times = preemption_times(records.values())
    assert set(times) == {"1", "2", "3", "4", "5", "6", "7", "16_2"}
    assert times["5"] == (records["5"].end,)
