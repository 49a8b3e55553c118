"""A gpuq.snapshot/v1 history (a directory of snapshot files, or an incident recording) read as a
trace: each job followed by id across the snapshots."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from gpuq.backends.recording import RecordingWriter
from gpuq.errors import BadInput, NotFound
from gpuq.model import Job, JobState, Node, Snapshot
from gpuq.model.codec import encode_snapshot
from gpuq.service.tracing import open_trace, trace_format
from gpuq.trace import TraceJob, follow_snapshots, read_snapshots
from tests.factories import make_job, make_snapshot
from tests.trace.conftest import trace_error

P, R, C, F = JobState.PENDING, JobState.RUNNING, JobState.COMPLETED, JobState.FAILED


NODES = (Node("n1", 8),)


def _a(state: JobState) -> Job:
    held = {"n1": [0, 1]} if state is R else None
    return make_job("A", job_class="high", priority=500, state=state, submit_time=50.0, gpus=2, allocation=held)


def history() -> list[Snapshot]:
    """A: pending, then running (no start time recorded), then gone; B: running, completed, still
    listed; C: submitted late, still running at the end; D: never started; E: seen once, failed."""
    b_run = make_job("B", state=R, submit_time=60.0, start_time=90.0, gpus=1, allocation={"n1": [2]})
    b_done = make_job("B", state=C, submit_time=60.0, start_time=90.0, end_time=180.0, gpus=1)
    c_pend = make_job("C", state=P, submit_time=250.0, gpus=4)
    c_run = make_job("C", state=R, submit_time=250.0, start_time=350.0, gpus=4, allocation={"n1": [4, 5, 6, 7]})
    d = make_job("D", job_class="low", state=P, submit_time=70.0, gpus=8, duration_s=77.0)
    e = make_job("E", state=F, submit_time=10.0, start_time=20.0, end_time=30.0, gpus=1)
    frames: Sequence[tuple[float, Sequence[Job]]] = (
        (100.0, (_a(P), b_run, d, e)),
        (200.0, (_a(R), b_done, d)),
        (300.0, (_a(R), b_done, c_pend, d)),
        (400.0, (c_run, d)),
    )
    return [make_snapshot("lab", "demo", t, nodes=NODES, jobs=jobs) for t, jobs in frames]


#: in order of ending; the jobs still listed at the end in the order they were first seen
EXPECTED = [
    TraceJob("E", 10.0, 10.0, 1, "normal", 0, "u", "t", "job", 20.0, 30.0, "failed"),
    TraceJob("B", 60.0, 90.0, 1, "normal", 0, "u", "t", "job", 90.0, 180.0, "completed"),
    TraceJob("A", 50.0, 100.0, 2, "high", 500, "u", "t", "job", 200.0, 300.0, "running"),
    TraceJob("D", 70.0, 77.0, 8, "low", 0, "u", "t", "job", None, None, "pending"),
    TraceJob("C", 250.0, 50.0, 4, "normal", 0, "u", "t", "job", 350.0, None, "running"),
]


def _write(directory: Path, snapshots: Sequence[Snapshot]) -> Path:
    directory.mkdir()
    for i, snapshot in enumerate(snapshots):
        (directory / f"snap-{i:03d}.json").write_bytes(encode_snapshot(snapshot))
    return directory


def test_jobs_are_followed_across_snapshots() -> None:
    assert list(follow_snapshots(history(), "h")) == EXPECTED


def test_a_directory_of_snapshot_files_reads_in_name_order(tmp_path: Path) -> None:
    folder = _write(tmp_path / "snaps", history())
    assert trace_format(str(folder)) == "snapshots"
    assert list(read_snapshots(str(folder))) == EXPECTED


def test_one_snapshot_file_is_a_trace_too(tmp_path: Path) -> None:
    path = tmp_path / "one.json"
    path.write_bytes(encode_snapshot(history()[0]))
    assert trace_format(str(path)) == "snapshots"
    ids = [(j.id, j.end_time) for j in open_trace(str(path))]
    assert ids == [("E", 30.0), ("A", None), ("B", None), ("D", None)]


def test_a_recording_directory_is_followed_frame_by_frame(tmp_path: Path) -> None:
    with RecordingWriter(tmp_path / "rec", "lab", keyframe_every=2) as writer:
        for snapshot in history():
            writer.add(snapshot)
    assert trace_format(str(tmp_path / "rec")) == "recording"
    jobs = list(open_trace(str(tmp_path / "rec")))
    assert [(j.id, j.start_time, j.end_time, j.duration_s) for j in jobs] == [
        (j.id, j.start_time, j.end_time, j.duration_s) for j in EXPECTED
    ]


def test_a_recording_of_two_clusters_prefixes_ids(tmp_path: Path) -> None:
    for cluster in ("east", "west"):
        with RecordingWriter(tmp_path / "rec", cluster) as writer:
            for snapshot in history()[:2]:
                writer.add(Snapshot(cluster, snapshot.backend, snapshot.taken_at, nodes=NODES, jobs=snapshot.jobs))
    ids = sorted(j.id for j in open_trace(str(tmp_path / "rec")))
    assert ids == sorted(f"{c}/{i}" for c in ("east", "west") for i in "ABDE")


def test_snapshots_out_of_time_order_are_refused(tmp_path: Path) -> None:
    folder = _write(tmp_path / "snaps", [history()[1], history()[0]])
    error = trace_error(lambda: read_snapshots(str(folder)))
    assert error.line == 2 and "taken before the one before it" in str(error)


def test_a_damaged_snapshot_names_its_file(tmp_path: Path) -> None:
    folder = _write(tmp_path / "snaps", history()[:2])
    (folder / "snap-001.json").write_text('{"format":"gpuq.snapshot/v1","cluster":1}')
    with pytest.raises(BadInput, match="snap-001.json"):
        list(read_snapshots(str(folder)))


def test_only_live_jobs_are_held() -> None:
    """A long history of short jobs: each job is yielded as soon as it is gone, so the reader
    never holds more than the snapshot in hand."""
    held: list[int] = []

    def frames() -> object:
        for t in range(1, 2001):
            job = make_job(f"j{t}", state=R, submit_time=float(t), start_time=float(t), gpus=1, allocation={"n1": [0]})
            yield make_snapshot("lab", "demo", float(t), nodes=NODES, jobs=[job])

    jobs = follow_snapshots(frames(), "long")  # type: ignore[arg-type]
    for count, job in enumerate(jobs, 1):
        held.append(count)
        if count == 3:
            assert job.id == "j3" and job.end_time == 3.0
            break
    assert held == [1, 2, 3]


def test_missing_and_empty_paths(tmp_path: Path) -> None:
    with pytest.raises(NotFound):
        open_trace(str(tmp_path / "nope"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(BadInput, match="neither recordings"):
        open_trace(str(tmp_path / "empty"))
