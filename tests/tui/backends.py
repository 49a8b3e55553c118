"""Backends for console tests: a snapshot file that can be told to fail, as a cluster that is
down (at start, or mid-session) answers."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from gpuq.backends.base import Backend, Capabilities
from gpuq.config import PolicySource
from gpuq.errors import Unreachable
from gpuq.model import Snapshot
from gpuq.model.codec import read_snapshot_file
from gpuq.policy.config import DEFAULT_POLICY
from gpuq.service import Cluster

__all__ = ["FlakyBackend", "flaky_cluster"]


class FlakyBackend(Backend):
    """Serves a snapshot file; `down` makes every read fail as an unreachable cluster does.
    `reads` counts the attempts (failed ones included)."""

    name = "flaky"

    def __init__(self, path: Path, cluster: str = "lab", *, down: bool = False) -> None:
        self.snap = dataclasses.replace(read_snapshot_file(path), cluster=cluster)
        self.cluster = cluster
        self.down = down
        self.reads = 0

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(read_only_reason="a test backend")

    def snapshot(self, *, ledger: bool = True) -> Snapshot:
        self.reads += 1
        if self.down:
            raise Unreachable(f"cannot reach slurmctld of {self.cluster} (connection refused)")
        return self.snap


def flaky_cluster(path: Path, cluster: str = "lab", *, down: bool = False) -> tuple[Cluster, FlakyBackend]:
    backend = FlakyBackend(path, cluster, down=down)
    return Cluster(backend, "flaky", PolicySource(DEFAULT_POLICY, "defaults")), backend
