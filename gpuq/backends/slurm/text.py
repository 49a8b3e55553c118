"""The cheap text read path: ``squeue --Format`` (one delimited line per job) and
``scontrol show job -d -o`` (one line per job, with per-node ``GRES=gpu:h100:4(IDX:0-3)``).

Both are far cheaper than ``squeue --json`` on a large queue, in time and memory (the README's
read-path table has the measurements). The scontrol lines are only fully tokenised for jobs that
hold GPUs, were requeued or carry an AdminComment; the rest are skipped by substring.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime

from msgspec.structs import replace

from gpuq.backends.slurm.gres import (
    gpu_model,
    gpus_from_tres,
    gpus_from_tres_per,
    node_gpu_total,
    parse_gres_detail,
)
from gpuq.backends.slurm.jobs import (
    NO_ALLOCATION,
    ClassKey,
    QueueRead,
    allocation_from,
    asked_nodes,
    checked_id,
    class_of,
    clean,
    job_id_text,
    map_state,
    note_suspension,
    parse_admin_comment,
)
from gpuq.backends.slurm.values import MOMENT_CACHE, expand_hostlist, text_moment, text_time, whole
from gpuq.model import MAX_ID_LENGTH, MAX_JOB_GPUS, MAX_NODES, MAX_PRIORITY, Job, JobState, Node, NodeState

__all__ = [
    "DELIM",
    "SQUEUE_FIELDS",
    "SINFO_FIELDS",
    "JobDetail",
    "parse_scontrol_detail",
    "parse_scontrol_jobs",
    "parse_sinfo_nodes",
    "sinfo_format_arg",
    "apply_details",
    "count_holding",
    "count_holding_jobs",
    "detail_wanted",
    "gpu_state",
    "map_node_state",
    "parse_squeue_format",
    "scontrol_records",
    "squeue_format_arg",
]

#: Field separator for squeue --Format: ASCII unit separator, which no job name contains.
DELIM = "\x1f"

#: squeue --Format fields, all present in 22.05 through 26.05.
SQUEUE_FIELDS: tuple[str, ...] = (
    "JobID",
    "ArrayJobID",
    "ArrayTaskID",
    "HetJobID",
    "HetJobOffset",
    "Name",
    "UserName",
    "Account",
    "Partition",
    "QOS",
    "PriorityLong",
    "State",
    "Reason",
    "SubmitTime",
    "EligibleTime",
    "StartTime",
    "EndTime",
    "tres-per-node",
    "tres-per-job",
    "tres-alloc",
    "NumNodes",
    "NodeList",
    "Comment",
)
#: Extra fields that spare a full ``scontrol show job`` (22.05 names; checked on the lab). A squeue
#: that rejects them ("Invalid job format specification") is read with the basic set instead.
SQUEUE_EXTRA: tuple[str, ...] = ("admin_comment", "RestartCnt")


def squeue_format_arg(extended: bool = True) -> str:
    """``--Format=JobID:<US>,Name:<US>,...``: no width, so nothing is truncated."""
    fields = SQUEUE_FIELDS + SQUEUE_EXTRA if extended else SQUEUE_FIELDS
    return "--Format=" + ",".join(f"{name}:{DELIM}" for name in fields)


@dataclass(frozen=True, slots=True)
class JobDetail:
    """What only ``scontrol show job -d`` tells: GPU indexes per node, restarts, AdminComment."""

    allocation: dict[str, tuple[int | None, ...]] = field(default_factory=dict)
    restarts: int = 0
    admin_comment: str = ""
    preempt_eligible: float | None = None
    #: StartTime of the run the indexes belong to (a detail read taken before squeue's read is only
    #: used for a job whose squeue StartTime is the same run's)
    start: float | None = None
    #: (SuspendTime, SecsPreSuspend) of a job Slurm has suspended this run (`jobs.suspension`);
    #: None: never suspended (squeue does not show them)
    suspension: tuple[float, float] | None = None


def _gpus(tres_alloc: str, per_job: str, per_node: str, nnodes: int) -> int:
    n = gpus_from_tres(tres_alloc) if tres_alloc else None
    if n is not None:
        return n
    n = gpus_from_tres_per(per_job) if per_job and per_job != "N/A" else None
    if n is not None:
        return n
    n = gpus_from_tres_per(per_node) if per_node and per_node != "N/A" else None
    if n is not None:
        if n * max(1, nnodes) > MAX_JOB_GPUS:
            raise ValueError(f"{n} GPUs per node on {nnodes} nodes: more GPUs than any cluster has")
        return n * max(1, nnodes)
    return 0


#: the most restarts gpuq reads (Slurm keeps the count in 16 bits)
_MAX_RESTARTS = 1_000_000


def _restarts(text: str) -> int:
    return int(text) if len(text) < 7 else whole(text, "Restarts", _MAX_RESTARTS)  # (the regex took digits)


def _count(text: str, what: str, maximum: int, default: int) -> int:
    """A count or priority Slurm printed; `default` for no number at all (``N/A``). The common
    case, a short ASCII number, is converted in line by the callers: this is the careful path."""
    if not text or not text[0].isdigit():
        return default
    return whole(text, what, maximum)


_HOLDING = (JobState.RUNNING, JobState.SUSPENDED, JobState.COMPLETING)
_STATES = {name: map_state(name) for name in ("PENDING", "RUNNING", "SUSPENDED", "COMPLETING", "CONFIGURING")}
_NULL = frozenset({"", "(null)", "N/A"})
_MOMENTS = MOMENT_CACHE
_EPOCH = datetime.fromtimestamp(0, UTC)


# Jobs are built positionally (markedly faster than keywords on a large queue); this pins the
# field order the code below relies on, so a model change fails loudly at import.
_JOB_PREFIX = (
    "id", "name", "user", "tenant", "job_class", "priority", "state", "submit_time", "eligible_time",
    "start_time", "end_time", "gpus", "allocation", "preemption_times", "last_checkpoint_time", "exempt_until",
    "reason", "urgent", "account", "partition", "qos", "comment",
)  # fmt: skip
if Job.__struct_fields__[: len(_JOB_PREFIX)] != _JOB_PREFIX:  # pragma: no cover - guards a model change
    raise ImportError("gpuq.model.Job fields changed; update gpuq.backends.slurm.text")


def parse_squeue_format(
    text: str | Iterable[str], class_key: ClassKey, details: dict[str, JobDetail] | None = None
) -> QueueRead:
    """Parse ``squeue -h --Format`` output (see `squeue_format_arg`), the whole text or its lines
    as they arrive (`Runner.stream`). Raises ValueError on a bad line.

    Jobs holding GPUs get per-node indexes from `details` (``scontrol show job -d``); without them
    their indexes are unknown (None) and their numeric ids are listed in ``needs_detail``.
    """
    out = QueueRead()
    nbasic = len(SQUEUE_FIELDS)
    by_partition = class_key == "partition"
    restarts_from_details = details is not None
    details = details or {}
    times = _MOMENTS
    append = out.jobs.append
    raw_ids = out.raw_ids
    lines = text.splitlines() if isinstance(text, str) else text
    for lineno, line in enumerate(lines, 1):
        if not line or line.startswith("CLUSTER: "):  # -M prints a header per cluster
            continue
        f = line.split(DELIM)
        if len(f) < nbasic:
            raise ValueError(f"line {lineno}: {len(f)} fields, expected {nbasic} (truncated output?)")
        (raw_id, array_id, array_task, het_id, het_off, name, user, account_s, partition_s, qos_s, prio_s,
         state_s, reason, submit_s, eligible_s, start_s, end_s, per_node, per_job, tres_alloc, nnodes_s,
         nodelist, comment) = f[:nbasic]  # fmt: skip
        extended = len(f) > nbasic + 1 and f[nbasic + 1] != ""
        if array_task == "N/A" and het_off == "N/A":
            jid = raw_id if 0 < len(raw_id) <= MAX_ID_LENGTH else checked_id(raw_id)
        else:
            jid = job_id_text(raw_id, array_id, array_task, het_id, het_off)
        state = _STATES.get(state_s) or map_state(state_s)
        detail = details.get(raw_id) if details else None
        nnodes = (
            int(nnodes_s)
            if len(nnodes_s) < 6 and nnodes_s.isascii() and nnodes_s.isdigit()
            else (_count(nnodes_s, "NumNodes", MAX_NODES, 1))
        )
        gpus = _gpus(tres_alloc, per_job, per_node, nnodes)
        allocation: dict[str, tuple[int | None, ...]] = NO_ALLOCATION
        pending = state is JobState.PENDING
        if not pending and state in _HOLDING:
            if detail is not None and detail.allocation:
                allocation = detail.allocation
                gpus = sum(len(v) for v in detail.allocation.values()) or gpus
            else:
                placeholder = allocation_from(expand_hostlist(nodelist), gpus, None)
                allocation = placeholder or NO_ALLOCATION
                if gpus:
                    out.needs_detail.append(raw_id)
        admin = f[nbasic] if extended else (detail.admin_comment if detail else "")
        exempt = parse_admin_comment(admin).exempt_until if "gpuq:" in admin else None
        qos = None if qos_s in _NULL else qos_s
        partition = None if partition_s in _NULL else partition_s
        account = None if account_s in _NULL else account_s
        submit = times[submit_s] if submit_s in times else text_moment(submit_s)
        eligible = times[eligible_s] if eligible_s in times else text_moment(eligible_s)
        start = end = None
        if not pending:
            start = times[start_s] if start_s in times else text_moment(start_s)
            if state not in _HOLDING:
                end = text_moment(end_s)
        append(
            Job(
                jid,
                name,
                user,
                account or user,
                (partition or qos or "") if by_partition else (qos or partition or ""),
                int(prio_s)
                if len(prio_s) < 16 and prio_s.isascii() and prio_s.isdigit()
                else (_count(prio_s, "priority", MAX_PRIORITY, 0)),
                state,
                submit if submit is not None else _EPOCH,
                eligible,
                # For pending jobs squeue shows the *expected* start; the model wants actual starts.
                start,
                end,
                gpus,
                allocation,
                (),
                None,
                None if exempt is None else datetime.fromtimestamp(exempt, UTC),
                None if reason in ("None", "") else reason,
                False,
                account,
                partition,
                qos,
                None if comment in _NULL else comment,
                # (the fields read here carry no maximum node count: per-node GPU requests only)
                max_nodes=asked_nodes(0, per_job in _NULL and per_node not in _NULL, nnodes) if pending else None,
            )
        )
        raw_ids[jid] = raw_id
        if extended:
            restarts_s = f[nbasic + 1]
            restarts = _count(restarts_s, "RestartCnt", _MAX_RESTARTS, 0) if restarts_s != "0" else 0
        else:
            restarts = detail.restarts if detail else 0
            if not restarts_from_details:
                out.restarts_known = False
        if restarts:
            out.restarts[jid] = restarts
    return out


def apply_details(
    read: QueueRead, details: dict[str, JobDetail], *, every_holding: bool = False, same_run: bool = False
) -> QueueRead:
    """Fill in GPU indexes for the jobs listed in ``needs_detail`` (a second, targeted read), or,
    with ``every_holding``, for every job holding its allocation that `details` has indexes for
    (what `parse_squeue_format` does when given the details up front).

    With ``same_run`` a detail is only used when its StartTime equals the job's squeue StartTime:
    for details read *beside* squeue (possibly before it), a job requeued and started again in
    between keeps its ``needs_detail`` entry instead of getting the previous run's indexes."""
    if not details or not (read.needs_detail or every_holding):
        return read
    if every_holding:
        wanted = {
            read.raw_ids[j.id]
            for j in read.jobs
            if j.state in _HOLDING and read.raw_ids[j.id] in details and details[read.raw_ids[j.id]].allocation
        }
    else:
        wanted = {raw for raw in read.needs_detail if raw in details and details[raw].allocation}
    if not wanted:
        return read
    raw_ids = read.raw_ids
    jobs = read.jobs
    done: set[str] = set()
    for i, job in enumerate(jobs):
        raw = raw_ids[job.id]
        if raw in wanted and job.state in _HOLDING:
            detail = details[raw]
            if same_run and (
                detail.start is None or job.start_time is None or detail.start != job.start_time.timestamp()
            ):
                continue
            alloc = detail.allocation
            jobs[i] = replace(job, allocation=alloc, gpus=sum(len(v) for v in alloc.values()))
            if detail.suspension is not None:
                note_suspension(read, job.id, job.state, *detail.suspension)
            done.add(raw)
    read.needs_detail = [r for r in read.needs_detail if r not in done]
    return read


