"""Snapshot load/save on msgspec: round trip, byte compatibility with what gpuq wrote before, and
validation errors naming the source and the JSON path."""

from __future__ import annotations

import io
import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from gpuq.errors import BadInput
from gpuq.model import JobState, NodeState
from gpuq.model.codec import decode_snapshot, encode_snapshot, job_document, load_snapshot, read_snapshot_file

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "snapshots"


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
    }  # fmt: skip


def load(d: Any) -> Any:
    return decode_snapshot(json.dumps(d), "snap.json")


def test_round_trip_is_lossless() -> None:
    snap = load(doc())
    job = snap.jobs[0]
    assert job.state is JobState.RUNNING and job.allocation == {"gpu-001": tuple(range(8))}
    assert snap.nodes[0].state is NodeState.MIXED
    assert job.start_time == datetime(2026, 11, 29, 11, tzinfo=UTC)
    assert job.start_time is not None and (job.start_time - job.submit_time).total_seconds() == 3600
    again = decode_snapshot(encode_snapshot(snap))
    assert again == snap
    assert job_document(again.jobs[0])["start_time"] == "2026-11-29T11:00:00Z"


def test_what_gpuq_wrote_before_is_read_and_written_back_byte_for_byte() -> None:
    """Snapshots written by the hand-made encoder of gpuq 0.1 (a fixture file and a simulated
    cluster with a fractional snapshot time): the same bytes come back out."""
    lines = (FIXTURES / "written-by-gpuq-0.1.jsonl").read_bytes().splitlines(keepends=True)
    assert len(lines) == 2
    for line in lines:
        assert encode_snapshot(decode_snapshot(line)) == line


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d["jobs"][0].update(start_time="yesterday"), "jobs[0].start_time: not an RFC 3339 time"),
        (lambda d: d["jobs"][0].pop("user"), "jobs[0].user: missing required field"),
        (lambda d: d["jobs"][0].pop("end_time"), "jobs[0].end_time: missing required field"),
        (lambda d: d["jobs"][0].update(state="zombie"), "jobs[0].state: unknown job state 'zombie'"),
        (lambda d: d["jobs"][0].update(gpus=-1), "jobs[0].gpus: must be >= 0"),
        (lambda d: d["jobs"][0].update(gpus="8"), "jobs[0].gpus: expected an integer, got a string"),
        (lambda d: d["jobs"][0]["allocation"].update({"gpu-001": [0, "x"]}), "jobs[0].allocation.gpu-001[1]"),
        (lambda d: d["jobs"][0]["allocation"].update({"gpu-001": [0, -1]}), "jobs[0].allocation.gpu-001[1]"),
        (lambda d: d["nodes"][0].update(state="on fire"), "nodes[0].state: unknown node state"),
        (lambda d: d.update(format="gpuq.snapshot/v2"), "format: expected 'gpuq.snapshot/v1'"),
        (lambda d: d.update(jobs={}), "jobs: expected an array, got an object"),
        (lambda d: d["jobs"].append(dict(d["jobs"][0])), "jobs[1].id: duplicate job id '1234'"),
        (lambda d: d["jobs"][0].update(preemption_times=["2026-13-01T00:00:00Z"]), "jobs[0].preemption_times[0]"),
        (lambda d: d["jobs"][0].update(start_time="2026-11-29T11:00:00"), "jobs[0].start_time: not an RFC 3339"),
    ],
)
def test_validation_errors_name_source_path_and_field(mutate: Any, message: str) -> None:
    d = doc()
    mutate(d)
    with pytest.raises(BadInput) as err:
        load(d)
    assert str(err.value).startswith("snap.json: ")
    assert message in str(err.value)


@pytest.mark.parametrize(
    ("field", "literal"), [("priority", "9" * 5000), ("duration_s", "1e400"), ("priority", "1e400")]
)
def test_numbers_out_of_range_are_refused_naming_the_field(field: str, literal: str) -> None:
    text = json.dumps(doc()).replace('"exempt_until": null', f'"exempt_until": null, "{field}": {literal}', 1)
    text = text.replace('"priority": 100, ', "", 1) if field == "priority" else text
    with pytest.raises(BadInput, match=rf"snap\.json: jobs\[0\]\.{field}: (number out of range|expected)"):
        decode_snapshot(text, "snap.json")


def test_load_reports_json_syntax_with_source_and_line() -> None:
    with pytest.raises(BadInput, match=r"big\.json: not valid JSON \(line 2"):
        load_snapshot(io.StringIO('{\n  "format": oops}'), "big.json")
    with pytest.raises(BadInput, match=r"x\.json: expected a JSON object"):
        load_snapshot(io.StringIO("[1, 2]"), "x.json")
    with pytest.raises(BadInput, match=r"nan\.json: not valid JSON \(line 1"):
        decode_snapshot(json.dumps(doc()).replace('"gpus": 8', '"gpus": NaN', 1), "nan.json")
    with pytest.raises(BadInput, match=r"bytes\.json: not UTF-8 text"):
        decode_snapshot(json.dumps(doc()).encode().replace(b"alice", b"al\xffce"), "bytes.json")


