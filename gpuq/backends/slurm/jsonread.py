"""``squeue --json`` / ``scontrol show job --json`` / ``sinfo --json`` for 22.05 .. 26.05.

22.05 is openapi/v0.0.38: plain numbers, ``job_state`` a string, ``tres_per_node`` ``gres:gpu:2``,
sinfo ``nodes[]``. 23.02+ (data_parser v0.0.39 .. v0.0.45): numbers as ``{set, infinite, number}``,
``job_state`` a list, ``gres/gpu:2``, sinfo ``sinfo[]`` rows per partition and node state.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

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
    class_of,
    clean,
    job_id_text,
    map_state,
    parse_admin_comment,
)
from gpuq.backends.slurm.text import gpu_state, map_node_state
from gpuq.backends.slurm.values import EPOCH, expand_hostlist, json_number, moment, moment_or_none
from gpuq.backends.slurm.version import SlurmVersion, version_from_meta
from gpuq.model import Job, JobState, Node

__all__ = ["load_json", "map_node_state", "parse_jobs_json", "parse_sinfo_json"]


def load_json(text: str, command: str) -> tuple[dict[str, Any], SlurmVersion]:
    """Decode and version-check one CLI's JSON; ValueError names what is wrong."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg} at char {exc.pos}; truncated output?)") from None
    if not isinstance(data, dict) or "meta" not in data:
        raise ValueError("JSON without 'meta': not Slurm output")
    version = version_from_meta(data["meta"])
    errors = data.get("errors") or []
    if errors:
        first = errors[0]
        text_err = first.get("description") or first.get("error") if isinstance(first, dict) else first
        raise ValueError(f"{command} reported: {text_err}")
    return data, version


def _num(value: Any, default: int = 0) -> int:
    n = json_number(value)
    return int(n) if n is not None else default


def _allocation(job: Mapping[str, Any], nodes: tuple[str, ...]) -> dict[str, tuple[int | None, ...]]:
    """Pair ``gres_detail`` entries (one per allocated node, in node order) with node names."""
    detail = job.get("gres_detail") or []
    out: dict[str, tuple[int | None, ...]] = {}
    for node, text in zip(nodes, detail, strict=False):
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
        raw_id = str(job["job_id"])
        array_id = _num(job.get("array_job_id"))
        task = json_number(job.get("array_task_id"))
        task_text: str | int | None = int(task) if task is not None else (job.get("array_task_string") or None)
        jid = job_id_text(raw_id, array_id, task_text, _num(job.get("het_job_id")), _num(job.get("het_job_offset")))
        state = map_state(job["job_state"])
        gpus = gpus_from_tres(job.get("tres_alloc_str") or "")
        if gpus is None:
            gpus = gpus_from_tres_per(job.get("tres_per_job") or "")
        if gpus is None:
            per_node = gpus_from_tres_per(job.get("tres_per_node") or "")
            gpus = per_node * max(1, _num(job.get("node_count"), 1)) if per_node is not None else None
        if gpus is None:
            gpus = gpus_from_tres(job.get("tres_req_str") or "") or 0
        allocation: dict[str, tuple[int | None, ...]] = {}
        if state in (JobState.RUNNING, JobState.SUSPENDED, JobState.COMPLETING):
            nodes = expand_hostlist(job.get("nodes") or "")
            detail = _allocation(job, nodes)
            allocation = allocation_from(nodes, gpus, detail)
            if detail:
                gpus = sum(len(v) for v in detail.values())
        note = parse_admin_comment(job.get("admin_comment"))
        qos, partition, account = clean(job.get("qos")), clean(job.get("partition")), clean(job.get("account"))
        user = job.get("user_name") or str(job.get("user_id", ""))
        reason = job.get("state_reason") or "None"
        pending = state is JobState.PENDING
        out.jobs.append(
            Job(
                id=jid,
                name=job.get("name") or "",
                user=user,
                tenant=account or user,
                job_class=class_of(class_key, qos, partition),
                priority=_num(job.get("priority")),
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
                comment=clean(job.get("comment")),
            )
        )
        out.raw_ids[jid] = raw_id
        restarts = _num(job.get("restart_cnt"))
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
            gres = n.get("gres") or ""
            total = node_gpu_total(gres)
            used_idx = parse_gres_detail(n.get("gres_used") or "")
            states = [n.get("state") or ""] + list(n.get("state_flags") or [])
            base = map_node_state(states)
            used = len(used_idx) if used_idx is not None else None
            nodes[n["name"]] = Node(n["name"], total, gpu_model(gres), gpu_state(base, total, used))
        return list(nodes.values())
    rows = data.get("sinfo")
    if not isinstance(rows, list):
        raise ValueError("neither 'nodes' nor 'sinfo' in sinfo JSON")
    for row in rows:
        gres = (row.get("gres") or {}).get("total") or ""
        total = node_gpu_total(gres)
        base = map_node_state((row.get("node") or {}).get("state") or [])
        names = (row.get("nodes") or {}).get("nodes") or []
        # A row aggregates nodes in one state; per-node GPU use is not in it.
        for name in names:
            if name not in nodes:
                nodes[name] = Node(name, total, gpu_model(gres), base)
    return list(nodes.values())
