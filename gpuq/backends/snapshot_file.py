"""A read-only backend over a `gpuq.snapshot/v1` file (`--snapshot FILE`, `-` for stdin).

Every read command works on it, so a post-mortem can be run on a saved snapshot; it runs no
actions, since there is no live cluster behind the file to act on (`Capabilities` says why).
"""

from __future__ import annotations

from pathlib import Path

from gpuq.backends.base import Backend, Capabilities
from gpuq.model import Snapshot
from gpuq.model.codec import read_snapshot_file

__all__ = ["SnapshotFileBackend"]


class SnapshotFileBackend(Backend):
    """Serves one snapshot file, read once (stdin can only be read once)."""

    name = "snapshot"

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self._snapshot: Snapshot | None = None

    @property
    def cluster(self) -> str:  # type: ignore[override]  # known only once the file is read
        return self.snapshot().cluster

    @property
    def label(self) -> str:
        """What to call it before it is read (a large file takes a while): the file's name."""
        return self._snapshot.cluster if self._snapshot is not None else Path(self.path).name

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(
            read_only_reason=f"{self.path} is a read-only snapshot; act on the live cluster instead "
            "(drop --snapshot, use --backend/--cluster)"
        )

    def snapshot(self, *, ledger: bool = True) -> Snapshot:  # ledger: the file is all there is
        if self._snapshot is None:
            self._snapshot = read_snapshot_file(self.path)
        return self._snapshot