def test_a_missing_file_names_it() -> None:
    with pytest.raises(BadInput, match=r"nowhere\.json: cannot read snapshot"):
        read_snapshot_file("nowhere.json")


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
def test_extras_and_containers_are_typed(field: str, value: object, message: str) -> None:
    d = doc()
    d["jobs"][0][field] = value
    with pytest.raises(BadInput) as err:
        load(d)
    assert message in str(err.value)


def test_optional_extras_round_trip_and_are_written_only_when_set() -> None:
    d = doc()
    d["jobs"][0].update(reason="Priority", urgent=True, account="acct", partition="gpu", qos="high",
                        comment="hi", checkpoint_interval_s=600, duration_s=3600.5)  # fmt: skip
    snap = load(d)
    job = snap.jobs[0]
    assert (job.reason, job.urgent, job.qos, job.checkpoint_interval_s, job.duration_s) == (
        "Priority", True, "high", 600.0, 3600.5)
    assert decode_snapshot(encode_snapshot(snap)) == snap
    plain = job_document(load(doc()).jobs[0])
    assert "reason" not in plain and "urgent" not in plain
    assert plain["end_time"] is None and plain["exempt_until"] is None  # v1 fields: always written


def test_owner_round_trips_and_is_written_only_when_set() -> None:
    d = doc()
    d["jobs"][0]["owner"] = "JobSet/ml-team-a/train"
    snap = load(d)
    assert snap.jobs[0].owner == "JobSet/ml-team-a/train"
    assert decode_snapshot(encode_snapshot(snap)) == snap
    assert job_document(snap.jobs[0])["owner"] == "JobSet/ml-team-a/train"
    assert "owner" not in job_document(load(doc()).jobs[0])


def test_what_could_not_be_read_round_trips_and_old_files_have_none() -> None:
    assert load(doc()).unread == ()  # (a file from before the field)
    d = doc()
    d["unread"] = [{"resource": "nodes", "reason": "forbidden", "effect": "GPU totals from pods only"}]
    snap = load(d)
    assert [(u.resource, u.reason, u.effect) for u in snap.unread] == [
        ("nodes", "forbidden", "GPU totals from pods only")]  # fmt: skip
    assert decode_snapshot(encode_snapshot(snap)) == snap
    d["unread"] = [{"resource": "nodes"}]
    with pytest.raises(BadInput, match="unread"):
        load(d)


def _job_with(**fields: Any) -> dict[str, Any]:
    d = doc()
    d["jobs"][0].update(fields)
    return d


@pytest.mark.parametrize(
    ("snapshot", "problem"),
    [
        ({**doc(), "classes": doc()["classes"] * 2}, "classes[1].name: duplicate class name 'urgent'"),
        (_job_with(state="pending", allocation={}, gpus=8), "jobs[0].start_time: a pending job has not started"),
        (_job_with(end_time="2026-11-29T10:30:00Z", state="completed", allocation={}),
         "jobs[0].end_time: before its start_time"),
        (_job_with(start_time=None, end_time="2026-11-29T09:30:00Z", state="cancelled", allocation={}),
         "jobs[0].end_time: before its submit_time"),
    ],
    ids=["duplicate-class", "pending-with-start", "end-before-start", "end-before-submit"],
)  # fmt: skip
def test_a_snapshot_no_cluster_can_be_in_is_refused(snapshot: dict[str, Any], problem: str) -> None:
    with pytest.raises(BadInput, match=rf"^snap\.json: {re.escape(problem)}"):
        load(snapshot)


@pytest.mark.parametrize(
    ("snapshot", "said"),
    [
        (_job_with(start_time="2026-11-29T09:59:58Z"), "jobs[0].start_time: a start before the submit"),
        (_job_with(last_checkpoint_time="2026-11-29T18:00:02Z"), "jobs[0].last_checkpoint_time: after taken_at"),
        (_job_with(submit_time="2026-11-29T18:00:01Z", eligible_time=None, start_time=None, state="pending",
                   allocation={}, preemption_times=[], last_checkpoint_time=None),
         "jobs[0].submit_time: after taken_at"),
        (_job_with(state="completed", allocation={}), "jobs[0].end_time: a completed job without an end time"),
    ],
    ids=["start-before-submit", "checkpoint-after-taken", "submit-after-taken", "completed-without-end"],
)  # fmt: skip
def test_what_a_live_backend_can_write_is_loaded_with_a_warning(snapshot: dict[str, Any], said: str) -> None:
    """Clocks of a cluster's hosts and gpuq's differ by seconds (Kubernetes stamps a pod's start
    on its node, its creation on the API server), and a finished pod may report no end: such a
    snapshot is loaded as it is, with a warning naming the first job and field."""
    from gpuq.errors import GpuqWarning

    with pytest.warns(GpuqWarning, match=rf"^snap\.json: {re.escape(said)}"):
        snap = load(snapshot)
    assert len(snap.jobs) == 1
