"""Accounting history: ``sacct --json`` (22.05 shape) and ``sacct -P`` (every version).

Why sacct at all: a requeue (preemption included) resets SubmitTime/EligibleTime in squeue and
scontrol, while sacct keeps the original submit time; and sacct keeps PREEMPTED / REQUEUED
records, one per run with ``-D``, whose end time is when the job was preempted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from gpuq.backends.slurm.gres import gpus_from_tres
from gpuq.backends.slurm.jobs import clean, job_id_text, map_state
from gpuq.backends.slurm.jsonread import text_field
from gpuq.backends.slurm.values import TIME_CACHE, epoch_or_none, json_number, text_time, whole
from gpuq.model import MAX_JOB_GPUS, MAX_PRIORITY, JobState

__all__ = [
    "SACCT_FIELDS",
    "SACCT_FIELDS_QOSRAW",
    "AcctRecord",
    "parse_sacct_json",
    "parse_sacct_parsable",
    "preemption_times",
    "record_from_fields",
    "record_from_json",
]

#: ``sacct -P -o`` fields, valid in 22.05 .. 26.05.
SACCT_FIELDS: tuple[str, ...] = (
    "JobID",
    "JobIDRaw",
    "JobName",
    "User",
    "Account",
    "Partition",
    "QOS",
    "Priority",
    "State",
    "Reason",
    "Submit",
    "Eligible",
    "Start",
    "End",
    "NodeList",
    "AllocTRES",
    "ReqTRES",
)
#: The same columns with the QOS as its id. Printing QOS names makes sacct fetch the QOS list
#: from slurmdbd in one more round trip (the README has the measurement); the ids are mapped back
#: to names from slurmctld (`config.parse_assoc_mgr_qos_names`).
SACCT_FIELDS_QOSRAW: tuple[str, ...] = tuple("QOSRAW" if f == "QOS" else f for f in SACCT_FIELDS)


class AcctRecord(NamedTuple):
    """One sacct row: one run of one job (``-D`` keeps the runs a requeue ended)."""

    id: str
    raw_id: str
    name: str
    user: str
    account: str | None
    partition: str | None
    qos: str | None
    priority: int
    state: JobState
    raw_state: str
    submit: float | None
    eligible: float | None
    start: float | None
    end: float | None
    gpus: int

    @property
    def preempted(self) -> bool:
        """This run ended by preemption or an admin requeue (both cost the job its progress)."""
        return self.raw_state.startswith(("PREEMPTED", "REQUEUED"))


_STATES = {
    name: map_state(name)
    for name in (
        "COMPLETED",
        "RUNNING",
        "PENDING",
        "FAILED",
        "PREEMPTED",
        "REQUEUED",
        "TIMEOUT",
        "CANCELLED by 0",
        "SUSPENDED",
    )
}


def parse_sacct_parsable(
    text: str, qos_names: Mapping[str, str] | None = None, unknown_qos: set[str] | None = None
) -> list[AcctRecord]:
    """``sacct -n -P -X -D -o <SACCT_FIELDS>`` output. ValueError on a short line.

    With ``qos_names`` (QOS id -> name) the output is of ``-o <SACCT_FIELDS_QOSRAW>``: the QOS
    column holds ids. An id missing from the map (a deleted QOS: slurmctld forgets it, sacct does
    not) gives ``qos=None`` and is added to ``unknown_qos`` when given.
    """
    out: list[AcctRecord] = []
    n = len(SACCT_FIELDS)
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line:
            continue
        f = line.split("|")
        if len(f) < n:
            raise ValueError(f"line {lineno}: {len(f)} fields, expected {n} (truncated output?)")
        if len(f) > n:  # a '|' inside JobName: fold the excess back into the name
            extra = len(f) - n
            f = f[:2] + ["|".join(f[2 : 3 + extra])] + f[3 + extra :]
        out.append(record_from_fields(f, qos_names, unknown_qos))
    return out


def record_from_fields(
    f: Sequence[str], qos_names: Mapping[str, str] | None = None, unknown_qos: set[str] | None = None
) -> AcctRecord:
    """One row's fields, in `SACCT_FIELDS` order (a reader of other columns puts "" where it has
    none); ``qos_names`` as in `parse_sacct_parsable`. ValueError on a malformed value."""
    times = TIME_CACHE
    tres = f[15] or f[16]
    # A run cancelled while pending shows Start=End but never had an allocation (AllocTRES empty).
    start_s = f[12] if f[15] else ""
    prio_s = f[7]  # (empty for a job that never had one; a short ASCII number converted in line)
    if len(prio_s) < 16 and prio_s.isascii() and prio_s.isdigit():
        priority = int(prio_s)
    else:
        priority = whole(prio_s, "Priority", MAX_PRIORITY) if prio_s.isdigit() else 0
    return AcctRecord(
        id=f[0],
        raw_id=f[1],
        name=f[2],
        user=f[3],
        account=clean(f[4]),
        partition=clean(f[5]),
        qos=clean(f[6]) if qos_names is None else _qos_name(f[6], qos_names, unknown_qos),
        priority=priority,
        state=_STATES[f[8]] if f[8] in _STATES else map_state(f[8]),
        raw_state=f[8],
        submit=times[f[10]] if f[10] in times else text_time(f[10]),
        eligible=times[f[11]] if f[11] in times else text_time(f[11]),
        start=times[start_s] if start_s in times else text_time(start_s),
        end=times[f[13]] if f[13] in times else text_time(f[13]),
        gpus=gpus_from_tres(tres) or 0,
    )


def _qos_name(qos_id: str, names: Mapping[str, str], unknown: set[str] | None) -> str | None:
    name = names.get(qos_id)
    if name is None and unknown is not None and qos_id not in ("", "0"):
        unknown.add(qos_id)
    return name


def _tres_gpus(items: Iterable[Mapping[str, Any]]) -> int | None:
    for item in items:
        if item.get("type") == "gres" and item.get("name") == "gpu":
            count = json_number(item.get("count"))
            if count is not None and not 0 <= count <= MAX_JOB_GPUS:
                raise ValueError(f"tres gres/gpu count {count!r}: more GPUs than any cluster has")
            return int(count) if count is not None else None
    return None


def _whole(value: Any, what: str, maximum: float = 2**63) -> int:
    """A whole number of sacct's JSON (0 when unset)."""
    number = json_number(value)
    if number is None:
        return 0
    if not 0 <= number <= maximum:
        raise ValueError(f"{what} {number!r}: not a number from 0 to {maximum:g}")
    return int(number)


