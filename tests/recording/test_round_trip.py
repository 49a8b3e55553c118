"""Every replayed frame encodes exactly as the snapshot recorded, whichever way it is reached."""

from __future__ import annotations

import random
from datetime import timedelta, timezone
from pathlib import Path

import msgspec
import pytest

from gpuq.backends.recording import Recording, RecordingWriter, recording_path
from gpuq.backends.recording.format import DELTA, KEYFRAME, FrameEncoder, apply_delta, decode_delta
from gpuq.model import Snapshot
from gpuq.model.codec import encode_snapshot
from gpuq.sim import ClusterSpec, Simulator, WorkloadStream
from tests.factories import at, make_job, make_snapshot
from tests.recording.story import START, story


def record(directory: Path, snapshots: list[Snapshot], keyframe_every: int = 10) -> Path:
    with RecordingWriter(directory, snapshots[0].cluster, keyframe_every=keyframe_every) as writer:
        for snapshot in snapshots:
            writer.add(snapshot)
    return writer.path


def encodings(snapshots: list[Snapshot]) -> list[bytes]:
    return [encode_snapshot(s) for s in snapshots]


def test_every_frame_replays_as_recorded(tmp_path: Path) -> None:
    snapshots = story(120)
    record(tmp_path, snapshots)
    recording = Recording.open(tmp_path)
    assert recording.clusters == ("prod",)
    assert recording.times("prod") == [s.now for s in snapshots]
    assert [encode_snapshot(recording.snapshot_at("prod", i)) for i in range(120)] == encodings(snapshots)
    assert recording.notes == ()


def test_deltas_are_small_and_carry_only_what_changed(tmp_path: Path) -> None:
    snapshots = story(60)
    path = record(tmp_path, snapshots, keyframe_every=1000)
    recording = Recording.open(tmp_path)
    assert recording.keyframes("prod") == [0]  # (the story never changes enough for a keyframe)
    assert path.stat().st_size < sum(len(e) for e in encodings(snapshots)) / 5


def test_simulated_cluster_round_trips(tmp_path: Path) -> None:
    spec = ClusterSpec(nodes=8, gpus_per_node=8)
    sim = Simulator(cluster=spec, stream=WorkloadStream(3, spec, load=1.6), start=START, max_pending=200)
    sim.run_until(START + 4 * 3600)
    snapshots = []
    for _ in range(40):
        sim.run_until(sim.now + 20)
        snapshots.append(sim.snapshot())
    assert any(s.preemption_events != snapshots[0].preemption_events for s in snapshots)  # (events do move)
    record(tmp_path, snapshots, keyframe_every=7)
    recording = Recording.open(tmp_path)
    assert [encode_snapshot(recording.snapshot_at("demo", i)) for i in range(40)] == encodings(snapshots)


def test_seeking_anywhere_equals_sequential_replay(tmp_path: Path) -> None:
    snapshots = story(90, seed=4)
    record(tmp_path, snapshots, keyframe_every=8)
    expected = encodings(snapshots)
    rng = random.Random(9)
    order = [89, 0, 45, 44, 43, 46, 10, 9, 8, 7, 88, 1] + [rng.randrange(90) for _ in range(80)]
    # A small cache makes the seeks go back to keyframes; a large one serves them from snapshots kept.
    for cache_size in (1, 3, 200):
        recording = Recording.open(tmp_path, cache_size=cache_size)
        for index in order:
            assert encode_snapshot(recording.snapshot_at("prod", index)) == expected[index], (cache_size, index)
        for index in range(89, -1, -1):  # backwards, frame by frame
            assert encode_snapshot(recording.snapshot_at("prod", index)) == expected[index]


@pytest.mark.parametrize("every", [1, 2, 5, 13])
def test_keyframe_interval_is_kept(tmp_path: Path, every: int) -> None:
    record(tmp_path, story(60, seed=2), keyframe_every=every)
    keys = Recording.open(tmp_path).keyframes("prod")
    assert keys[0] == 0
    assert all(b - a <= every for a, b in zip(keys, [*keys[1:], 60], strict=True))
    if every == 1:
        assert keys == list(range(60))


def test_a_delta_bigger_than_a_keyframe_is_written_as_a_keyframe() -> None:
    before = make_snapshot("c", "demo", START, jobs=[make_job(f"old-{i:04d}") for i in range(20)])
    # Every job replaced: the delta would hold all the new jobs and every old id besides.
    replaced = make_snapshot("c", "demo", START + 2, jobs=[make_job(str(i)) for i in range(100, 120)])
    one_more = make_snapshot("c", "demo", START + 4, jobs=[*replaced.jobs, make_job("200")])
    encoder = FrameEncoder(keyframe_every=100)
    frames = [encoder.encode(s) for s in (before, replaced, one_more)]
    assert [kind for kind, _ in frames] == [KEYFRAME, KEYFRAME, DELTA]
    assert frames[1][1] + b"\n" == encode_snapshot(replaced)  # (a keyframe is the snapshot file itself)


