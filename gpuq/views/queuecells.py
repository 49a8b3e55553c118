"""The console's queue rows as cells: the text and tone of every column of `CONSOLE_QUEUE`.

The console draws only the rows on screen, so these run per visible row, not per job; the
queue's rows themselves come from `gpuq.views.queue` as for the CLI.
"""

from __future__ import annotations

from gpuq.model import JobState
from gpuq.timefmt import format_duration
from gpuq.views.changes import format_priority
from gpuq.views.groups import GroupRow
from gpuq.views.queue import QueueRow, SlaStatus

__all__ = ["POD_MARK", "SORT_BY_COLUMN", "group_cells", "group_tones", "matches", "queue_cells", "queue_tones"]

#: before the id of a pod shown under its owner's line
POD_MARK = "└ "

#: header -> `gpuq.views.queue.SORT_KEYS` name, for the columns a console can sort by
SORT_BY_COLUMN = {
    "ID": "id", "USER": "user", "TENANT": "tenant", "CLASS": "class", "STATE": "state", "GPUS": "gpus",
    "PRIO": "priority", "EFF": "effective", "WAIT": "wait", "PREEMPT": "preemptions",
}  # fmt: skip

_STATE_TONE = {
    JobState.PENDING: "pending", JobState.RUNNING: "running", JobState.SUSPENDED: "suspended",
    JobState.COMPLETING: "running",
}  # fmt: skip
_SLA_TEXT = {SlaStatus.OK: "ok", SlaStatus.AT_RISK: "at risk", SlaStatus.BREACH: "BREACH", SlaStatus.NONE: "-"}
_SLA_TONE = {SlaStatus.OK: "ok", SlaStatus.AT_RISK: "risk", SlaStatus.BREACH: "breach", SlaStatus.NONE: None}


def queue_cells(row: QueueRow, now: float, cluster: str = "") -> tuple[str, ...]:
    job = row.job
    run = None
    origin = job.run_origin()  # (run time: time suspended does not count)
    if origin is not None and job.state in (JobState.RUNNING, JobState.SUSPENDED, JobState.COMPLETING):
        run = now - origin
    exempt = ""
    if job.exempt_until is not None and job.exempt_at(now):
        exempt = format_duration(job.exempt_until.timestamp() - now)
    notes = []
    if job.urgent:
        notes.append("urgent")
    if job.conflict:
        notes.append(f"conflict: {job.conflict}")
    if job.comment:
        notes.append(job.comment)
    return (
        cluster, job.id, job.name, job.user, job.tenant, job.job_class, job.state.value, str(job.gpus),
        str(job.priority), format_priority(row.effective_priority), format_duration(row.wait_s),
        format_duration(run) if run is not None else "", f"{row.preemptions_24h}/{row.preemptions}",
        exempt, _SLA_TEXT[row.sla], ",".join(job.nodes), job.reason or "", ", ".join(notes),
    )  # fmt: skip


def group_cells(group: GroupRow, cluster: str = "") -> tuple[str, ...]:
    """An owner's line, under which its pods follow: what they add up to, in the same columns."""
    preempt = f"{group.preemptions_24h}/{group.preemptions}" if group.preemptions else ""
    return (
        cluster, group.owner, f"{group.pods} pods", group.user or "", group.tenant or "", group.job_class or "",
        group.states, str(group.gpus), "", format_priority(group.effective_priority), format_duration(group.wait_s),
        "", preempt, "", _SLA_TEXT[group.sla], "", "", "",
    )  # fmt: skip


def group_tones(group: GroupRow) -> tuple[str | None, ...]:
    sla = _SLA_TONE[group.sla]
    return (None, None, None, None, None, None, "muted", None, None, None, sla, None, None, None, sla)


def queue_tones(row: QueueRow) -> tuple[str | None, ...]:
    state = _STATE_TONE.get(row.job.state, "finished")
    sla = _SLA_TONE[row.sla]
    preempt = "risk" if row.preemptions_24h else None
    exempt = "ok" if row.job.exempt_until is not None else None
    return (None, None, None, None, None, None, state, None, None, None, sla, None, preempt, exempt, sla)


def matches(row: QueueRow, needle: str) -> bool:
    """The console's `/` filter: a case-insensitive part of the id, name, user, tenant, class,
    state, node or reason."""
    job = row.job
    hay = " ".join((job.id, job.name, job.user, job.tenant, job.job_class, job.state.value, job.reason or "",
                    *job.nodes)).lower()  # fmt: skip
    return needle in hay
