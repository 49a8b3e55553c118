"""`open_trace`: which reader a path gets (preset, column mapping, or what the file is), the
class rules applied to every format, and one clear error for what cannot be read."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpuq.errors import BadInput, NotFound
from gpuq.service.tracing import open_trace, trace_format
from gpuq.trace import TraceError, TraceJob
from tests.trace.conftest import TRACES


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("jobs.jsonl", "jobs"),
        ("philly_cluster_job_log.json", "philly"),
        ("helios_cluster_log.csv", "helios"),
        ("alibaba_2023_pod_list.csv", "alibaba-gpu-2023"),
        ("pai", "alibaba-pai-2020"),
    ],
)
def test_formats_are_told_apart(name: str, fmt: str) -> None:
    assert trace_format(str(TRACES / name)) == fmt


def _fake_sacct(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    calls: list[tuple[str, str]] = []

    def reader(kind: str) -> object:
        def read(path: str) -> Iterator[TraceJob]:
            calls.append((kind, path))
            yield TraceJob("7", 1.0, 2.0, 1, tenant="physics")

        return read

    fake = types.ModuleType("gpuq.backends.slurm.trace")
    fake.read_sacct_json = reader("json")  # type: ignore[attr-defined]
    fake.read_sacct_parsable = reader("parsable")  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "gpuq.backends.slurm.trace", fake)
    return calls


def test_sacct_output_goes_to_the_slurm_readers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _fake_sacct(monkeypatch)
    as_json, parsable = tmp_path / "sacct.json", tmp_path / "sacct.txt"
    as_json.write_text('{\n  "meta": {"plugin": {}},\n  "jobs": []\n}\n')
    parsable.write_text("JobID|JobIDRaw|JobName|State\n7|7|train|COMPLETED\n")
    assert trace_format(str(as_json)) == "sacct-json" and trace_format(str(parsable)) == "sacct-parsable"
    (job,) = open_trace(str(as_json), class_from="tenant")
    assert job.job_class == "physics" and job.priority is None
    (job,) = open_trace(str(parsable), seed=4)
    assert job.job_class is not None and job.priority is not None
    assert calls == [("json", str(as_json)), ("parsable", str(parsable))]


def test_a_preset_wins_over_sniffing() -> None:
    path = str(TRACES / "helios_cluster_log.csv")
    assert trace_format(path, preset="alibaba-gpu-2023") == "alibaba-gpu-2023"
    with pytest.raises(TraceError, match="no column 'name' in the header"):
        list(open_trace(path, preset="alibaba-gpu-2023"))


def test_every_job_leaves_with_a_class_and_a_priority() -> None:
    for name in ("jobs.jsonl", "philly_cluster_job_log.json", "helios_cluster_log.csv", "pai"):
        for job in open_trace(str(TRACES / name), seed=3):
            assert job.job_class in {"urgent", "high", "normal", "low", "batch"} and job.priority is not None


@pytest.mark.parametrize(
    ("make", "kwargs", "error", "message"),
    [
        (None, {}, NotFound, "no such trace file or directory"),
        ("dir", {}, BadInput, "neither recordings"),
        ("csv", {}, BadInput, "cannot tell the trace's format"),
        ("csv", {"preset": "sge"}, BadInput, "unknown preset 'sge' (one of philly, helios"),
        ("json", {}, BadInput, "a JSON file gpuq does not recognise"),
        ("csv", {"columns": {"colour": "x"}}, BadInput, "--columns: unknown key 'colour'"),
        ("jobs", {"class_from": "qos"}, BadInput, "--class-from 'qos': this trace has no columns"),
    ],
)
def test_what_cannot_be_read_is_one_clear_error(tmp_path: Path, make: str | None, kwargs: dict[str, object],
                                                error: type[Exception], message: str) -> None:  # fmt: skip
    path = tmp_path / "trace"
    if make == "dir":
        path.mkdir()
        (path / "notes.txt").write_text("hello")
    elif make == "csv":
        path.write_text("a,b\n1,2\n")
    elif make == "json":
        path.write_text('{"format": "something/else"}\n')
    elif make == "jobs":
        path.write_text('{"id":"a","submit_time":1,"duration_s":1,"gpus":1}\n')
    with pytest.raises(error) as caught:
        open_trace(str(path), **kwargs)  # type: ignore[arg-type]
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_an_indented_snapshot_file_is_a_snapshot(tmp_path: Path) -> None:
    import json

    from gpuq.model.codec import encode_snapshot
    from tests.factories import make_job, make_snapshot

    snapshot = make_snapshot("lab", "demo", 100.0, jobs=[make_job("p1", submit_time=50.0)])
    path = tmp_path / "pretty.json"
    path.write_text(json.dumps(json.loads(encode_snapshot(snapshot)), indent=2))
    assert trace_format(str(path)) == "snapshots"
    assert [(j.id, j.submit_time, j.start_time) for j in open_trace(str(path))] == [("p1", 50.0, None)]


def test_gzip_files_are_read_as_they_stream(tmp_path: Path) -> None:
    import gzip

    for name in ("jobs.jsonl", "helios_cluster_log.csv"):
        packed = tmp_path / f"{name}.gz"
        packed.write_bytes(gzip.compress((TRACES / name).read_bytes()))
        assert [j.id for j in open_trace(str(packed))] == [j.id for j in open_trace(str(TRACES / name))]
    broken = tmp_path / "cut.jsonl.gz"
    broken.write_bytes(gzip.compress((TRACES / "jobs.jsonl").read_bytes())[:-20])
    with pytest.raises(BadInput, match="not a readable gzip file"):
        list(open_trace(str(broken)))


def test_a_preset_and_columns_together_are_refused() -> None:
    with pytest.raises(BadInput, match="give --preset or --columns, not both"):
        open_trace(str(TRACES / "helios_cluster_log.csv"), preset="helios", columns={"submit": "submit_time"})


def test_headerless_sacct_output_is_named(tmp_path: Path) -> None:
    path = tmp_path / "sacct.txt"
    path.write_text("390|390|low|root|root|gpu|low|2000|PREEMPTED|2026-12-01T13:40:22|None\n")
    with pytest.raises(BadInput, match="without its header line"):
        open_trace(str(path))
