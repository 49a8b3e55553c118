"""The audit log as the console shows it: the cells and tones of `AUDIT` (what `gpuq audit`
prints), newest first, an action whose outcome never reached the log marked.
"""

from __future__ import annotations

from collections.abc import Iterable

from gpuq.views.audit import AuditRow
from gpuq.views.changes import describe_value

__all__ = ["audit_cells", "audit_tones", "newest_first", "row_cluster", "row_job"]

#: RESULT -> the tone of the whole row (None: only the RESULT cell is toned)
_ROW_TONE = {"unknown": "breach", "error": "risk", "refused": "muted"}
_RESULT_TONE = {"ok": "ok", "dry_run": "muted", "error": "risk", "refused": "muted", "unknown": "breach",
                "pending": "pending"}  # fmt: skip


def newest_first(rows: Iterable[AuditRow]) -> list[AuditRow]:
    """The log's rows, the newest action first (the log is in time order: reversed, not sorted,
    so actions with the same second keep their order)."""
    return list(rows)[::-1]


def row_cluster(row: AuditRow) -> str:
    return str(row.record.get("cluster") or "")


def row_job(row: AuditRow) -> str:
    return str(row.record.get("target") or "")


def audit_cells(row: AuditRow) -> tuple[str, ...]:
    """TIME, OPERATOR, CLUSTER (backend/cluster), ACTION, JOB, RESULT, CHANGE (or the error), REASON."""
    r = row.record
    result = row.result if row.outcome_known else "unknown"
    return (describe_value(r.get("time"), "time"), str(r.get("operator")), f"{r.get('backend')}/{r.get('cluster')}",
            str(r.get("action")), row_job(row), result, row.detail, str(r.get("reason") or ""))  # fmt: skip


def audit_tones(row: AuditRow) -> tuple[str | None, ...]:
    """An outcome unknown: the whole row in the breach tone; an error in the risk tone; a refusal
    muted; otherwise the RESULT cell alone (ok, dry run)."""
    result = row.result if row.outcome_known else "unknown"
    whole = _ROW_TONE.get(result)
    if whole is not None:
        return (whole,) * 8
    return (None, None, None, None, None, _RESULT_TONE.get(result), None, None)
