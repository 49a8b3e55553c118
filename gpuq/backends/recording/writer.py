"""Writing recordings: `RecordingWriter` appends one cluster's frames to ``DIR/<cluster>.gpuqrec``.

Each frame goes to the file in one `os.write` loop as soon as it is made (no fsync: a crash
loses at most the frame being written, which the reader then leaves out). A write that fails
(disk full, the directory gone read-only) is taken back and stops the writer with a
`RecordingError`. A writer reopening a recording appends to it (after dropping a last frame
cut short) and starts with a keyframe; an exclusive `flock` keeps a second gpuq out.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import re
import threading
from pathlib import Path
from types import TracebackType

from gpuq.backends.recording.format import DEFAULT_KEYFRAME_EVERY, SUFFIX, FrameEncoder, header_line, pack_frame
from gpuq.backends.recording.reader import scan_file
from gpuq.errors import BadInput, GpuqError
from gpuq.model import Snapshot
from gpuq.textsafe import visible

__all__ = ["RecordingError", "RecordingWriter", "recording_path"]

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


class RecordingError(GpuqError):
    """A recording could not be written (a full disk, a read-only directory); it stops there."""

    exit_code = 1


def recording_path(directory: str | Path, cluster: str) -> Path:
    """Where `cluster` is recorded in `directory`: its name where it is a safe file name, else
    the safe part and a hash of the name (so two clusters never share a file)."""
    safe = _UNSAFE.sub("_", cluster).lstrip(".")[:80]
    if safe != cluster or not safe:
        digest = hashlib.sha256(cluster.encode("utf-8", "surrogatepass")).hexdigest()[:10]
        safe = f"{safe or 'cluster'}-{digest}"
    return Path(directory) / f"{safe}{SUFFIX}"


class RecordingWriter:
    """Appends frames of one cluster's snapshots to its recording in `directory` (created when
    missing). RecordingError when the directory or file cannot be written or another gpuq
    records there; BadInput when the file is there but is not a recording of `cluster`."""

    def __init__(self, directory: str | Path, cluster: str, *, keyframe_every: int = DEFAULT_KEYFRAME_EVERY) -> None:
        self.cluster = cluster
        self.path = recording_path(directory, cluster)
        self._encoder = FrameEncoder(keyframe_every)
        self._lock = threading.Lock()
        self._stopped: str | None = None
        self.frames_written = 0
        self.bytes_written = 0
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise RecordingError(f"cannot record into {self.path.parent}: {exc.strerror}") from None
        try:
            self._size = self._prepare(fd)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def _prepare(self, fd: int) -> int:
        """Lock the file, drop a last frame cut short, write the header of a new one: its size."""
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.EACCES):
                raise RecordingError(f"{self.path}: another gpuq is recording cluster {visible(self.cluster)!r} "
                                     "into it; record into another directory") from None  # fmt: skip
            raise RecordingError(f"cannot record into {self.path}: {exc.strerror}") from None
        try:
            scan = scan_file(self.path)
            if scan is not None and scan.cluster != self.cluster:
                raise BadInput(f"{self.path}: a recording of cluster {visible(scan.cluster)!r}, not "
                               f"{visible(self.cluster)!r}; record into another directory")  # fmt: skip
            if scan is not None:
                if scan.end < os.fstat(fd).st_size:
                    os.ftruncate(fd, scan.end)
                return scan.end
            header = header_line(self.cluster)
            _write_all(fd, header)
            return len(header)
        except OSError as exc:
            raise RecordingError(f"cannot record into {self.path}: {exc.strerror}") from None

    def add(self, snapshot: Snapshot) -> int:
        """Append a frame of `snapshot`: the bytes written. RecordingError when it cannot be
        written (nothing of it is left in the file) or the writer has stopped."""
        with self._lock:
            if self._stopped is not None:
                raise RecordingError(self._stopped)
            if snapshot.cluster != self.cluster:
                raise BadInput(f"a snapshot of cluster {visible(snapshot.cluster)!r} is not for the recording of "
                               f"{visible(self.cluster)!r}")  # fmt: skip
            kind, payload = self._encoder.encode(snapshot)
            frame = pack_frame(kind, snapshot.now, payload)
            try:
                _write_all(self._fd, frame)
            except OSError as exc:
                with contextlib.suppress(OSError):
                    os.ftruncate(self._fd, self._size)  # (the part that got through)
                self._stop(f"cannot write recording {self.path}: {exc.strerror}; recording stopped")
                assert self._stopped is not None
                raise RecordingError(self._stopped) from None
            self._size += len(frame)
            self.frames_written += 1
            self.bytes_written += len(frame)
            return len(frame)

    @property
    def stopped(self) -> str | None:
        """Why the writer stopped (a failed write, `close`); None while it records."""
        return self._stopped

    def _stop(self, why: str) -> None:
        self._stopped = why
        with contextlib.suppress(OSError):
            os.close(self._fd)  # (closing releases the flock)

    def close(self) -> None:
        with self._lock:
            if self._stopped is None:
                self._stop(f"the recording of {visible(self.cluster)!r} was closed")

    def __enter__(self) -> RecordingWriter:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if written <= 0:  # (a write that takes nothing would loop for ever)
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        view = view[written:]
