"""Predict which running jobs slurmctld would preempt for a request (pure; no subprocesses).

Follows Slurm 22.05 .. 26.05 select/cons_tres ``_run_now`` with preempt/qos or
preempt/partition_prio:

1. Candidates (``slurm_find_preemptable_jobs``): running jobs on the partition's nodes that the
   request may preempt (its QOS lists theirs in ``Preempt=``, or its partition's PriorityTier is
   higher), whose PreemptMode is REQUEUE or CANCEL, and that are past PreemptExemptTime
   (the QOS's, else the cluster's) since they started.
2. Order: ascending preemption priority ``(QOS priority | PriorityTier) << 16 + node count``,
   ties kept in slurmctld's job-list order (creation order); or youngest first with
   ``PreemptParameters=youngest_first``.
3. If the request fits on free GPUs, nothing is preempted. Otherwise candidates are removed one
   by one until it fits; slurmctld then re-sorts (the candidate that made it fit first, then the
   earlier ones on the chosen node) and retries, ``reorder_count`` (default 1) times, which
   trims unneeded victims. Victims are the removed candidates on the chosen node(s).

This is why ``sbatch --test-only`` over-reports: it lists every candidate on the node.
Modelled resources are GPUs only (CPUs and memory are assumed not to be the constraint).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from gpuq.backends.base import NativePlan, NativeVictim
from gpuq.backends.slurm.config import PreemptConfig
from gpuq.model import Job, JobState, Node, PreviewRequest, Snapshot

__all__ = ["predict_preemption"]

_REMOVABLE = ("REQUEUE", "CANCEL")


@dataclass(slots=True)
class _Cand:
    job: Job
    gpus_by_node: dict[str, int]
    prio: int
    order: int
    usable: int = field(default=0)


def _job_order(job_id: str, raw_ids: Mapping[str, str] | None) -> int:
    raw = raw_ids.get(job_id) if raw_ids else None
    match = re.match(r"\d+", raw or job_id)
    return int(match.group()) if match else 0


def _mode(cfg: PreemptConfig, job: Job) -> str:
    """The PreemptMode that applies to stopping `job` (GANG/WITHIN are flags, not modes)."""
    own = ""
    if cfg.by_qos and job.qos and job.qos in cfg.qos:
        own = cfg.qos[job.qos].preempt_mode
    elif cfg.by_partition and job.partition and job.partition in cfg.partitions:
        own = cfg.partitions[job.partition].preempt_mode
    return cfg.mode_of(own)


def _preemptable(cfg: PreemptConfig, victim: Job, qos: str | None, partition: str | None) -> bool:
    if cfg.by_qos:
        if not qos or not victim.qos or qos not in cfg.qos:
            return False
        return victim.qos in cfg.qos[qos].preempt
    if cfg.by_partition:
        mine = cfg.partitions.get(partition or "")
        theirs = cfg.partitions.get(victim.partition or "")
        return mine is not None and theirs is not None and mine.priority_tier > theirs.priority_tier
    return False


def _exempt(cfg: PreemptConfig, victim: Job, now: float) -> bool:
    exempt_s = None
    if victim.qos and victim.qos in cfg.qos:
        exempt_s = cfg.qos[victim.qos].exempt_time_s
    if exempt_s is None:
        exempt_s = cfg.exempt_time_s
    if not exempt_s or victim.start_time is None:
        return False
    return victim.start_time.timestamp() + exempt_s > now


def _base_prio(cfg: PreemptConfig, job: Job) -> int:
    """slurmctld's preemption priority of a job: its QOS's priority, or its partition's PriorityTier."""
    if cfg.by_qos:
        qos = cfg.qos.get(job.qos or "")
        return qos.priority if qos else 0
    part = cfg.partitions.get(job.partition or "")
    return part.priority_tier if part else 0


def _prio(cfg: PreemptConfig, job: Job) -> int:
    return (min(_base_prio(cfg, job), 0xFFFF) << 16) + min(len(job.allocation) or 1, 0xFFFF)


def _why(cfg: PreemptConfig, victim: Job, qos: str | None, partition: str | None, mode: str) -> str:
    """Why slurmctld may take `victim` for the request, in one sentence."""
    if cfg.by_qos:
        why = f"QOS {qos} may preempt {victim.qos}"
    else:
        mine, theirs = cfg.partitions[partition or ""], cfg.partitions[victim.partition or ""]
        why = (
            f"partition {mine.name} (PriorityTier {mine.priority_tier}) outranks "
            f"{theirs.name} (PriorityTier {theirs.priority_tier})"
        )
    order = "; youngest first" if cfg.youngest_first else ""
    return f"{why}; PreemptMode={mode}{order}"


def _fits(free: dict[str, int], nodes: Sequence[Node], gpus: int, single: bool) -> tuple[str, ...] | None:
    if single:
        for node in nodes:
            if free[node.name] >= gpus:
                return (node.name,)
        return None
    chosen: list[str] = []
    total = 0
    for node in sorted(nodes, key=lambda n: -free[n.name]):
        if free[node.name] <= 0:
            break
        chosen.append(node.name)
        total += free[node.name]
        if total >= gpus:
            return tuple(sorted(chosen, key=[n.name for n in nodes].index))
    return None