def count_holding_jobs(read: QueueRead) -> int:
    """How many parsed jobs hold their allocation (running, suspended, completing)."""
    return sum(j.state in _HOLDING for j in read.jobs)


def count_holding(text: str) -> int:
    """How many lines of squeue --Format output hold GPUs-capable allocations (cheap count)."""
    return sum(text.count(f"{DELIM}{state}{DELIM}") for state in ("RUNNING", "SUSPENDED", "COMPLETING"))


def scontrol_records(text: str) -> Iterator[str]:
    """One-line records from ``scontrol show job [-d] [-o]`` (multi-line blocks are joined)."""
    if "\n " not in text:  # -o: already one record per line
        yield from (line for line in text.splitlines() if line.startswith("JobId="))
        return
    if "\nJobId=" not in text and text.count("JobId=") <= 1:
        if text.strip():
            yield " ".join(text.split())
        return
    block: list[str] = []
    for line in text.splitlines():
        if line.startswith("JobId="):
            if block:
                yield " ".join(block)
            block = [line.strip()]
        elif line.strip() and block:
            block.append(line.strip())
    if block:
        yield " ".join(block)


def tokens(record: str) -> tuple[dict[str, str], dict[str, tuple[int | None, ...]]]:
    """``Key=value`` pairs (values with spaces re-joined) and the per-node GPU indexes.

    ``-d`` adds ``Nodes=gpu[1-2] CPU_IDs=.. Mem=.. GRES=gpu:h100:4(IDX:0-3)`` once per node group.
    """
    fields: dict[str, str] = {}
    alloc: dict[str, tuple[int | None, ...]] = {}
    group: tuple[str, ...] = ()
    last = ""
    for tok in record.split(" "):
        if not tok:
            continue
        key, sep, value = tok.partition("=")
        if not sep or not key or key[0].islower():
            if last:  # continuation of a value with spaces (JobName, Comment)
                fields[last] += " " + tok
            continue
        if key == "Nodes":
            group = expand_hostlist(value)
            continue
        if key == "GRES" and group:
            idx = parse_gres_detail(value)
            if idx is not None:
                for node in group:
                    alloc[node] = idx
            continue
        fields[key] = value
        last = key
    return fields, alloc


