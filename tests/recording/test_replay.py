"""`Replay`: read-only Cluster handles on a recording, at a frame each, with the policy the live
cluster would have had."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuq.audit import AuditLog
from gpuq.backends.demo import DEMO_POLICY
from gpuq.backends.recording import Recording, ReplayBackend
from gpuq.config import Config, PolicySource
from gpuq.errors import BadInput, NotFound, Refused
from gpuq.model import JobState
from gpuq.model.codec import encode_snapshot
from gpuq.policy.config import Policy
from gpuq.service import READ_ONLY_REASON, open_replay
from tests.recording.story import START, story
from tests.recording.test_round_trip import encodings, record


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    record(tmp_path / "rec", story(30, seed=7, cluster="east"))
    record(tmp_path / "rec", story(20, seed=8, cluster="west", step_s=3.0))
    return tmp_path / "rec"


def test_replay_serves_each_cluster_at_its_frame(recorded: Path, tmp_path: Path) -> None:
    replay = open_replay(recorded, config=Config(), audit=AuditLog(tmp_path / "audit.jsonl"))
    assert sorted(c.name for c in replay.clusters) == ["east", "west"]
    east = replay.cluster("east")
    expected = encodings(story(30, seed=7, cluster="east"))
    assert encode_snapshot(east.snapshot()) == expected[0]
    assert encode_snapshot(replay.seek("east", 17)) == expected[17]
    assert encode_snapshot(east.snapshot()) == expected[17] and replay.position("east") == 17
    assert replay.position("west") == 0
    assert replay.times("west") == [START + 3.0 * i for i in range(20)]
    assert replay.span == (START, START + 2.0 * 29)  # (east ends last)


def test_index_at_is_the_last_frame_at_or_before(recorded: Path) -> None:
    replay = open_replay(recorded, config=Config())
    assert replay.index_at("east", START + 10.0) == 5
    assert replay.index_at("east", START + 11.9) == 5
    assert replay.index_at("east", START - 100) == 0
    assert replay.index_at("east", START + 1e6) == 29


def test_actions_are_refused_as_read_only(recorded: Path, tmp_path: Path) -> None:
    replay = open_replay(recorded, config=Config(), audit=AuditLog(tmp_path / "audit.jsonl"))
    cluster = replay.cluster("east")
    assert cluster.capabilities.actions == frozenset()
    snapshot = replay.seek("east", 29)
    pending = next(j for j in snapshot.jobs if j.state is JobState.PENDING)
    running = next(j for j in snapshot.jobs if j.state is JobState.RUNNING)
    message = f"cannot bump jobs: {READ_ONLY_REASON}"
    with pytest.raises(Refused, match=f"^{message}$"):
        cluster.prepare_bump(pending.id, to=5)
    with pytest.raises(Refused, match=f"^cannot preempt jobs: {READ_ONLY_REASON}$"):
        cluster.prepare_preempt(running.id)
    with pytest.raises(Refused, match=f"^cannot exempt jobs: {READ_ONLY_REASON}$"):
        cluster.prepare_exempt(running.id, for_s=60.0)
    assert READ_ONLY_REASON == "a recording is read-only"


def test_policy_resolves_as_for_the_live_cluster(recorded: Path, tmp_path: Path) -> None:
    replay = open_replay(recorded, config=Config())
    east = replay.cluster("east")  # recorded from the demo backend: its site policy
    assert east.policy == DEMO_POLICY and east.policy_source.source == "demo backend's built-in policy"
    mine = PolicySource(Policy(delta=7.0), "config.toml")
    assert open_replay(recorded, config=Config(policy=mine)).cluster("west").policy_source == mine


def test_unknown_clusters_and_frames(recorded: Path) -> None:
    replay = open_replay(recorded, config=Config())
    with pytest.raises(NotFound, match=r"no cluster 'north' in recording"):
        replay.seek("north", 0)
    with pytest.raises(BadInput, match=r"frame 20 of cluster 'west': out of range \(0\.\.19\)"):
        replay.seek("west", 20)
    assert replay.position("west") == 0
    with pytest.raises(NotFound, match=r"recorded: east, west"):
        ReplayBackend(Recording.open(recorded), "north")
