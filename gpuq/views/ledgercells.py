"""The console's preemption ledger as cells: the text and tone of every column of
`CONSOLE_PREEMPTION_JOBS` and `CONSOLE_PREEMPTION_EVENTS`, and the totals line.

The rows themselves come from `gpuq.views.preemptions`, as for the CLI (`gpuq preemptions`).
"""

from __future__ import annotations

from collections.abc import Sequence

from gpuq.model import JobState
from gpuq.timefmt import format_duration
from gpuq.views.changes import describe_value
from gpuq.views.preemptions import CapState, LedgerEvent, LedgerRow, LedgerTotal

__all__ = [
    "EVENT_SORT",
    "JOB_SORT",
    "event_cells",
    "event_tones",
    "job_cells",
    "job_tones",
    "lost_gpu_hours",
    "row_matches",
    "totals_line",
]

_STATE_TONE = {
    JobState.PENDING: "pending", JobState.RUNNING: "running", JobState.SUSPENDED: "suspended",
    JobState.COMPLETING: "running",
}  # fmt: skip
#: the columns of the jobs table an operator can sort by
JOB_SORT = ("ID", "USER", "TENANT", "CLASS", "STATE", "24H", "TOTAL", "CAP LEFT", "LAST")
#: the event log stays in time order (newest first): it is a log
EVENT_SORT: tuple[str, ...] = ()


def lost_gpu_hours(seconds: float | None) -> str:
    """GPU-seconds lost as GPU-hours (`0.16`), `-` where the backend does not say."""
    return "-" if seconds is None else f"{seconds / 3600:.2f}"


def _ago(seconds: float) -> str:
    return f"{format_duration(seconds)} ago"


def job_cells(row: LedgerRow, cap: CapState, cluster: str = "") -> tuple[str, ...]:
    """CLUSTER, ID, USER, TENANT, CLASS, STATE, 24H, TOTAL, CAP LEFT, LAST."""
    job = row.job
    left = "-" if cap.left is None else str(cap.left)
    return (cluster, job.id, job.user, job.tenant, job.job_class, job.state.value, str(row.last_24h), str(row.total),
            left, _ago(row.since_last_s))  # fmt: skip


def job_tones(row: LedgerRow, cap: CapState) -> tuple[str | None, ...]:
    """At the cap: the breach tone on the id, the 24 h count and what is left; one away: risk. A
    job that has left the queue is muted: history, the cap no longer matters to it."""
    state = _STATE_TONE.get(row.job.state)
    if state is None:
        return (None, *("muted",) * 9)
    mark = ("breach" if cap.capped else "risk") if cap.near else None
    return (None, mark, None, None, None, state, mark, None, mark, None)


def event_cells(event: LedgerEvent, now: float, cluster: str = "") -> tuple[str, ...]:
    """CLUSTER, TIME, AGO, VICTIM, BY, GPUS, GPU-H LOST, MODE, REASON."""
    return (cluster, describe_value(event.time, "time"), _ago(now - event.time.timestamp()), event.victim,
            event.preemptor or "-", str(event.gpus), lost_gpu_hours(event.gpu_seconds_lost), event.mode or "-",
            event.reason)  # fmt: skip


def event_tones(new: bool) -> tuple[str | None, ...]:
    """A preemption that arrived with the last refreshes is marked `new` (TIME, AGO, VICTIM)."""
    mark = "new" if new else None
    return (None, mark, mark, mark, None, None, None, None, None)


def row_matches(cells: Sequence[str], needle: str) -> bool:
    """The console's `/` filter on these tables: a case-insensitive part of any cell."""
    return any(needle in c.lower() for c in cells)


def _part(label: str, totals: Sequence[LedgerTotal], room: int) -> str:
    shown = " · ".join(f"{t.name} {t.last_24h}/{t.total}" for t in totals[:room])
    more = f" · +{len(totals) - room} more" if len(totals) > room else ""
    return f"{label} (24h/total): {shown or 'none'}{more}"


def totals_line(tenants: Sequence[LedgerTotal], classes: Sequence[LedgerTotal], *, room: int = 8) -> tuple[str, str]:
    """The totals strip: one line per tenant, one per class, the most preempted first."""
    return _part("tenants", tenants, room), _part("classes", classes, room)
