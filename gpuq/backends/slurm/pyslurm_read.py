"""Reading jobs through pyslurm (libslurm in-process) when it is importable and built for the
cluster's Slurm release: same model as the CLI readers, no subprocess per refresh.

Mapped from pyslurm's documented 25.11 ``pyslurm.Job`` API (``Jobs.load()`` returns a dict of
Job objects; ``get_resource_layout_per_node()`` gives ``{node: {"gres": {"gpu:h100": {"count",
"indexes"}}}}``). Unverified on a live cluster: no Slurm 25.11 was available to run it against
(pyslurm requires an exact major.minor match and builds against neither 22.05, 24.11 nor 26.05).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping
from types import ModuleType
from typing import Any

from gpuq.backends.slurm.gres import gpus_from_tres_per
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
from gpuq.backends.slurm.values import EPOCH, expand_hostlist, expand_indexes, moment
from gpuq.model import Job, JobState

__all__ = ["jobs_from_pyslurm", "load_pyslurm"]

_HOLDING = (JobState.RUNNING, JobState.SUSPENDED, JobState.COMPLETING)


def load_pyslurm(cluster_version: str) -> ModuleType | None:
    """The pyslurm module if importable and built for this cluster's major.minor, else None."""
    try:
        module = importlib.import_module("pyslurm")
    except ImportError:
        return None
    built = str(getattr(module, "__version__", ""))
    if not cluster_version or built.split(".")[:2] != cluster_version.split(".")[:2]:
        return None
    return module


def _attr(obj: Any, *names: str, default: Any = None) -> Any:
    """The first attribute that exists (pyslurm renamed a few between releases)."""
    for name in names:
        value = getattr(obj, name, None)
        if value is not None:
            return value
    return default


def _time(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and value > 0 else None


def _gpu_layout(job: Any) -> dict[str, tuple[int | None, ...]]:
    layout_fn = getattr(job, "get_resource_layout_per_node", None)
    layout: Mapping[str, Any] = layout_fn() if callable(layout_fn) else {}
    out: dict[str, tuple[int | None, ...]] = {}
    for node, res in (layout or {}).items():
        for name, spec in ((res or {}).get("gres") or {}).items():
            if name != "gpu" and not str(name).startswith("gpu:"):
                continue
            if isinstance(spec, Mapping):
                idx = str(spec.get("indexes") or "")
                count = int(spec.get("count") or 0)
                found = expand_indexes(idx) if idx and idx != "N/A" else (None,) * count
            else:
                found = (None,) * int(spec)
            out[node] = out.get(node, ()) + tuple(found)
    return out


def _gpus(job: Any) -> int:
    per_node = _attr(job, "gres_per_node", default={}) or {}
    if isinstance(per_node, str):
        count = gpus_from_tres_per(per_node) or 0
    else:
        count = sum(int(v) for k, v in per_node.items() if k == "gpu" or str(k).startswith("gpu:"))
    return count * max(1, int(_attr(job, "num_nodes", default=1) or 1))


def jobs_from_pyslurm(jobs: Iterable[Any], class_key: ClassKey) -> QueueRead:
    """`pyslurm.Job` objects -> the same QueueRead the CLI readers build."""
    out = QueueRead()
    for job in jobs:
        raw_id = str(job.id)
        jid = job_id_text(
            raw_id,
            _attr(job, "array_id"),
            _attr(job, "array_task_id", default=None)
            if _attr(job, "array_task_id") is not None
            else (_attr(job, "array_tasks_waiting") or None),
            _attr(job, "heterogeneous_id", "het_job_id"),
            _attr(job, "heterogeneous_offset", "het_job_offset"),
        )
        state = map_state(str(job.state))
        gpus = _gpus(job)
        allocation: dict[str, tuple[int | None, ...]] = {}
        if state in _HOLDING:
            allocation = _gpu_layout(job) or allocation_from(
                expand_hostlist(_attr(job, "allocated_nodes", default="") or ""), gpus, None
            )
            gpus = sum(len(v) for v in allocation.values()) or gpus
        qos, partition, account = clean(job.qos), clean(job.partition), clean(job.account)
        user = _attr(job, "user_name", default="") or str(_attr(job, "user_id", default=""))
        reason = _attr(job, "state_reason", default="None")
        pending = state is JobState.PENDING
        out.jobs.append(
            Job(
                id=jid,
                name=job.name or "",
                user=user,
                tenant=account or user,
                job_class=class_of(class_key, qos, partition),
                priority=int(job.priority or 0),
                state=state,
                submit_time=moment(_time(job.submit_time)) or EPOCH,
                eligible_time=moment(_time(_attr(job, "eligible_time"))),
                start_time=None if pending else moment(_time(job.start_time)),
                end_time=None if pending or state in _HOLDING else moment(_time(_attr(job, "end_time"))),
                gpus=gpus,
                allocation=allocation or NO_ALLOCATION,
                preemption_times=(),
                last_checkpoint_time=None,
                exempt_until=moment(parse_admin_comment(_attr(job, "admin_comment")).exempt_until),
                reason=None if reason in (None, "None") else str(reason),
                account=account,
                partition=partition,
                qos=qos,
                comment=clean(_attr(job, "comment")),
            )
        )
        out.raw_ids[jid] = raw_id
        restarts = int(_attr(job, "requeue_count", "restart_cnt", default=0) or 0)
        if restarts:
            out.restarts[jid] = restarts
    return out
