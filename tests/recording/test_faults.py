"""Recording where the disk fills up or cannot be written: a clear RecordingError, the frame
being written taken back, the frames before it intact, and recording stopped."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest

from gpuq.backends.recording import Recording, RecordingError, RecordingWriter
from gpuq.model.codec import encode_snapshot
from gpuq.service import open_recorder
from tests.recording.story import story
from tests.recording.test_round_trip import encodings


def _half_then_full(monkeypatch: pytest.MonkeyPatch) -> None:
    """os.write takes half of what it is given, then fails as a full disk does."""
    real = os.write
    state = {"wrote": False}

    def write(fd: int, data: Any) -> int:
        if state["wrote"]:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        state["wrote"] = True
        return real(fd, bytes(data)[: len(data) // 2])

    monkeypatch.setattr(os, "write", write)


def test_a_full_disk_takes_the_frame_back_and_stops(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    snapshots = story(8)
    writer = RecordingWriter(tmp_path, "prod", keyframe_every=3)
    for snapshot in snapshots[:5]:
        writer.add(snapshot)
    before = writer.path.read_bytes()
    with monkeypatch.context() as patch:
        _half_then_full(patch)
        with pytest.raises(RecordingError) as caught:
            writer.add(snapshots[5])
    assert str(caught.value) == f"cannot write recording {writer.path}: No space left on device; recording stopped"
    assert writer.path.read_bytes() == before  # (no half frame left behind)
    with pytest.raises(RecordingError, match="recording stopped"):  # it stays stopped, space or not
        writer.add(snapshots[6])
    recording = Recording.open(tmp_path)
    assert recording.notes == ()
    assert [encode_snapshot(recording.snapshot_at("prod", i)) for i in range(5)] == encodings(snapshots[:5])


def test_the_recorder_stops_on_a_full_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    recorder = open_recorder(tmp_path / "rec")
    east, west = story(3, cluster="east"), story(3, cluster="west")
    written = recorder.add(east[0]) + recorder.add(west[0])
    assert written == recorder.bytes_written == sum(p.stat().st_size - len(p.read_bytes().split(b"\n")[0]) - 1
                                                    for p in recorder.paths)  # fmt: skip
    with monkeypatch.context() as patch:
        patch.setattr(os, "write", lambda fd, data: (_ for _ in ()).throw(OSError(errno.ENOSPC, "No space left")))
        with pytest.raises(RecordingError, match=r"east\.gpuqrec: No space left; recording stopped$"):
            recorder.add(east[1])
    assert recorder.stopped is not None
    with pytest.raises(RecordingError, match=r"No space left; recording stopped$"):
        recorder.add(west[1])
    assert sorted(Recording.open(tmp_path / "rec").clusters) == ["east", "west"]


def _refuse_open(monkeypatch: pytest.MonkeyPatch, code: int) -> None:
    def refuse(*args: Any, **kwargs: Any) -> int:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(os, "open", refuse)


@pytest.mark.parametrize("code", [errno.EROFS, errno.EACCES])
def test_a_directory_that_cannot_be_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int) -> None:
    with monkeypatch.context() as patch:
        _refuse_open(patch, code)
        with pytest.raises(RecordingError, match=rf"^cannot record into {tmp_path}: {os.strerror(code)}$"):
            open_recorder(tmp_path)
        with pytest.raises(RecordingError, match=rf"^cannot record into {tmp_path}: {os.strerror(code)}$"):
            RecordingWriter(tmp_path, "prod")
    assert list(tmp_path.iterdir()) == []


def test_a_directory_that_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    with pytest.raises(RecordingError, match=r"^cannot record into .*f: "):
        open_recorder(tmp_path / "f")


def test_a_second_writer_of_one_cluster_is_kept_out(tmp_path: Path) -> None:
    first = RecordingWriter(tmp_path, "prod")
    first.add(story(1)[0])
    with pytest.raises(RecordingError, match=r"prod\.gpuqrec: another gpuq is recording cluster 'prod' into it"):
        RecordingWriter(tmp_path, "prod")
    first.close()
    RecordingWriter(tmp_path, "prod").close()  # (closing let go of it)
