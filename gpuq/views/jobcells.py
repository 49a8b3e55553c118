"""One job as text, for every front end: its fields (`JOB`: FIELD/VALUE, what `gpuq job` prints),
its preemption history and its audit entries, in sentences.
"""

from __future__ import annotations

from datetime import datetime

import msgspec

from gpuq.model import JobClass
from gpuq.timefmt import format_duration
from gpuq.views.audit import AuditRow, audit_row
from gpuq.views.changes import describe_value, format_priority
from gpuq.views.job import JobView
from gpuq.views.ledgercells import lost_gpu_hours
from gpuq.views.preemptions import LedgerEvent

__all__ = ["AuditLine", "audit_lines", "history_lines", "job_fields"]


def _time(moment: datetime | None) -> str:
    return describe_value(moment, "time")


def job_fields(view: JobView) -> list[tuple[str, str]]:
    """Every field of the job, as (field, value) rows."""
    j, cls, eff = view.job, view.job_class, view.effective_priority
    alloc = "; ".join(
        f"{node}: {','.join('?' if i is None else str(i) for i in idx)}" for node, idx in j.allocation.items()
    )
    exempt = view.job.exempt_until is not None and view.job.exempt_at(view.taken_at.timestamp())
    rows = [
        ("job", f"{j.id}  {j.name}"),
        ("owner", f"{j.user} (tenant {j.tenant}" + (f", account {j.account}" if j.account else "") + ")"),
        (
            "class",
            f"{cls.name}: default priority {cls.priority}, "
            + ("preemptible" if cls.preemptible else "not preemptible")
            + _may_preempt(cls)
            + (f", target P95 {format_duration(cls.target_p95_s)}" if cls.target_p95_s is not None else "")
            + (f", max wait {format_duration(cls.max_wait_s)}" if cls.max_wait_s is not None else ""),
        ),
        ("state", j.state.value + (f" ({j.reason})" if j.reason else "")),
        ("priority", f"{j.priority} base, {format_priority(eff)} effective" + (" (urgent)" if j.urgent else "")),
        ("gpus", f"{j.gpus}" + (f" on {alloc}" if alloc else "")),
        ("submitted", _time(j.submit_time)),
        ("eligible", _time(j.eligible_time)),
        ("started", _time(j.start_time)),
        ("ended", _time(j.end_time)),
        ("wait", format_duration(view.wait_s) + (" (still pending)" if j.is_pending else "")),
        ("preempted", f"{view.preemptions}x total, {view.preemptions_24h}x in the last 24h"),
        ("checkpoint", _time(j.last_checkpoint_time)),
        ("exempt", f"until {_time(j.exempt_until)}" if exempt else "no"),
    ]
    if view.gpu_seconds_lost_if_preempted is not None:
        rows.append(("if preempted now", f"loses {view.gpu_seconds_lost_if_preempted / 3600:.2f} GPU-hours"))
    if view.protection is not None:
        rows.append(("protected", view.protection[1]))
    if j.comment:
        rows.append(("comment", j.comment))
    rows.append(("policy", view.policy_source))
    return rows


def _lost(event: LedgerEvent) -> str:
    hours = lost_gpu_hours(event.gpu_seconds_lost)
    gpus = f"{event.gpus} GPU{'' if event.gpus == 1 else 's'}"
    return f"GPU-time lost unknown, {gpus}" if hours == "-" else f"lost {hours} GPU-hours on {gpus}"


def history_lines(victim: list[LedgerEvent], preemptor: list[LedgerEvent], now: float) -> list[str]:
    """The job's preemptions in sentences, newest first (`views.preemptions.job_preemptions`)."""
    lines = []
    for e in victim:
        by = f"by job {e.preemptor}" if e.preemptor else "by an unknown job"
        mode = f", {e.mode}" if e.mode else ""
        lines.append(f"{_time(e.time)} ({format_duration(now - e.time.timestamp())} ago): preempted {by}{mode}; "
                     f"{_lost(e)}")  # fmt: skip
    for e in preemptor:
        mode = f", {e.mode}" if e.mode else ""
        lines.append(f"{_time(e.time)} ({format_duration(now - e.time.timestamp())} ago): it preempted job "
                     f"{e.victim}{mode}; {_lost(e)}")  # fmt: skip
    return lines


class AuditLine(msgspec.Struct, frozen=True):
    text: str
    #: the log has the action's intent but not its outcome
    unknown: bool
    #: refused, failed or a dry run: nothing was changed
    idle: bool


def audit_lines(view: JobView) -> list[AuditLine]:
    """The job's audit entries (`job_view(..., with_audit=True)`), newest first, in one line each."""
    out = []
    for action in reversed(view.audit):
        row: AuditRow = audit_row(action)
        r = row.record
        result = row.result if row.outcome_known else "unknown"
        detail = row.detail
        reason = str(r.get("reason") or "")
        text = f"{describe_value(r.get('time'), 'time')}  {r.get('operator')}  {r.get('action')}: "
        if not row.outcome_known:  # the detail says it: "outcome unknown: check the cluster"
            text += detail
        else:
            text += result + (f"; {detail}" if detail else "")
        if reason:
            text += f" (reason: {reason})"
        out.append(AuditLine(text, not row.outcome_known, result in ("refused", "error", "dry_run")))
    return out


def _may_preempt(cls: JobClass) -> str:
    """Whom the cluster lets the class preempt, where it says (`JobClass.may_preempt`)."""
    allowed = cls.may_preempt
    if not isinstance(allowed, tuple):
        return ""
    return f", may preempt {', '.join(allowed)}" if allowed else ", preempts no job"