_GROUP_RE = re.compile(r" Nodes=(\S+) CPU_IDs=\S* Mem=\S* GRES=(\S*)")
_RESTARTS_RE = re.compile(r" Restarts=(\d+)")
_ADMIN_RE = re.compile(r" AdminComment=(.*?)(?= [A-Za-z][\w/:]*=|\s*$)")
_PREEMPT_ELIGIBLE_RE = re.compile(r" PreemptEligibleTime=(\S+)")
_START_RE = re.compile(r" StartTime=(\S+)")
_SUSPEND_RE = re.compile(r" SuspendTime=(\S+) SecsPreSuspend=(\S+)")


def detail_wanted(record: str) -> bool:
    """Whether a ``scontrol show job -d -o`` line has anything for `JobDetail` (GPU indexes, an
    AdminComment, restarts): a substring test, so a full read can drop the rest as it streams."""
    return "IDX:" in record or "AdminComment=" in record or " Restarts=0 " not in record


def parse_scontrol_detail(text: str, *, starts: bool = False) -> dict[str, JobDetail]:
    """The `JobDetail` of every job that has one, by numeric JobId; with ``starts`` also the
    StartTime of jobs with GPU indexes (for `apply_details(same_run=True)`).

    Only the few keys needed are pulled out with regexes (tokenising every line in full was the
    slow part of a large read); lines with nothing to tell are skipped by substring first.
    """
    out: dict[str, JobDetail] = {}
    for line in scontrol_records(text):
        if not detail_wanted(line):
            continue
        if not line.startswith("JobId="):
            continue
        jid = line[6 : line.index(" ")] if " " in line else line[6:]
        alloc: dict[str, tuple[int | None, ...]] = {}
        for nodes, gres in _GROUP_RE.findall(line):
            idx = parse_gres_detail(gres)
            if idx is not None:
                for node in expand_hostlist(nodes):
                    alloc[node] = idx
        restarts = _RESTARTS_RE.search(line)
        admin = _ADMIN_RE.search(line) if "AdminComment=" in line else None
        eligible = _PREEMPT_ELIGIBLE_RE.search(line) if "PreemptEligibleTime=" in line else None
        start = _START_RE.search(line) if starts and alloc else None
        suspend = _SUSPEND_RE.search(line) if alloc and " SuspendTime=None " not in line else None
        out[jid] = JobDetail(
            allocation=alloc,
            restarts=_restarts(restarts.group(1)) if restarts else 0,
            admin_comment=admin.group(1) if admin else "",
            preempt_eligible=text_time(eligible.group(1)) if eligible else None,
            start=text_time(start.group(1)) if start else None,
            suspension=_suspension(suspend.group(1), suspend.group(2)) if suspend else None,
        )
    return out


