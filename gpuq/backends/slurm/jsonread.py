"""``squeue --json`` / ``scontrol show job --json`` / ``sinfo --json`` for 22.05 .. 26.05.

22.05 is openapi/v0.0.38: plain numbers, ``job_state`` a string, ``tres_per_node`` ``gres:gpu:2``,
sinfo ``nodes[]``. 23.02+ (data_parser v0.0.39 .. v0.0.45): numbers as ``{set, infinite, number}``,
``job_state`` a list, ``gres/gpu:2``, sinfo ``sinfo[]`` rows per partition and node state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

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
    class_of,
    clean,
    job_id_text,
    map_state,
    note_suspension,
    parse_admin_comment,
)
from gpuq.backends.slurm.text import gpu_state, map_node_state
from gpuq.backends.slurm.values import EPOCH, epoch_or_none, expand_hostlist, json_number, moment, moment_or_none
from gpuq.backends.slurm.version import SlurmVersion, version_from_meta
from gpuq.model import MAX_JOB_GPUS, MAX_NODES, MAX_PRIORITY, Job, JobState, Node

__all__ = ["load_json", "map_node_state", "parse_jobs_json", "parse_sinfo_json", "text_field"]


def load_json(text: str, command: str) -> tuple[dict[str, Any], SlurmVersion]:
    """Decode and version-check one CLI's JSON; ValueError names what is wrong.

    msgspec decodes it (faster than the json module, and strict where json is lax: it refuses
    NaN and Infinity, numbers past a float or 64 bits, lone surrogate escapes)."""
    try:
        data = msgspec.json.decode(text)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise ValueError(f"not JSON ({exc}; truncated output?)") from None
    except RecursionError:
        raise ValueError("not JSON gpuq reads: nested deeper than the decoder goes") from None
    if not isinstance(data, dict) or "meta" not in data:
        raise ValueError("JSON without 'meta': not Slurm output")
    version = version_from_meta(data["meta"])
    errors = data.get("errors") or []
    if errors:
        first = errors[0]
        text_err = first.get("description") or first.get("error") if isinstance(first, dict) else first
        raise ValueError(f"{command} reported: {text_err}")
    return data, version


def _num(value: Any, default: int = 0, maximum: float = 2**63, what: str = "number") -> int:
    """A whole number from JSON, within 0..`maximum` (ValueError naming `what` past it)."""
    n = json_number(value)
    if n is None:
        return default
    if not 0 <= n <= maximum:
        raise ValueError(f"{what} {n!r}: not a number from 0 to {maximum:g}")
    return int(n)


def _id(value: Any) -> str:
    """A job id: a whole number (or its text)."""
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 20:
        return value
    number = _num(value, -1, what="job_id") if not isinstance(value, str) else -1
    if number < 0:
        raise ValueError(f"job_id: expected a whole number, got {str(value)[:20]!r}")
    return str(number)


def text_field(record: Mapping[str, Any], key: str, default: str = "") -> str:
    """A text field of Slurm's JSON: `default` when absent or null, ValueError when not text."""
    value = record.get(key)
    if value is None:
        return default
    if not isinstance(value, str):
        raise ValueError(f"{key}: expected a string, got {type(value).__name__}")
    return value


def _allocation(job: Mapping[str, Any], nodes: tuple[str, ...]) -> dict[str, tuple[int | None, ...]]:
    """Pair ``gres_detail`` entries (one per allocated node, in node order) with node names."""
    detail = job.get("gres_detail") or []
    out: dict[str, tuple[int | None, ...]] = {}
    if not isinstance(detail, list):
        raise ValueError(f"gres_detail: expected a list, got {type(detail).__name__}")
    for node, text in zip(nodes, detail, strict=False):
        if not isinstance(text, str):
            raise ValueError(f"gres_detail: expected strings, got {type(text).__name__}")
        idx = parse_gres_detail(text)
        if idx is not None:
            out[node] = idx
    return out


