"""The SLA table: queue-wait percentiles per class against each class's P95 target."""

from __future__ import annotations

from datetime import datetime

import msgspec

from gpuq.model import Snapshot
from gpuq.service import Cluster
from gpuq.sla import SlaReport, WaitStats
from gpuq.sla import class_verdict as verdict

__all__ = ["SlaRow", "SlaView", "sla_view", "verdict"]


class SlaRow(msgspec.Struct, frozen=True):
    name: str
    stats: WaitStats

    @property
    def verdict(self) -> str:
        return verdict(self.stats)


class SlaView(msgspec.Struct, frozen=True):
    cluster: str
    taken_at: datetime
    report: SlaReport
    #: every job first ("(all)"), then one row per class in name order
    rows: tuple[SlaRow, ...]


def sla_view(cluster: Cluster, snapshot: Snapshot, since_s: float | None = None) -> SlaView:
    report = cluster.sla(snapshot, since_s)
    rows = (SlaRow("(all)", report.overall), *(SlaRow(n, s) for n, s in sorted(report.classes.items())))
    return SlaView(snapshot.cluster, snapshot.taken_at, report, rows)
