"""Incident recordings for front ends: `Recorder` keeps every refresh of each cluster
(`gpuq tui --record DIR`), `Replay` opens them as read-only `Cluster` handles at a movable
frame (`gpuq tui --replay DIR`). The file format is `gpuq.backends.recording`'s."""

from __future__ import annotations

import bisect
import tempfile
import threading
from pathlib import Path
from types import TracebackType

from gpuq.audit import AuditLog
from gpuq.backends.recording import (
    DEFAULT_KEYFRAME_EVERY,
    READ_ONLY_REASON,
    Recording,
    RecordingError,
    RecordingWriter,
    ReplayBackend,
)
from gpuq.backends.registry import available_backends, backend_class
from gpuq.config import Config, PolicySource, load_config, load_policy_file
from gpuq.errors import GpuqError, NotFound
from gpuq.model import Snapshot
from gpuq.service.cluster import Cluster
from gpuq.textsafe import visible

__all__ = ["READ_ONLY_REASON", "Recorder", "RecordingError", "Replay", "open_recorder", "open_replay"]


class Recorder:
    """Writes each snapshot it is given to its cluster's recording in `directory`.

    Thread-safe. A failure (RecordingError: disk full, read-only directory; BadInput: a file
    there that is not a recording of that cluster) stops the recording: every later `add`
    raises RecordingError saying why, and the files keep every frame written before it."""

    def __init__(self, directory: Path, *, keyframe_every: int = DEFAULT_KEYFRAME_EVERY) -> None:
        self.directory = directory
        self.keyframe_every = keyframe_every
        self._writers: dict[str, RecordingWriter] = {}
        self._lock = threading.Lock()
        self._stopped: str | None = None
        self.bytes_written = 0

    @property
    def stopped(self) -> str | None:
        """Why recording stopped; None while it records."""
        return self._stopped

    def add(self, snapshot: Snapshot) -> int:
        """Record `snapshot` as its cluster's next frame: the bytes written."""
        with self._lock:
            if self._stopped is not None:
                raise RecordingError(self._stopped)
            try:
                writer = self._writers.get(snapshot.cluster)
                if writer is None:
                    writer = self._writers[snapshot.cluster] = RecordingWriter(
                        self.directory, snapshot.cluster, keyframe_every=self.keyframe_every)  # fmt: skip
                written = writer.add(snapshot)
            except GpuqError as exc:
                self._stopped = f"{exc}" if isinstance(exc, RecordingError) else f"{exc}; recording stopped"
                self._close_writers()
                raise RecordingError(self._stopped) from None
            self.bytes_written += written
            return written

    @property
    def paths(self) -> list[Path]:
        """The files written so far, one per cluster."""
        with self._lock:
            return [w.path for w in self._writers.values()]

    def close(self) -> None:
        with self._lock:
            if self._stopped is None:
                self._stopped = f"recording into {self.directory} was closed"
            self._close_writers()

    def _close_writers(self) -> None:
        for writer in self._writers.values():
            writer.close()

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def open_recorder(directory: str | Path, *, keyframe_every: int = DEFAULT_KEYFRAME_EVERY) -> Recorder:
    """A `Recorder` into `directory` (created when missing). RecordingError at once when it
    cannot be written, so ``--record`` on a read-only place fails before the console starts."""
    path = Path(directory)
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as exc:
        raise RecordingError(f"cannot record into {path}: {exc.strerror}") from None
    return Recorder(path, keyframe_every=keyframe_every)


class Replay:
    """A recording opened for review: a read-only `Cluster` per recorded cluster, each at a frame
    of its own (`seek`; the first frame to begin with). Thread-safe, like `Cluster`."""

    def __init__(self, recording: Recording, clusters: dict[str, Cluster], backends: dict[str, ReplayBackend]) -> None:
        self.recording = recording
        self._clusters = clusters
        self._backends = backends
        self._seek_lock = threading.Lock()  # (a seek and the read of its frame go together)

    @property
    def clusters(self) -> list[Cluster]:
        """A handle per recorded cluster (the console's tabs), in file name order."""
        return list(self._clusters.values())

    @property
    def notes(self) -> tuple[str, ...]:
        """What opening left out (a last frame cut short by a crash, an empty file)."""
        return self.recording.notes

    def cluster(self, name: str) -> Cluster:
        self._backend(name)
        return self._clusters[name]

    def _backend(self, name: str) -> ReplayBackend:
        backend = self._backends.get(name)
        if backend is None:
            raise NotFound(f"no cluster {visible(name)!r} in recording {self.recording.source}")
        return backend

    def times(self, cluster: str) -> list[float]:
        """Each frame's time (epoch seconds), in recorded order."""
        return self.recording.times(cluster)

    def position(self, cluster: str) -> int:
        """The frame `cluster`'s handle shows."""
        return self._backend(cluster).index

    def seek(self, cluster: str, index: int) -> Snapshot:
        """Move `cluster`'s handle to frame `index` and return that snapshot (also the handle's
        latest, as a refresh leaves it). BadInput for a frame out of range or damaged."""
        backend = self._backend(cluster)
        with self._seek_lock:
            backend.seek(index)
            return self._clusters[cluster].refresh()

    def index_at(self, cluster: str, epoch_seconds: float) -> int:
        """The last frame of `cluster` at or before `epoch_seconds` (the first frame for a time
        before it)."""
        times = self.recording.times(cluster)
        # (a clock stepped back while recording leaves times out of order: go by the latest so far)
        latest: list[float] = []
        for t in times:
            latest.append(t if not latest or t > latest[-1] else latest[-1])
        return max(0, bisect.bisect_right(latest, epoch_seconds) - 1)

    @property
    def span(self) -> tuple[float, float]:
        """The first and last frame times over every cluster (epoch seconds)."""
        firsts, lasts = [], []
        for name in self._backends:
            times = self.recording.times(name)
            firsts.append(min(times))
            lasts.append(max(times))
        return min(firsts), max(lasts)


def open_replay(
    directory: str | Path,
    *,
    config: Config | None = None,
    config_file: str | None = None,
    policy_file: str | None = None,
    audit: AuditLog | None = None,
) -> Replay:
    """Open the recordings in `directory` (or one ``.gpuqrec`` file) for review. Each cluster's
    policy resolves as `open_cluster` would for it (``--policy``, its config table, the top-level
    one, the recorded backend's built-in one, the defaults), since the views judge the jobs by it.
    BadInput when there is nothing to replay (see `Recording.open`)."""
    recording = Recording.open(directory)
    cfg = config if config is not None else load_config(config_file)
    clusters: dict[str, Cluster] = {}
    backends: dict[str, ReplayBackend] = {}
    for name in recording.clusters:
        policy = load_policy_file(policy_file) if policy_file else cfg.policy_for(name)
        first = recording.snapshot_at(name, 0)
        if policy.source == "defaults" and first.backend in available_backends():
            try:
                site_default = backend_class(first.backend).default_policy
            except GpuqError:  # (a backend that no longer loads here: gpuq's defaults)
                site_default = None
            if site_default is not None:
                policy = PolicySource(site_default, f"{first.backend} backend's built-in policy")
        backend = backends[name] = ReplayBackend(recording, name)
        clusters[name] = Cluster(backend, "replay", policy, audit)
    return Replay(recording, clusters, backends)