def test_a_change_of_utc_offset_alone_is_recorded(tmp_path: Path) -> None:
    """The same instant written with another offset encodes differently: replay keeps it."""
    job = make_job("1", submit_time=START)
    moved = msgspec.structs.replace(job, submit_time=at(START).astimezone(timezone(timedelta(hours=-5))))
    assert moved == job  # (equal as datetimes; only the encoding tells them apart)
    snapshots = [make_snapshot("c", "demo", START + i, jobs=[j]) for i, j in enumerate((job, moved, job))]
    record(tmp_path, snapshots)
    recording = Recording.open(tmp_path)
    assert [encode_snapshot(recording.snapshot_at("c", i)) for i in range(3)] == encodings(snapshots)


def test_order_cluster_and_backend_changes_replay() -> None:
    jobs = [make_job(str(i)) for i in range(10)]
    first = make_snapshot("c", "demo", START, jobs=jobs)
    shuffled = [jobs[i] for i in (9, 0, 1, 2, 5, 6, 7, 3, 4, 8)]
    second = Snapshot("c", "slurm", at(START + 2), (), (), (*shuffled[:4], make_job("new"), *shuffled[4:]))
    encoder = FrameEncoder()
    encoder.encode(first)
    kind, payload = encoder.encode(second)
    assert kind == DELTA
    delta = decode_delta(payload, "test")
    assert delta.jobs == (make_job("new"),) and delta.backend == "slurm" and delta.order is not None
    assert encode_snapshot(apply_delta(first, delta, "test")) == encode_snapshot(second)


def test_two_clusters_in_one_directory(tmp_path: Path) -> None:
    east, west = story(30, seed=1, cluster="east"), story(20, seed=2, cluster="west/1")
    record(tmp_path, east)
    record(tmp_path, west)
    assert recording_path(tmp_path, "west/1").parent == tmp_path  # (a name with a slash stays in DIR)
    recording = Recording.open(tmp_path)
    assert sorted(recording.clusters) == ["east", "west/1"]
    assert [encode_snapshot(recording.snapshot_at("west/1", i)) for i in range(20)] == encodings(west)
    assert [encode_snapshot(recording.snapshot_at("east", i)) for i in range(30)] == encodings(east)


def test_a_writer_reopened_appends_and_starts_with_a_keyframe(tmp_path: Path) -> None:
    snapshots = story(30, seed=5)
    record(tmp_path, snapshots[:12], keyframe_every=100)
    record(tmp_path, snapshots[12:], keyframe_every=100)
    recording = Recording.open(tmp_path)
    assert recording.keyframes("prod") == [0, 12]
    assert [encode_snapshot(recording.snapshot_at("prod", i)) for i in range(30)] == encodings(snapshots)


def test_queues_and_unread_survive_keyframes_and_deltas(tmp_path: Path) -> None:
    """A recording of a Kueue cluster viewed without every right keeps its queues and what the
    backend could not read, in keyframes and in the deltas where they come, change and go."""
    from dataclasses import replace

    from gpuq.model import Queue, QueuePolicy, Unread

    quiet = (Queue("cq-a", cohort="all"),)
    strict = (Queue("cq-a", cohort="all", within_queue=QueuePolicy.LOWER_PRIORITY), Queue("cq-b", cohort="all"))
    nodes = (Unread("nodes", "forbidden", "GPU totals from pods only"),)
    both = (*nodes, Unread("workloads.kueue.x-k8s.io", "forbidden", "jobs Kueue holds back are not shown"))
    plan = [(quiet, ())] * 3 + [(quiet, nodes)] * 4 + [(strict, both)] * 5 + [(strict, ())] * 4 + [((), nodes)] * 4
    snapshots = [replace(s, queues=q, unread=u) for s, (q, u) in zip(story(len(plan)), plan, strict=True)]
    record(tmp_path, snapshots, keyframe_every=7)
    recording = Recording.open(tmp_path)
    assert recording.keyframes("prod") == [0, 7, 14]  # (so the changes at 3, 12 and 16 come in deltas)
    replayed = [recording.snapshot_at("prod", i) for i in range(len(plan))]
    assert [(s.queues, s.unread) for s in replayed] == plan
    assert [encode_snapshot(s) for s in replayed] == encodings(snapshots)
    backwards = [recording.snapshot_at("prod", i) for i in reversed(range(len(plan)))]
    assert [(s.queues, s.unread) for s in reversed(backwards)] == plan
