"""Reading recordings: `Recording` (every cluster of a directory) and `ReplayBackend` (one
cluster's frames at a movable cursor, read-only).

Opening scans the frame headers only (a seek and a 21-byte read per frame) into an index of
times, offsets and keyframes. A snapshot is decoded from the nearest keyframe or cached snapshot
at or before it, so stepping forward decodes one delta, and a seek at most `keyframe_every - 1`.
A last frame cut short or damaged (the recorder stopped mid-write) is dropped with a note; a
damaged frame before it is a BadInput naming the file and the frame's offset.
"""

from __future__ import annotations

import bisect
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from gpuq.backends.base import Backend, Capabilities
from gpuq.backends.recording.format import (
    FRAME_HEADER,
    KEYFRAME,
    MAX_HEADER_LINE,
    SUFFIX,
    FrameHeader,
    apply_delta,
    decode_delta,
    decode_keyframe,
    parse_header_line,
    unpack_frame_header,
    unpack_payload,
)
from gpuq.errors import BadInput, NotFound
from gpuq.files import refuse_special
from gpuq.model import Snapshot
from gpuq.textsafe import visible

__all__ = ["READ_ONLY_REASON", "Recording", "ReplayBackend", "Scan", "scan_file"]

READ_ONLY_REASON = "a recording is read-only"
_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class Scan:
    """One file's index: its cluster, frame offsets and headers, where its good frames end, and
    a note when a last frame was dropped (None: nothing dropped)."""

    path: Path
    cluster: str
    offsets: list[int]
    headers: list[FrameHeader]
    end: int
    note: str | None = None


def scan_file(path: Path) -> Scan | None:
    """Index `path` by its frame headers (None: the file is empty); BadInput when it is not a v1
    recording or a frame before the last is damaged."""
    refuse_special(path, "recording")
    try:
        with open(path, "rb") as stream:
            if os.fstat(stream.fileno()).st_size == 0:
                return None
            return _scan(path, stream)
    except OSError as exc:
        raise BadInput(f"{path}: cannot read recording ({exc.strerror})") from None


def _scan(path: Path, stream: BinaryIO) -> Scan:
    size = os.fstat(stream.fileno()).st_size
    cluster = parse_header_line(stream.readline(MAX_HEADER_LINE), str(path))
    offset = stream.tell()
    offsets: list[int] = []
    headers: list[FrameHeader] = []
    note = None
    hsize = FRAME_HEADER.size
    while offset < size:
        stream.seek(offset)
        raw = stream.read(hsize)
        header = unpack_frame_header(raw) if len(raw) == hsize else None
        if header is None and len(raw) == hsize and not _zeros(stream, offset, size):
            raise BadInput(f"{path}: damaged frame header at offset {offset} (frame {len(offsets)}); "
                           f"the frames after it cannot be found")  # fmt: skip
        if header is None or offset + hsize + header.length > size:
            note = (f"{path}: the last frame (offset {offset}) was cut short and is left out "
                    "(the recorder stopped while writing it)")  # fmt: skip
            break
        offsets.append(offset)
        headers.append(header)
        offset += hsize + header.length
    if headers and note is None:  # a last frame all there but damaged: also a write cut short
        last = headers[-1]
        stream.seek(offsets[-1] + hsize)
        try:
            unpack_payload(last, stream.read(last.length))
        except ValueError as exc:
            note = f"{path}: the last frame (offset {offsets[-1]}) is damaged ({exc}) and is left out"
            offset = offsets.pop()
            headers.pop()
    return Scan(path, cluster, offsets, headers, offset if note else size, note)


def _zeros(stream: BinaryIO, offset: int, size: int) -> bool:
    """Whether the file is all NUL bytes from `offset`: a file system that kept the length of a
    write a crash cut short, but not its data."""
    stream.seek(offset)
    while offset < size:
        chunk = stream.read(_CHUNK)
        if not chunk or chunk.count(0) != len(chunk):
            return False
        offset += len(chunk)
    return True


@dataclass(slots=True)
class _Track:
    scan: Scan
    times: list[float]
    keyframes: list[int]
    lock: threading.Lock = field(default_factory=threading.Lock)
    cache: OrderedDict[int, Snapshot] = field(default_factory=OrderedDict)