def predict_preemption(
    snapshot: Snapshot,
    request: PreviewRequest,
    cfg: PreemptConfig,
    now: float,
    *,
    urgent_qos: str | None = None,
    raw_ids: Mapping[str, str] | None = None,
) -> NativePlan:
    """What slurmctld would preempt to start `request` now."""
    notes: list[str] = []
    pending: Job | None = snapshot.job(request.job_id) if request.job_id else None
    gpus = pending.gpus if pending is not None else request.gpus
    qos = request.hints.get("qos") or (pending.qos if pending else None)
    if qos is None and request.urgent and urgent_qos:
        qos = urgent_qos
    if qos is None and cfg.by_qos and request.job_class in cfg.qos:
        qos = request.job_class
    partition = request.hints.get("partition") or (pending.partition if pending else None)
    if partition is None and cfg.by_partition and request.job_class in cfg.partitions:
        partition = request.job_class
    partition = partition or cfg.default_partition
    if cfg.by_qos and not qos:
        notes.append("no QOS given: slurmctld would use the user's default QOS (pass --qos to preview it)")
    part = cfg.partitions.get(partition or "")
    part_nodes = set(part.nodes) if part else {n.name for n in snapshot.nodes}
    nodes = [n for n in snapshot.nodes if n.name in part_nodes and n.state.takes_work]
    if not nodes:
        return NativePlan(False, notes=(f"no usable nodes in partition {partition}",))

    free = {n.name: n.gpus for n in nodes}
    for job in snapshot.jobs:
        if job.holds_gpus:
            for node, idx in job.allocation.items():
                if node in free:
                    free[node] -= len(idx)
    single = gpus <= max(n.gpus for n in nodes)
    if not single:
        notes.append("request spans nodes: node choice approximated")
    fit = _fits(free, nodes, gpus, single)
    if fit is not None:
        return NativePlan(False, nodes=fit, notes=("fits on free GPUs",))
    if cfg.preempt_type in ("", "preempt/none") or cfg.preempt_mode.upper().startswith("OFF"):
        return NativePlan(False, notes=("preemption is off (PreemptType/PreemptMode)",))

    cands: list[_Cand] = []
    for job in snapshot.jobs:
        if job.state is not JobState.RUNNING and job.state is not JobState.SUSPENDED:
            continue
        if pending is not None and job.id == pending.id:
            continue
        if not part_nodes.intersection(job.allocation):
            continue
        if not _preemptable(cfg, job, qos, partition):
            continue
        if _mode(cfg, job) not in _REMOVABLE:
            continue  # SUSPEND keeps the GPUs; OFF is never preempted
        if _exempt(cfg, job, now):
            notes.append(f"{job.id} protected by PreemptExemptTime")
            continue
        by_node = {n: len(idx) for n, idx in job.allocation.items()}
        cands.append(_Cand(job, by_node, _prio(cfg, job), _job_order(job.id, raw_ids)))
    if cfg.youngest_first:
        cands.sort(key=lambda c: (-(c.job.start_time.timestamp() if c.job.start_time else 0.0), c.order))
    else:
        cands.sort(key=lambda c: (c.prio, c.order))  # stable: job-list order within a priority

    passes = 0
    while True:
        trial = dict(free)
        hit: int | None = None
        chosen: tuple[str, ...] = ()
        for i, cand in enumerate(cands):
            for node, n in cand.gpus_by_node.items():
                if node in trial:
                    trial[node] += n
            cand.usable = 0
            sel = _fits(trial, nodes, gpus, single)
            if sel is not None:
                hit, chosen = i, sel
                break
        if hit is None:
            return NativePlan(False, notes=tuple(notes + ["no set of preemptable jobs frees enough GPUs"]))
        old = passes
        passes += 1
        if old > cfg.reorder_count or len(cands) <= passes:
            for cand in cands[hit + 1 :]:
                cand.usable = 1
            break
        if cfg.strict_order:
            cands.insert(0, cands.pop(hit))
        else:
            cands[hit].usable = 99999
            for cand in cands[:hit]:
                cand.usable = len(set(cand.gpus_by_node).intersection(chosen))
            for cand in cands[hit + 1 :]:
                cand.usable = 0
            cands.sort(key=lambda c: -c.usable)  # stable, like slurmctld's list_sort

    victims: list[NativeVictim] = []
    for cand in cands:
        if not set(cand.gpus_by_node).intersection(chosen):
            continue
        if cand.usable:
            break
        job = cand.job
        mode = _mode(cfg, job)
        details = {"qos": job.qos, "partition": job.partition, "mode": mode.lower()}
        victims.append(
            NativeVictim(
                id=job.id,
                nodes=tuple(cand.gpus_by_node),
                gpus=job.gpus,
                priority=_base_prio(cfg, job),
                reason=_why(cfg, job, qos, partition, mode),
                details={k: v for k, v in details.items() if v is not None},
            )
        )
    return NativePlan(bool(victims), nodes=chosen, victims=tuple(victims), notes=tuple(notes))
