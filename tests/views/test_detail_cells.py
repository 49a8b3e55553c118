"""The console's audit and job detail text (`gpuq.views.auditcells`, `gpuq.views.jobcells`) and the
audit log read once per change (`audit_view_cached`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpuq.audit import AuditLog, make_record
from gpuq.model import JobState, PreemptionEvent
from gpuq.views.audit import audit_actions_cached, audit_view, audit_view_cached
from gpuq.views.auditcells import audit_cells, audit_tones, newest_first, row_cluster, row_job
from gpuq.views.jobcells import history_lines
from gpuq.views.preemptions import job_preemptions
from tests.factories import at, make_job, make_snapshot

NOW = 1_800_000_000.0


def _record(target: str, result: str, **extra: Any) -> dict[str, Any]:
    return make_record(backend="slurm", cluster="prod", action="bump", target=target, result=result, now=NOW, **extra)


def _log(tmp_path: Path) -> AuditLog:
    log = AuditLog(tmp_path / "audit.jsonl")
    log.append(_record("1", "ok", before={"priority": 1}, after={"priority": 9}))
    log.append(_record("2", "pending", phase="intent"))
    log.append(_record("3", "refused", error="not allowed"))
    return log


def test_audit_rows_newest_first_with_the_outcome_unknown_marked(tmp_path: Path) -> None:
    rows = newest_first(audit_view(_log(tmp_path)).rows)
    assert [row_job(r) for r in rows] == ["3", "2", "1"] and {row_cluster(r) for r in rows} == {"prod"}
    cells = [audit_cells(r) for r in rows]
    assert [c[5] for c in cells] == ["refused", "unknown", "ok"]
    assert cells[0][6] == "not allowed" and cells[1][6] == "outcome unknown: check the cluster"
    assert cells[2][2] == "slurm/prod" and cells[2][6] == "priority: 1 -> 9"
    assert audit_tones(rows[1]) == ("breach",) * 8 and audit_tones(rows[0]) == ("muted",) * 8
    assert audit_tones(rows[2])[5] == "ok" and audit_tones(rows[2])[4] is None


def test_the_cached_view_is_read_again_only_after_an_append(tmp_path: Path) -> None:
    log = _log(tmp_path)
    first = audit_view_cached(log)
    assert audit_view_cached(log) is first
    log.append(_record("2", "ok", phase="outcome", action_id=first.rows[1].record["id"]))
    again = audit_view_cached(log)
    assert again is not first and again.rows[1].outcome_known  # the outcome arrived
    assert audit_view_cached(AuditLog(tmp_path / "none.jsonl")).rows == ()  # no log yet: nothing, no error


def test_the_cached_actions_are_read_again_only_after_an_append(tmp_path: Path) -> None:
    log = _log(tmp_path)
    first = audit_actions_cached(log)
    assert audit_actions_cached(log) is first and not first[1].outcome_known
    log.append(_record("2", "ok", phase="outcome", action_id=first[1].record["id"]))
    again = audit_actions_cached(log)
    assert again is not first and again[1].outcome_known
    assert audit_view_cached(log).rows[1].outcome_known  # each reading has its own entry
    assert audit_actions_cached(AuditLog(tmp_path / "none.jsonl")) == ()


def test_history_lines_name_the_preemptor_and_the_loss() -> None:
    events = [
        PreemptionEvent(at(NOW - 3600), "a", "b", 2, 7200.0, "requeue", ""),
        PreemptionEvent(at(NOW - 60), "c", "a", 1, 36.0, "", ""),
        PreemptionEvent(at(NOW - 7200), "a", None, 2, 0.0, "", ""),
    ]
    snap = make_snapshot("c", "demo", NOW, jobs=[make_job("a", state=JobState.RUNNING)], events=events)
    lines = history_lines(*job_preemptions(snap, "a"), NOW)
    assert lines == [
        "2027-01-15T07:00:00Z (1h00m ago): preempted by job b, requeue; lost 2.00 GPU-hours on 2 GPUs",
        "2027-01-15T06:00:00Z (2h00m ago): preempted by an unknown job; lost 0.00 GPU-hours on 2 GPUs",
        "2027-01-15T07:59:00Z (1m ago): it preempted job c; lost 0.01 GPU-hours on 1 GPU",
    ]