def parse_jobs_json(data: Mapping[str, Any], class_key: ClassKey) -> QueueRead:
    """Jobs from decoded squeue/scontrol JSON of any supported version."""
    out = QueueRead()
    jobs = data.get("jobs")
    if not isinstance(jobs, list):
        raise ValueError("no 'jobs' list")
    for job in jobs:
        raw_id = _id(job["job_id"])
        array_id = _num(job.get("array_job_id"), what="array_job_id")
        task = _num(job.get("array_task_id"), -1, what="array_task_id")
        task_text: str | int | None = task if task >= 0 else (text_field(job, "array_task_string") or None)
        jid = job_id_text(raw_id, array_id, task_text, _num(job.get("het_job_id"), what="het_job_id"),
                          _num(job.get("het_job_offset"), what="het_job_offset"))  # fmt: skip
        state = map_state(job["job_state"])
        gpus = gpus_from_tres(text_field(job, "tres_alloc_str"))
        if gpus is None:
            gpus = gpus_from_tres_per(text_field(job, "tres_per_job"))
        if gpus is None:
            per_node = gpus_from_tres_per(text_field(job, "tres_per_node"))
            nodes_asked = _num(job.get("node_count"), 1, MAX_NODES, "node_count")
            if per_node is not None and per_node * max(1, nodes_asked) > MAX_JOB_GPUS:
                raise ValueError(f"job {raw_id}: more GPUs than any cluster has")
            gpus = per_node * max(1, nodes_asked) if per_node is not None else None
        if gpus is None:
            gpus = gpus_from_tres(text_field(job, "tres_req_str")) or 0
        allocation: dict[str, tuple[int | None, ...]] = {}
        if state in (JobState.RUNNING, JobState.SUSPENDED, JobState.COMPLETING):
            nodes = expand_hostlist(text_field(job, "nodes"))
            detail = _allocation(job, nodes)
            allocation = allocation_from(nodes, gpus, detail)
            if detail:
                gpus = sum(len(v) for v in detail.values())
        note = parse_admin_comment(text_field(job, "admin_comment"))
        qos, partition = clean(text_field(job, "qos")), clean(text_field(job, "partition"))
        account = clean(text_field(job, "account"))
        user = text_field(job, "user_name") or str(_num(job.get("user_id"), what="user_id"))
        reason = text_field(job, "state_reason") or "None"
        pending = state is JobState.PENDING
        out.jobs.append(
            Job(
                id=jid,
                name=text_field(job, "name"),
                user=user,
                tenant=account or user,
                job_class=class_of(class_key, qos, partition),
                priority=_num(job.get("priority"), maximum=MAX_PRIORITY, what="priority"),
                state=state,
                submit_time=moment_or_none(job.get("submit_time")) or EPOCH,
                eligible_time=moment_or_none(job.get("eligible_time")),
                start_time=None if pending else moment_or_none(job.get("start_time")),
                end_time=None if pending or state in _NO_END else moment_or_none(job.get("end_time")),
                gpus=gpus,
                allocation=allocation or NO_ALLOCATION,
                preemption_times=(),
                last_checkpoint_time=None,
                exempt_until=moment(note.exempt_until),
                reason=None if reason == "None" else reason,
                account=account,
                partition=partition,
                qos=qos,
                comment=clean(text_field(job, "comment")),
                max_nodes=asked_nodes(_num(job.get("max_nodes"), 0, MAX_NODES, "max_nodes"),
                                      bool(text_field(job, "tres_per_node")) and not text_field(job, "tres_per_job"),
                                      _num(job.get("node_count"), 1, MAX_NODES, "node_count"))
                if pending else None,  # fmt: skip
            )
        )
        out.raw_ids[jid] = raw_id
        suspend_time = epoch_or_none(job.get("suspend_time"))
        if suspend_time is not None:
            pre_sus = _num(job.get("pre_sus_time"), maximum=2**32, what="pre_sus_time")
            note_suspension(out, jid, state, suspend_time, pre_sus)
        restarts = _num(job.get("restart_cnt"), maximum=1_000_000, what="restart_cnt")
        if restarts:
            out.restarts[jid] = restarts
    return out


# Running jobs carry a projected end (start + time limit, or far future); it is not an end.
_NO_END = frozenset({JobState.RUNNING, JobState.SUSPENDED})


def parse_sinfo_json(data: Mapping[str, Any]) -> list[Node]:
    """Nodes from ``sinfo --json``: 22.05 ``nodes[]`` or 23.02+ ``sinfo[]`` rows (deduplicated)."""
    nodes: dict[str, Node] = {}
    if isinstance(data.get("nodes"), list):
        for n in data["nodes"]:
            name = text_field(n, "name")
            if not name:
                raise ValueError("a node without a name")
            gres = text_field(n, "gres")
            total = node_gpu_total(gres)
            used_idx = parse_gres_detail(text_field(n, "gres_used"))
            states = [text_field(n, "state")] + _texts(n.get("state_flags"), "state_flags")
            base = map_node_state(states)
            used = len(used_idx) if used_idx is not None else None
            nodes[name] = Node(name, total, gpu_model(gres), gpu_state(base, total, used))
        return list(nodes.values())
    rows = data.get("sinfo")
    if not isinstance(rows, list):
        raise ValueError("neither 'nodes' nor 'sinfo' in sinfo JSON")
    for row in rows:
        gres = text_field(row.get("gres") or {}, "total")
        total = node_gpu_total(gres)
        base = map_node_state(_texts((row.get("node") or {}).get("state"), "node.state"))
        names = _texts((row.get("nodes") or {}).get("nodes"), "nodes.nodes")
        # A row aggregates nodes in one state; per-node GPU use is not in it.
        for name in names:
            if not name:
                raise ValueError("a node without a name")
            if name not in nodes:
                nodes[name] = Node(name, total, gpu_model(gres), base)
    return list(nodes.values())


def _texts(value: Any, key: str) -> list[str]:
    """A list of texts from Slurm's JSON (absent or null: none)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{key}: expected a list of strings")
    return value