def parse_sacct_json(data: Mapping[str, Any]) -> list[AcctRecord]:
    """Decoded ``sacct --json`` (22.05 dbv0.0.38; 23.02+ adds {set,number} numbers and state lists)."""
    jobs = data.get("jobs")
    if not isinstance(jobs, list):
        raise ValueError("no 'jobs' list in sacct JSON")
    return [record_from_json(job) for job in jobs]


def record_from_json(job: Mapping[str, Any]) -> AcctRecord:
    """One decoded element of sacct JSON's ``jobs`` list (KeyError/ValueError when malformed)."""
    array = job.get("array") or {}
    het = job.get("het") or {}
    raw = str(_whole(job["job_id"], "job_id"))
    task = json_number(array.get("task_id"))
    task_text: int | str | None = (
        _whole(task, "array.task_id") if task is not None else (text_field(array, "task") or None)
    )
    het_off = json_number(het.get("job_offset"))
    jid = job_id_text(
        raw,
        _whole(array.get("job_id"), "array.job_id"),
        task_text,
        _whole(het.get("job_id"), "het.job_id"),
        _whole(het_off, "het.job_offset") if het_off is not None else None,
    )
    state_block = job.get("state") or {}
    current = state_block.get("current")
    raw_state = current[0] if isinstance(current, list) and current else str(current or "")
    t = job.get("time") or {}
    tres = job.get("tres") or {}
    allocated = tres.get("allocated") or []
    gpus = _tres_gpus(allocated)
    if gpus is None:
        gpus = _tres_gpus(tres.get("requested") or []) or 0
    return AcctRecord(
        id=jid,
        raw_id=raw,
        name=text_field(job, "name"),
        user=text_field(job, "user"),
        account=clean(text_field(job, "account")),
        partition=clean(text_field(job, "partition")),
        qos=clean(text_field(job, "qos")),
        priority=_whole(job.get("priority"), "priority", MAX_PRIORITY),
        state=map_state(raw_state),
        raw_state=raw_state,
        submit=epoch_or_none(t.get("submission")),
        eligible=epoch_or_none(t.get("eligible")),
        start=epoch_or_none(t.get("start")) if allocated else None,
        end=epoch_or_none(t.get("end")),
        gpus=gpus,
    )


def preemption_times(records: Iterable[AcctRecord]) -> dict[str, tuple[float, ...]]:
    """When each job lost a run to preemption/requeue: the end time of its PREEMPTED/REQUEUED runs."""
    times: dict[str, set[float]] = {}
    for rec in records:
        if rec.preempted and rec.end is not None:
            times.setdefault(rec.id, set()).add(rec.end)
    return {jid: tuple(sorted(ts)) for jid, ts in times.items()}