def _suspension(suspend: str, pre_sus: str) -> tuple[float, float] | None:
    """``SuspendTime=`` and ``SecsPreSuspend=`` as `JobDetail.suspension` (None: never suspended)."""
    at = text_time(suspend)
    return None if at is None else (at, float(whole(pre_sus, "SecsPreSuspend", 2**32)))


def _user(text: str) -> str:
    return text.split("(", 1)[0]  # UserId=root(0)


def parse_scontrol_jobs(text: str, class_key: ClassKey) -> QueueRead:
    """Full jobs from ``scontrol show job -d [-o]`` alone (fallback path and 23.02+ text samples)."""
    out = QueueRead()
    for line in scontrol_records(text):
        f, alloc = tokens(line)
        if "JobId" not in f:
            raise ValueError(f"record without JobId: {line[:80]!r}")
        raw_id = f["JobId"]
        jid = job_id_text(raw_id, f.get("ArrayJobId"), f.get("ArrayTaskId"), f.get("HetJobId"), f.get("HetJobOffset"))
        state = map_state(f.get("JobState", ""))
        tres = f.get("AllocTRES") if clean(f.get("AllocTRES")) else f.get("TRES") or f.get("ReqTRES", "")
        nnodes = _count(f.get("NumNodes", "1").split("-")[0], "NumNodes", MAX_NODES, 1)
        gpus = _gpus(tres or "", f.get("TresPerJob", ""), f.get("TresPerNode", ""), nnodes)
        allocation: dict[str, tuple[int | None, ...]] = {}
        if state in (JobState.RUNNING, JobState.SUSPENDED, JobState.COMPLETING):
            allocation = allocation_from(expand_hostlist(f.get("NodeList", "")), gpus, alloc)
            if alloc:
                gpus = sum(len(v) for v in alloc.values()) or gpus
        note = parse_admin_comment(f.get("AdminComment"))
        qos, partition, account = clean(f.get("QOS")), clean(f.get("Partition")), clean(f.get("Account"))
        user = _user(f.get("UserId", ""))
        reason = f.get("Reason", "None")
        out.jobs.append(
            Job(
                id=jid,
                name=f.get("JobName", ""),
                user=user,
                tenant=account or user,
                job_class=class_of(class_key, qos, partition),
                priority=_count(f.get("Priority", "0"), "Priority", MAX_PRIORITY, 0),
                state=state,
                submit_time=text_moment(f.get("SubmitTime", "")) or _EPOCH,
                eligible_time=text_moment(f.get("EligibleTime", "")),
                start_time=None if state is JobState.PENDING else text_moment(f.get("StartTime", "")),
                end_time=None if state is JobState.PENDING else text_moment(f.get("EndTime", "")),
                gpus=gpus,
                allocation=allocation or NO_ALLOCATION,
                preemption_times=(),
                last_checkpoint_time=None,
                exempt_until=None if note.exempt_until is None else datetime.fromtimestamp(note.exempt_until, UTC),
                reason=None if reason == "None" else reason,
                account=account,
                partition=partition,
                qos=qos,
                comment=clean(f.get("Comment")),
            )
        )
        out.raw_ids[jid] = raw_id
        suspended = _suspension(f.get("SuspendTime", ""), f.get("SecsPreSuspend", "0"))
        if suspended is not None:
            note_suspension(out, jid, state, *suspended)
        restarts = _count(f.get("Restarts", "0"), "Restarts", _MAX_RESTARTS, 0)
        if restarts:
            out.restarts[jid] = restarts
    return out


