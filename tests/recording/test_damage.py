"""Damaged and foreign files: a last frame cut short by a crash is left out with a note; damage
before it, a file that is not a recording, or nothing to replay is a BadInput that says where."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gpuq.backends.recording import Recording, RecordingWriter
from gpuq.backends.recording.format import DELTA, FRAME_HEADER, header_line, pack_frame
from gpuq.backends.recording.reader import scan_file
from gpuq.errors import BadInput
from gpuq.model.codec import encode_snapshot
from tests.recording.story import START, story
from tests.recording.test_round_trip import encodings, record


def frame_offsets(path: Path) -> list[int]:
    scan = scan_file(path)
    assert scan is not None
    return scan.offsets


def test_a_last_frame_cut_at_any_byte_is_left_out(tmp_path: Path) -> None:
    snapshots = story(6, seed=3)
    path = record(tmp_path / "whole", snapshots, keyframe_every=4)  # (frame 4 a keyframe, 5 a delta)
    data = path.read_bytes()
    expected = encodings(snapshots)
    for last in (4, 5):  # a keyframe cut short, then a delta
        cut_dir = tmp_path / f"cut{last}"
        cut_dir.mkdir()
        whole = data[: frame_offsets(path)[last + 1]] if last + 1 < 6 else data
        start = frame_offsets(path)[last]
        for cut in range(start + 1, len(whole)):
            (cut_dir / path.name).write_bytes(whole[:cut])
            recording = Recording.open(cut_dir)
            assert len(recording.times("prod")) == last, cut
            assert recording.notes == (f"{cut_dir / path.name}: the last frame (offset {start}) was cut short and is "
                                       "left out (the recorder stopped while writing it)",), cut  # fmt: skip
            assert encode_snapshot(recording.snapshot_at("prod", last - 1)) == expected[last - 1]
    (cut_dir / path.name).write_bytes(data[: frame_offsets(path)[5]])  # cut between two frames: nothing lost
    assert Recording.open(cut_dir).notes == ()


def test_recording_again_after_a_crash_drops_the_torn_frame(tmp_path: Path) -> None:
    snapshots = story(12, seed=6)
    path = record(tmp_path, snapshots[:8])
    path.write_bytes(path.read_bytes()[:-7])  # frame 7 torn
    record(tmp_path, snapshots[8:])
    recording = Recording.open(tmp_path)
    assert recording.notes == ()
    got = [encode_snapshot(recording.snapshot_at("prod", i)) for i in range(11)]
    assert got == encodings(snapshots[:7] + snapshots[8:])


def test_a_zero_filled_tail_is_a_cut_short_frame(tmp_path: Path) -> None:
    path = record(tmp_path, story(5))
    with path.open("ab") as stream:
        stream.write(bytes(300))  # what a file system may leave of a write a crash interrupted
    recording = Recording.open(tmp_path)
    assert len(recording.times("prod")) == 5
    assert "was cut short" in recording.notes[0]


def test_a_damaged_last_frame_is_left_out(tmp_path: Path) -> None:
    path = record(tmp_path, story(5))
    last = frame_offsets(path)[-1]
    data = bytearray(path.read_bytes())
    data[-3] ^= 0xFF
    path.write_bytes(bytes(data))
    recording = Recording.open(tmp_path)
    assert len(recording.times("prod")) == 4
    assert recording.notes == (f"{path}: the last frame (offset {last}) is damaged (its checksum does not match) "
                               "and is left out",)  # fmt: skip


def test_a_damaged_middle_frame_names_the_file_and_offset(tmp_path: Path) -> None:
    snapshots = story(10)
    path = record(tmp_path, snapshots, keyframe_every=100)
    offset = frame_offsets(path)[3]
    data = bytearray(path.read_bytes())
    data[offset + FRAME_HEADER.size + 5] ^= 0x55
    path.write_bytes(bytes(data))
    recording = Recording.open(tmp_path)
    assert recording.notes == ()
    assert encode_snapshot(recording.snapshot_at("prod", 2)) == encode_snapshot(snapshots[2])
    message = f"{path}: frame 3 at offset {offset}: damaged frame (its checksum does not match)"
    for index in (3, 7):  # (frame 7 is reached through frame 3)
        with pytest.raises(BadInput) as caught:
            Recording.open(tmp_path).snapshot_at("prod", index)
        assert str(caught.value) == message


def test_a_damaged_middle_header_names_the_file_and_offset(tmp_path: Path) -> None:
    path = record(tmp_path, story(10))
    offset = frame_offsets(path)[4]
    data = bytearray(path.read_bytes())
    data[offset] = ord("X")
    path.write_bytes(bytes(data))
    with pytest.raises(BadInput, match=rf"^{path}: damaged frame header at offset {offset} \(frame 4\)"):
        Recording.open(tmp_path)


def test_a_delta_that_does_not_fit_its_frame_before_is_refused(tmp_path: Path) -> None:
    path = record(tmp_path, story(3))
    bad = b'{"taken_at":"2027-01-15T08:00:10Z","removed":["no-such-job"]}'
    size = path.stat().st_size
    with path.open("ab") as stream:
        stream.write(pack_frame(DELTA, START + 10, bad))
    recording = Recording.open(tmp_path)
    with pytest.raises(BadInput, match=rf"^{path}: frame 3 at offset {size}: removes a job the frame before"):
        recording.snapshot_at("prod", 3)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"hello\n", "not a gpuq recording (its first line is not a gpuq.recording/v1 header)"),
        (
            b'{"format":"gpuq.snapshot/v1","cluster":"c","backend":"demo","taken_at":"2027-01-15T08:00:00Z"}\n',
            "not a gpuq recording",
        ),
        (
            b'{"format":"gpuq.recording/v2","cluster":"c"}\n',
            "recording format 'gpuq.recording/v2' is not one this gpuq reads (gpuq.recording/v1)",
        ),
        (b'{"format":"gpuq.recording/v1","cluster":"c","compression":"zstd"}\n', "unknown compression 'zstd'"),
        (b"\x00" * 40, "not a gpuq recording"),
    ],
)
def test_not_a_recording(tmp_path: Path, content: bytes, message: str) -> None:
    (tmp_path / "x.gpuqrec").write_bytes(content)
    with pytest.raises(BadInput, match=rf"^{tmp_path / 'x.gpuqrec'}: {_re(message)}"):
        Recording.open(tmp_path)
    with pytest.raises(BadInput, match=_re(message)):  # the writer will not append to it either
        RecordingWriter(tmp_path, "x")


def _re(text: str) -> str:
    import re

    return re.escape(text)


def test_nothing_to_replay(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match=r"no such recording directory"):
        Recording.open(tmp_path / "missing")
    with pytest.raises(BadInput, match=r"no recordings here \(no \*\.gpuqrec files"):
        Recording.open(tmp_path)
    (tmp_path / "a.gpuqrec").write_bytes(b"")
    (tmp_path / "b.gpuqrec").write_bytes(header_line("b"))
    with pytest.raises(
        BadInput, match=r"no frames recorded yet; .*a\.gpuqrec: empty, left out; .*b\.gpuqrec: no frames"
    ):
        Recording.open(tmp_path)


def test_one_file_may_be_opened_and_two_of_one_cluster_are_refused(tmp_path: Path) -> None:
    path = record(tmp_path, story(4))
    assert Recording.open(path).clusters == ("prod",)
    shutil.copy(path, tmp_path / "copy.gpuqrec")
    with pytest.raises(BadInput, match=r"two recordings of cluster 'prod' \(copy\.gpuqrec, prod\.gpuqrec\)"):
        Recording.open(tmp_path)


def test_a_recording_of_another_cluster_is_not_appended_to(tmp_path: Path) -> None:
    path = record(tmp_path, story(2, cluster="a"))
    path.rename(tmp_path / "b.gpuqrec")
    with pytest.raises(BadInput, match=r"b\.gpuqrec: a recording of cluster 'a', not 'b'"):
        RecordingWriter(tmp_path, "b")


def test_out_of_range_frames(tmp_path: Path) -> None:
    record(tmp_path, story(3))
    recording = Recording.open(tmp_path)
    for index in (-1, 3):
        with pytest.raises(BadInput, match=rf"frame {index} of cluster 'prod': out of range \(0\.\.2\)"):
            recording.snapshot_at("prod", index)


def test_a_delta_nested_too_deep_is_refused_with_where(tmp_path: Path) -> None:
    """msgspec refuses a value nested past its depth limit with RecursionError; the reader says
    which frame it was, as for any other malformed delta."""
    path = record(tmp_path, story(3))
    deep = b'{"taken_at":"2027-01-15T08:00:10Z","x":' + b"[" * 5000 + b"]" * 5000 + b"}"
    size = path.stat().st_size
    with path.open("ab") as stream:
        stream.write(pack_frame(DELTA, START + 10, deep))
    recording = Recording.open(tmp_path)
    with pytest.raises(BadInput, match=rf"^{path}: frame 3 at offset {size}: not a valid delta \(nested too deep\)"):
        recording.snapshot_at("prod", 3)


def test_a_frame_that_inflates_past_the_bound_is_refused_early(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """zlib inflates up to ~1,000×: a small hostile frame must not take gigabytes before its
    error. (The bound made small here: the same check at any size.)"""
    from gpuq.backends.recording import format as recording_format

    monkeypatch.setattr(recording_format, "MAX_INFLATED", 1 << 20)
    path = record(tmp_path, story(3))
    bomb = b'{"taken_at":"2027-01-15T08:00:10Z","x":"' + b"a" * (3 << 20) + b'"}'
    size = path.stat().st_size
    with path.open("ab") as stream:
        stream.write(pack_frame(DELTA, START + 10, bomb))
        stream.write(pack_frame(DELTA, START + 20, b'{"taken_at":"2027-01-15T08:00:20Z"}'))  # (not the last)
    assert path.stat().st_size - size < 64 * 1024  # (a small frame)
    recording = Recording.open(tmp_path)
    with pytest.raises(BadInput, match=rf"^{path}: .*inflates to more than 1 MiB"):
        recording.snapshot_at("prod", 3)
