"""Shared mapping from Slurm job fields to `gpuq.model.Job`: ids, states, classes, AdminComment.

Every reader (squeue --Format, scontrol -d -o, squeue --json, sacct) funnels through here, so
an array task is ``123_4`` and a het component ``77+1`` whichever command it came from.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from msgspec.structs import replace

from gpuq.model import MAX_EPOCH, MAX_ID_LENGTH, Job, JobState

__all__ = [
    "NO_ALLOCATION",
    "asked_nodes",
    "AdminNote",
    "ClassKey",
    "QueueRead",
    "apply_suspensions",
    "checked_id",
    "format_admin_comment",
    "job_id_text",
    "map_state",
    "note_suspension",
    "parse_admin_comment",
    "suspension",
]

#: Which Slurm field names a job's class: the QOS under preempt/qos, the partition under
#: preempt/partition_prio (that is what decides preemption there).
ClassKey = str

#: The shared empty allocation of pending and finished jobs (one dict for all: never mutated).
NO_ALLOCATION: dict[str, tuple[int | None, ...]] = {}

_STATE_MAP: dict[str, JobState] = {
    "PENDING": JobState.PENDING,
    "REQUEUED": JobState.PENDING,
    "REQUEUE_HOLD": JobState.PENDING,
    "REQUEUE_FED": JobState.PENDING,
    "SPECIAL_EXIT": JobState.PENDING,
    "RESV_DEL_HOLD": JobState.PENDING,
    "REVOKED": JobState.CANCELLED,
    "RUNNING": JobState.RUNNING,
    "CONFIGURING": JobState.RUNNING,  # nodes booting: resources already allocated
    "RESIZING": JobState.RUNNING,
    "SUSPENDED": JobState.SUSPENDED,
    "STOPPED": JobState.SUSPENDED,  # SIGSTOPped but still holding its allocation
    "COMPLETING": JobState.COMPLETING,
    "SIGNALING": JobState.COMPLETING,
    "STAGE_OUT": JobState.COMPLETING,
    "COMPLETED": JobState.COMPLETED,
    "CANCELLED": JobState.CANCELLED,
    "FAILED": JobState.FAILED,
    "NODE_FAIL": JobState.FAILED,
    "BOOT_FAIL": JobState.FAILED,
    "OUT_OF_MEMORY": JobState.FAILED,
    "PREEMPTED": JobState.PREEMPTED,
    "TIMEOUT": JobState.TIMEOUT,
    "DEADLINE": JobState.TIMEOUT,
}

_COMPACT = {
    "PD": "PENDING",
    "R": "RUNNING",
    "S": "SUSPENDED",
    "CG": "COMPLETING",
    "CD": "COMPLETED",
    "CA": "CANCELLED",
    "F": "FAILED",
    "PR": "PREEMPTED",
    "TO": "TIMEOUT",
    "NF": "NODE_FAIL",
    "CF": "CONFIGURING",
    "RQ": "REQUEUED",
    "RH": "REQUEUE_HOLD",
    "RF": "REQUEUE_FED",
    "SE": "SPECIAL_EXIT",
    "ST": "STOPPED",
    "SI": "SIGNALING",
    "SO": "STAGE_OUT",
    "RS": "RESIZING",
    "RV": "REVOKED",
    "BF": "BOOT_FAIL",
    "DL": "DEADLINE",
    "OOM": "OUT_OF_MEMORY",
}


def map_state(raw: str | list[str] | tuple[str, ...]) -> JobState:
    """Slurm state text (``RUNNING``, ``CANCELLED by 0``, ``PD``) or 23.02+ list -> JobState.

    Raises ValueError for a state no Slurm version uses, so callers can name the command.
    """
    if isinstance(raw, list | tuple):
        names = [str(s).upper() for s in raw]
        if not names:
            raise ValueError("empty job_state")
        # The list is [base, flags...]; COMPLETING is a flag on top of the base state.
        if "COMPLETING" in names[1:]:
            return JobState.COMPLETING
        base = names[0]
    else:
        base = raw.split(" ", 1)[0].upper().rstrip("+")
    base = _COMPACT.get(base, base)
    try:
        return _STATE_MAP[base]
    except KeyError:
        raise ValueError(f"unknown job state {base!r}") from None


def job_id_text(
    job_id: int | str,
    array_job_id: int | str | None = None,
    array_task: int | str | None = None,
    het_job_id: int | str | None = None,
    het_offset: int | str | None = None,
) -> str:
    """The id an operator types: ``123_4`` (array task), ``123_[0-3]`` (pending array), ``77+1``."""
    if array_job_id not in (None, 0, "0", "", "N/A") and array_task not in (None, "", "N/A"):
        task = str(array_task)
        if task.isdigit():
            return checked_id(f"{array_job_id}_{task}")
        return checked_id(f"{array_job_id}_[{task.strip('[]')}]")
    if het_job_id not in (None, 0, "0", "", "N/A") and het_offset not in (None, "", "N/A"):
        return checked_id(f"{het_job_id}+{het_offset}")
    return checked_id(str(job_id))


def checked_id(jid: str) -> str:
    """`jid`, if it can be a job id (1 to `MAX_ID_LENGTH` characters); ValueError otherwise."""
    if not 0 < len(jid) <= MAX_ID_LENGTH:
        raise ValueError(f"job id {jid[:20]!r}{'…' if len(jid) > 20 else ''}: not 1 to {MAX_ID_LENGTH} characters")
    return jid


@dataclass(frozen=True, slots=True)
class AdminNote:
    """gpuq's own keys inside a job's AdminComment, plus whatever else the site wrote there."""

    exempt_until: float | None = None
    prev_qos: str | None = None
    other: str = ""


_NOTE_RE = re.compile(r"gpuq:(exempt-until|prev-qos)=([^;\s]*)")


def parse_admin_comment(text: str | None) -> AdminNote:
    """Read ``gpuq:exempt-until=<RFC3339>`` and ``gpuq:prev-qos=<qos>`` (``;``-separated)."""
    if not text or "gpuq:" not in text:
        return AdminNote(other=text or "")
    exempt: float | None = None
    prev: str | None = None
    for key, value in _NOTE_RE.findall(text):
        if key == "exempt-until":
            exempt = _rfc3339(value)
        elif value:
            prev = value
    other = _NOTE_RE.sub("", text).strip(" ;")
    return AdminNote(exempt_until=exempt, prev_qos=prev, other=other)


def format_admin_comment(note: AdminNote) -> str:
    parts = [note.other] if note.other else []
    if note.exempt_until is not None:
        stamp = datetime.fromtimestamp(note.exempt_until, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        parts.append(f"gpuq:exempt-until={stamp}")
    if note.prev_qos:
        parts.append(f"gpuq:prev-qos={note.prev_qos}")
    return ";".join(parts)


def _rfc3339(text: str) -> float | None:
    """The exemption's end; one past gpuq's times is held to them (9999 lasts as long as later),
    one before 1970 has ended. (The note is free text anyone with operator rights can edit.)"""
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return min(max(parsed.timestamp(), 0.0), MAX_EPOCH)


@dataclass(slots=True)
class QueueRead:
    """Jobs from one read of the queue, plus Slurm facts the model has no field for."""

    jobs: list[Job] = field(default_factory=list)
    #: restart counts (requeues, including preemptions) by job id
    restarts: dict[str, int] = field(default_factory=dict)
    #: False when the read could not tell restart counts (squeue without RestartCnt and no details)
    restarts_known: bool = True
    #: the numeric job id Slurm uses internally, by gpuq id (``16_2`` -> ``17``)
    raw_ids: dict[str, str] = field(default_factory=dict)
    #: numeric ids of GPU-holding jobs whose per-GPU indexes still need ``scontrol show job -d``
    needs_detail: list[str] = field(default_factory=list)
    #: Slurm's suspension fields by job id, where it reported a suspension: (SuspendTime, the last
    #: suspend or resume, epoch s; SecsPreSuspend, run seconds before the last suspension)
    suspensions: dict[str, tuple[float, float]] = field(default_factory=dict)


def note_suspension(read: QueueRead, jid: str, state: JobState, suspend_time: float | None, pre_sus_s: float) -> None:
    """Keep a job's suspension fields for `apply_suspensions` (only a running or suspended job's
    with a SuspendTime: Slurm leaves it unset, 0 or None, for a job never suspended)."""
    if suspend_time is not None and state in (JobState.RUNNING, JobState.SUSPENDED):
        read.suspensions[jid] = (suspend_time, max(0.0, pre_sus_s))


def suspension(job: Job, suspend_time: float, pre_sus_s: float, now: float) -> tuple[float, float | None]:
    """(`Job.suspended_s`, `Job.resumed_time` as epoch s) from Slurm's fields. slurmctld keeps
    StartTime on suspend and resume; a suspend adds the run since the last resume (or the start)
    to SecsPreSuspend and sets SuspendTime; a resume sets SuspendTime again; RunTime is
    SecsPreSuspend while suspended, else now − SuspendTime + SecsPreSuspend. So:
    - running after a resume: SuspendTime is that resume, and the time suspended is
      (SuspendTime − StartTime) − SecsPreSuspend, exact to Slurm's whole seconds;
    - suspended now: the time suspended up to `now` (the snapshot's moment) is
      (now − StartTime) − SecsPreSuspend; an earlier resume, if any, is not reported, so the
      last resume stays unknown and lost work counts from the start (an over-count)."""
    if job.start_time is None:
        return 0.0, None
    start = job.start_time.timestamp()
    if suspend_time < start:  # (a SuspendTime from before this run's start: not this run's)
        return 0.0, None
    if job.state is JobState.SUSPENDED:
        return max(0.0, now - start - pre_sus_s), None
    if job.state is JobState.RUNNING:
        return max(0.0, suspend_time - start - pre_sus_s), suspend_time
    return 0.0, None


def apply_suspensions(read: QueueRead, now: float) -> QueueRead:
    """The read's jobs with the time they spent suspended and their last resume (`suspension`)."""
    if not read.suspensions:
        return read
    for i, job in enumerate(read.jobs):
        fields = read.suspensions.get(job.id)
        if fields is None:
            continue
        suspended, resumed = suspension(job, fields[0], fields[1], now)
        if suspended > 0 or resumed is not None:
            read.jobs[i] = replace(
                job,
                suspended_s=suspended,
                resumed_time=None if resumed is None else datetime.fromtimestamp(resumed, UTC),
            )
    return read


def class_of(class_key: ClassKey, qos: str | None, partition: str | None) -> str:
    if class_key == "partition":
        return partition or qos or ""
    return qos or partition or ""


def clean(text: str | None) -> str | None:
    """None for Slurm's empty markers; the text otherwise."""
    if text is None or text in ("", "(null)", "N/A"):
        return None
    return text


def allocation_from(
    nodes: tuple[str, ...], gpus: int, detail: Mapping[str, tuple[int | None, ...]] | None
) -> dict[str, tuple[int | None, ...]]:
    """Per-node GPU indexes: the detail when known, else GPUs spread evenly with unknown indexes
    (the first nodes taking one more where they do not divide evenly).

    Only nodes where the job holds a GPU are listed: a CPU-only job (no ``--gres``) running on a
    node has an empty allocation, as the model's placement checks expect."""
    if detail:
        return {node: tuple(indexes) for node, indexes in detail.items() if indexes}
    if not nodes or gpus <= 0:
        return {}
    per, extra = divmod(gpus, len(nodes))
    spread = {n: (None,) * (per + (1 if i < extra else 0)) for i, n in enumerate(nodes)}
    return {n: indexes for n, indexes in spread.items() if indexes}


def asked_nodes(max_nodes: int, per_node: bool, node_count: int) -> int | None:
    """The most nodes a pending job may run on, as it asked (`Job.max_nodes`): its maximum node
    count when it set one (``-N1``, ``-N1-2``), else its node count when its GPUs are asked per
    node (``--gres=gpu:4``: that many on each of its nodes); None: as many as it needs (``--gpus``)."""
    if max_nodes > 0:
        return max_nodes
    if per_node and node_count > 0:
        return node_count
    return None