#: ``sinfo -h -N -O`` fields for the node list.
SINFO_FIELDS: tuple[str, ...] = ("NodeList", "StateLong", "Gres", "GresUsed")


def sinfo_format_arg() -> str:
    return "--Format=" + ",".join(f"{name}:{DELIM}" for name in SINFO_FIELDS)


def parse_sinfo_nodes(text: str) -> list[Node]:
    """Nodes from ``sinfo -h -N --Format`` (a node appears once per partition: deduplicated)."""
    nodes: dict[str, Node] = {}
    lines = text.splitlines() if isinstance(text, str) else text
    for lineno, line in enumerate(lines, 1):
        if not line or line.startswith("CLUSTER: "):
            continue
        f = line.split(DELIM)
        if len(f) < len(SINFO_FIELDS):
            raise ValueError(f"line {lineno}: {len(f)} fields, expected {len(SINFO_FIELDS)}")
        name, state_text, gres, used = f[0], f[1], f[2], f[3]
        if name in nodes:
            continue
        total = node_gpu_total(gres)
        used_idx = parse_gres_detail(used)
        base = map_node_state(state_text.split("+"))
        state = gpu_state(base, total, len(used_idx) if used_idx is not None else None)
        nodes[name] = Node(name, total, gpu_model(gres), state)
    return list(nodes.values())


def map_node_state(names: list[str] | str) -> NodeState:
    """Slurm node state(s) -> NodeState; flags DRAIN/DOWN/FAIL win over the base state."""
    flags = {n.upper().rstrip("*~#!%$@^-+") for n in ([names] if isinstance(names, str) else names)}
    text = " ".join(sorted(flags))
    if "DRAIN" in text:
        return NodeState.DRAIN
    if any(word in text for word in ("DOWN", "FAIL", "NOT_RESPONDING", "UNKNOWN", "FUTURE", "POWERED_DOWN")):
        return NodeState.DOWN
    if "MIX" in text:
        return NodeState.MIXED
    if "ALLOC" in text or "COMPLETING" in text:
        return NodeState.ALLOCATED
    return NodeState.IDLE


def gpu_state(base: NodeState, total: int, used: int | None) -> NodeState:
    """For usable nodes, idle/mixed/allocated by GPUs (what gpuq schedules), not by CPUs."""
    if not base.takes_work or used is None or total == 0:
        return base
    if used == 0:
        return NodeState.IDLE
    return NodeState.ALLOCATED if used >= total else NodeState.MIXED
