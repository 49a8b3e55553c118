"""`gpuq sla --trace`: the recorded waits of a trace per class, against each class's target."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpuq.service.tracing import RecordedWaits, TraceSla, trace_sla
from gpuq.views.columns import Column, Kind, TableSpec

if TYPE_CHECKING:
    from collections.abc import Mapping

    from gpuq.policy.config import Policy

__all__ = ["TRACE_SLA", "TraceSlaRow", "TraceSlaView", "trace_sla_view"]

_ID, _NUMBER, _PLAIN = Kind.ID, Kind.NUMBER, Kind.PLAIN
#: the table: started jobs, never started, the wait statistics (P95+NEVER: with the censored
#: waits of those that never started), the target and the breaches
TRACE_SLA = TableSpec("trace-sla", (
    Column("CLASS", _ID), Column("STARTED", _NUMBER, 3), Column("NEVER", _NUMBER, 2), Column("MEAN", _NUMBER, 6),
    Column("P50", _NUMBER, 5), Column("P95", _NUMBER), Column("P99", _NUMBER, 4), Column("MAX", _NUMBER, 7),
    Column("P95+NEVER", _NUMBER, 3), Column("TARGET", _NUMBER), Column("BREACHES", _NUMBER, 1), Column("SLA", _PLAIN),
))  # fmt: skip


@dataclass(frozen=True, slots=True)
class TraceSlaRow:
    name: str
    waits: RecordedWaits

    @property
    def verdict(self) -> str:
        """``breach`` (the P95, with or without the never-started jobs' censored waits, is past
        the target), ``ok``, or ``""`` without a target or jobs."""
        if self.waits.target_p95_s is None or self.waits.count + self.waits.never_started == 0:
            return ""
        return "breach" if self.waits.breach else "ok"


@dataclass(frozen=True, slots=True)
class TraceSlaView:
    report: TraceSla
    #: every job first ("(all)"), then one row per class in name order
    rows: tuple[TraceSlaRow, ...]


def trace_sla_view(
    path: str,
    *,
    policy: Policy | None = None,
    preset: str | None = None,
    columns: Mapping[str, str] | None = None,
    class_from: str | None = None,
    seed: int = 0,
) -> TraceSlaView:
    report = trace_sla(path, policy=policy, preset=preset, columns=columns, class_from=class_from, seed=seed)
    rows = (TraceSlaRow("(all)", report.overall), *(TraceSlaRow(n, w) for n, w in sorted(report.classes.items())))
    return TraceSlaView(report, rows)
