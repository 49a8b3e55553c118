"""A read-only backend over a `gpuq.snapshot/v1` file (`--snapshot FILE`, `-` for stdin).

Every read command works on it, so a post-mortem can be run on a saved snapshot; actions are
refused because there is no live cluster behind the file to act on.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from gpuq.backends.base import ActionResult, Backend
from gpuq.errors import Refused
from gpuq.model import Snapshot
from gpuq.policy.config import Mode
from gpuq.snapshot_io import read_snapshot_file

__all__ = ["SnapshotFileBackend"]


class SnapshotFileBackend(Backend):
    """Serves one snapshot file, read once (stdin can only be read once)."""

    name: ClassVar[str] = "snapshot"
    knows_gpu_indexes: ClassVar[bool] = True

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self._snapshot: Snapshot | None = None

    @property
    def cluster(self) -> str:  # type: ignore[override]  # known only once the file is read
        return self.snapshot().cluster

    def snapshot(self, *, ledger: bool = True) -> Snapshot:  # ledger: the file is all there is
        if self._snapshot is None:
            self._snapshot = read_snapshot_file(self.path)
        return self._snapshot

    def _refuse(self, action: str) -> Refused:
        return Refused(
            f"cannot {action}: {self.path} is a read-only snapshot; "
            "act on the live cluster instead (drop --snapshot, use --backend/--cluster)"
        )

    def bump(self, job_id: str, *, priority: int | None, urgent: bool, reason: str, dry_run: bool) -> ActionResult:
        raise self._refuse(f"bump job {job_id}")

    def exempt(self, job_id: str, *, until: float | None, reason: str, dry_run: bool) -> ActionResult:
        raise self._refuse(f"exempt job {job_id}")

    def preempt(self, job_id: str, *, mode: Mode, reason: str, dry_run: bool) -> ActionResult:
        raise self._refuse(f"preempt job {job_id}")