class Recording:
    """The recordings in a directory, one per cluster (`open`)."""

    def __init__(self, source: Path, tracks: dict[str, _Track], notes: tuple[str, ...], cache_size: int) -> None:
        self.source = source
        self._tracks = tracks
        self._notes = notes
        self._cache_size = max(1, cache_size)

    @classmethod
    def open(cls, directory: str | Path, *, cache_size: int = 64) -> Recording:
        """Every ``*.gpuqrec`` in `directory` (or that one file). BadInput when there is none,
        one is not a recording (or of a format version this gpuq does not read), two record the
        same cluster, or none holds a frame. `cache_size`: decoded snapshots kept per cluster."""
        source = Path(directory)
        if source.is_dir():
            try:
                paths = sorted(p for p in source.iterdir() if p.name.endswith(SUFFIX) and p.is_file())
            except OSError as exc:
                raise BadInput(f"{source}: cannot list the recordings ({exc.strerror})") from None
            if not paths:
                raise BadInput(f"{source}: no recordings here (no *{SUFFIX} files; record with `gpuq tui --record "
                               f"{source}`)")  # fmt: skip
        elif source.exists():
            paths = [source]
        else:
            raise BadInput(f"{source}: no such recording directory")
        tracks: dict[str, _Track] = {}
        notes: list[str] = []
        for path in paths:
            scan = scan_file(path)
            if scan is None:
                notes.append(f"{path}: empty, left out")
                continue
            if scan.note:
                notes.append(scan.note)
            if scan.cluster in tracks:
                raise BadInput(f"{source}: two recordings of cluster {visible(scan.cluster)!r} "
                               f"({tracks[scan.cluster].scan.path.name}, {path.name}); keep one")  # fmt: skip
            if not scan.headers:
                notes.append(f"{path}: no frames, left out")
                continue
            keyframes = [i for i, h in enumerate(scan.headers) if h.kind == KEYFRAME]
            if not keyframes or keyframes[0] != 0:
                raise BadInput(f"{path}: its first frame (offset {scan.offsets[0]}) is not a keyframe")
            tracks[scan.cluster] = _Track(scan, [h.time for h in scan.headers], keyframes)
        if not tracks:
            raise BadInput(f"{source}: no frames recorded yet" + "".join(f"; {n}" for n in notes))
        return cls(source, tracks, tuple(notes), cache_size)

    @property
    def clusters(self) -> tuple[str, ...]:
        """The clusters recorded, in file name order."""
        return tuple(self._tracks)

    @property
    def notes(self) -> tuple[str, ...]:
        """What was left out when opening (a frame cut short by a crash, an empty file)."""
        return self._notes

    def _track(self, cluster: str) -> _Track:
        track = self._tracks.get(cluster)
        if track is None:
            raise NotFound(f"no cluster {visible(cluster)!r} in recording {self.source} "
                           f"(recorded: {', '.join(visible(c) for c in self._tracks)})")  # fmt: skip
        return track

    def path(self, cluster: str) -> Path:
        return self._track(cluster).scan.path

    def times(self, cluster: str) -> list[float]:
        """The time (epoch seconds) of each frame of `cluster`, in recorded order (a copy)."""
        return list(self._track(cluster).times)

    def keyframes(self, cluster: str) -> list[int]:
        """The indexes of `cluster`'s keyframes."""
        return list(self._track(cluster).keyframes)

    def snapshot_at(self, cluster: str, index: int) -> Snapshot:
        """`cluster` as frame `index` recorded it. BadInput for an index out of range or a
        damaged frame (naming the file and the frame's offset)."""
        track = self._track(cluster)
        count = len(track.times)
        if not 0 <= index < count:
            raise BadInput(f"frame {index} of cluster {visible(cluster)!r}: out of range (0..{count - 1})")
        with track.lock:
            cache = track.cache
            hit = cache.get(index)
            if hit is not None:
                cache.move_to_end(index)
                return hit
            key = track.keyframes[bisect.bisect_right(track.keyframes, index) - 1]
            start = max((i for i in cache if key <= i < index), default=None)
            scan = track.scan
            try:
                stream = open(scan.path, "rb")  # noqa: SIM115 - closed below; OSError from open too
            except OSError as exc:
                raise BadInput(f"{scan.path}: cannot read recording ({exc.strerror})") from None
            with stream:
                if start is None:
                    snapshot = decode_keyframe(self._payload(scan, stream, key), self._where(scan, key))
                    self._keep(track, key, snapshot)
                    start = key
                else:
                    snapshot = cache[start]
                for i in range(start + 1, index + 1):
                    where = self._where(scan, i)
                    snapshot = apply_delta(snapshot, decode_delta(self._payload(scan, stream, i), where), where)
                    self._keep(track, i, snapshot)
            return snapshot

    def _keep(self, track: _Track, index: int, snapshot: Snapshot) -> None:
        track.cache[index] = snapshot
        track.cache.move_to_end(index)
        while len(track.cache) > self._cache_size:
            track.cache.popitem(last=False)

    @staticmethod
    def _where(scan: Scan, index: int) -> str:
        return f"{scan.path}: frame {index} at offset {scan.offsets[index]}"

    def _payload(self, scan: Scan, stream: BinaryIO, index: int) -> bytes:
        header = scan.headers[index]
        try:
            stream.seek(scan.offsets[index] + FRAME_HEADER.size)
            packed = stream.read(header.length)
        except OSError as exc:
            raise BadInput(f"{self._where(scan, index)}: cannot read ({exc.strerror})") from None
        try:
            return unpack_payload(header, packed)
        except ValueError as exc:
            raise BadInput(f"{self._where(scan, index)}: damaged frame ({exc})") from None


class ReplayBackend(Backend):
    """One cluster of a `Recording`, read-only: `snapshot` is the frame at the cursor (`seek`)."""

    name = "replay"

    def __init__(self, recording: Recording, cluster: str, index: int = 0) -> None:
        self.recording = recording
        self.cluster = cluster
        self._count = len(recording.times(cluster))  # (NotFound for a cluster not recorded)
        self._index = 0
        self.seek(index)

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(read_only_reason=READ_ONLY_REASON)

    @property
    def index(self) -> int:
        """The frame `snapshot` serves."""
        return self._index

    def seek(self, index: int) -> None:
        """Serve frame `index` from now on; BadInput when the recording has no such frame."""
        if not 0 <= index < self._count:
            raise BadInput(f"frame {index} of cluster {visible(self.cluster)!r}: out of range (0..{self._count - 1})")
        self._index = index

    def snapshot(self, *, ledger: bool = True) -> Snapshot:  # ledger: the recording is all there is
        return self.recording.snapshot_at(self.cluster, self._index)
