"""Snapshot load/save: round trip and validation errors naming the JSON path."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from gpuq.errors import BadInput
from gpuq.model import JobState, NodeState
from gpuq.snapshot_io import load_snapshot, snapshot_from_dict, snapshot_to_dict


def doc() -> dict[str, Any]:
    return {
        "format": "gpuq.snapshot/v1", "cluster": "demo", "backend": "demo", "taken_at": "2026-11-29T18:00:00Z",
        "classes": [{"name": "urgent", "priority": 1000, "preemptible": False, "target_p95_s": 600,
                     "max_wait_s": 1800}],
        "nodes": [{"name": "gpu-001", "gpus": 8, "gpu_model": "H100", "state": "mixed"}],
        "jobs": [{"id": "1234", "name": "train-llm", "user": "alice", "tenant": "nlp", "class": "normal",
                  "priority": 100, "state": "running", "submit_time": "2026-11-29T10:00:00Z",
                  "eligible_time": "2026-11-29T10:00:00Z", "start_time": "2026-11-29T11:00:00Z",
                  "end_time": None, "gpus": 8, "allocation": {"gpu-001": [0, 1, 2, 3, 4, 5, 6, 7]},
                  "preemption_times": ["2026-11-29T09:00:00Z"], "last_checkpoint_time": "2026-11-29T17:40:00Z",
                  "exempt_until": None, "some_future_field": {"ignored": True}}],
    }


def test_round_trip_is_lossless() -> None:
    snap = snapshot_from_dict(doc())
    job = snap.jobs[0]
    assert job.state is JobState.RUNNING and job.allocation == {"gpu-001": tuple(range(8))}
    assert snap.nodes[0].state is NodeState.MIXED
    assert job.start_time is not None and job.start_time - job.submit_time == 3600
    again = snapshot_from_dict(json.loads(json.dumps(snapshot_to_dict(snap))))
    assert again == snap
    assert snapshot_to_dict(again)["jobs"][0]["start_time"] == "2026-11-29T11:00:00Z"


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d["jobs"][0].update(start_time="yesterday"), "jobs[0].start_time: not an RFC 3339 time"),
        (lambda d: d["jobs"][0].pop("user"), "jobs[0].user: missing required field"),
        (lambda d: d["jobs"][0].update(state="zombie"), "jobs[0].state: unknown job state 'zombie'"),
        (lambda d: d["jobs"][0].update(gpus=-1), "jobs[0].gpus: must be >= 0"),
        (lambda d: d["jobs"][0].update(gpus="8"), "jobs[0].gpus: expected an integer, got a string"),
        (lambda d: d["jobs"][0]["allocation"].update({"gpu-001": [0, "x"]}), "jobs[0].allocation.gpu-001[1]"),
        (lambda d: d["nodes"][0].update(state="on fire"), "nodes[0].state: unknown node state"),
        (lambda d: d.update(format="gpuq.snapshot/v2"), "format: expected 'gpuq.snapshot/v1'"),
        (lambda d: d.update(jobs={}), "jobs: expected an array, got an object"),
        (lambda d: d["jobs"].append(dict(d["jobs"][0])), "jobs[1].id: duplicate job id '1234'"),
        (lambda d: d["jobs"][0].update(preemption_times=["2026-13-01T00:00:00Z"]), "jobs[0].preemption_times[0]"),
        (lambda d: d["jobs"][0].update(start_time="2026-11-29T11:00:00"), "jobs[0].start_time: not an RFC 3339"),
    ],
)
def test_validation_errors_name_path_and_field(mutate: Any, message: str) -> None:
    d = doc()
    mutate(d)
    with pytest.raises(BadInput) as err:
        snapshot_from_dict(d)
    assert message in str(err.value)


def test_load_reports_json_syntax_with_source_and_line() -> None:
    with pytest.raises(BadInput, match=r"big\.json: not valid JSON \(line 2"):
        load_snapshot(io.StringIO('{\n  "format": oops}'), "big.json")
    with pytest.raises(BadInput, match=r"x\.json: \$|x\.json: expected a JSON object"):
        load_snapshot(io.StringIO("[1, 2]"), "x.json")


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("preemption_times", {"2026-11-29T09:00:00Z": 1}, "jobs[0].preemption_times: expected an array"),
        ("allocation", {"gpu-001": {"0": 1}}, "jobs[0].allocation.gpu-001: expected an array"),
        ("urgent", "yes", "jobs[0].urgent: expected a boolean"),
        ("reason", 5, "jobs[0].reason: expected a string"),
        ("checkpoint_interval_s", -1, "jobs[0].checkpoint_interval_s: must be >= 0"),
    ],
)
def test_fast_path_rejects_what_the_slow_path_rejects(field: str, value: object, message: str) -> None:
    d = doc()
    d["jobs"][0][field] = value
    with pytest.raises(BadInput) as err:
        snapshot_from_dict(d)
    assert message in str(err.value)


def test_optional_extras_round_trip() -> None:
    d = doc()
    d["jobs"][0].update(reason="Priority", urgent=True, account="acct", partition="gpu", qos="high",
                        comment="hi", checkpoint_interval_s=600, duration_s=3600.5)
    snap = snapshot_from_dict(d)
    job = snap.jobs[0]
    assert (job.reason, job.urgent, job.qos, job.checkpoint_interval_s, job.duration_s) == (
        "Priority", True, "high", 600.0, 3600.5)
    assert snapshot_from_dict(json.loads(json.dumps(snapshot_to_dict(snap)))) == snap
