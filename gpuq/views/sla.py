"""The SLA table: queue-wait percentiles per class against each class's P95 target."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from gpuq.model import Snapshot
from gpuq.service import Cluster
from gpuq.sla import SlaReport, WaitStats
from gpuq.views.queue import AT_RISK_SHARE

__all__ = ["SlaRow", "SlaView", "sla_view", "verdict"]


@dataclass(frozen=True, slots=True)
class SlaRow:
    name: str
    stats: WaitStats

    @property
    def verdict(self) -> str:
        return verdict(self.stats)


def verdict(stats: WaitStats) -> str:
    """``breach``; ``at_risk`` from `AT_RISK_SHARE` of the target on (pending jobs counted);
    ``ok``; or ``""`` for a class without a target."""
    target = stats.target_p95_s
    if target is None:
        return ""
    if stats.breach:
        return "breach"
    return "at_risk" if (stats.p95_incl_pending_s or 0.0) >= AT_RISK_SHARE * target else "ok"


@dataclass(frozen=True, slots=True)
class SlaView:
    cluster: str
    taken_at: datetime
    report: SlaReport
    #: every job first ("(all)"), then one row per class in name order
    rows: tuple[SlaRow, ...]


def sla_view(cluster: Cluster, snapshot: Snapshot, since_s: float | None = None) -> SlaView:
    report = cluster.sla(snapshot, since_s)
    rows = (SlaRow("(all)", report.overall), *(SlaRow(n, s) for n, s in sorted(report.classes.items())))
    return SlaView(snapshot.cluster, snapshot.taken_at, report, rows)
