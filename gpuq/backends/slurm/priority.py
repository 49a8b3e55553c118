"""The priority slurmctld would give a job now, by the multifactor formula (pure; no subprocesses).

Slurm's priority/multifactor (``_get_priority_internal``, 22.05 .. 26.05)::

    priority = site + Σ weight_f × factor_f − (nice − NICE_OFFSET),   at least 1 (0 is a hold)

with every factor in [0, 1]: age = min(accrued wait / PriorityMaxAge, 1), fairshare, job size,
partition = the partition's PriorityJobFactor / the highest over partitions, QOS = the QOS's
Priority / the highest QOS Priority (``PriorityFlags=NO_NORMAL_*``: the raw value instead), assoc,
TRES. The sum is a double, truncated to an integer.

What a what-if cannot know is estimated and named (`PriorityEstimate.estimated`): an age of 0 is
exact for a new job and for a held one at its release (a hold stops the job's accrual, so it
starts again at release); fairshare, assoc, TRES and site factors are counted as 0 (or 0.5 for
fairshare) when their weights are set; the job size factor from the request's nodes alone.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from gpuq.backends.base import NativePriority
from gpuq.backends.slurm.config import PreemptConfig, PriorityWeights
from gpuq.errors import BadInput
from gpuq.model import Job, JobState, PreviewRequest, Snapshot

__all__ = [
    "FAIRSHARE_GUESS",
    "PriorityEstimate",
    "check_hints",
    "estimate_priority",
    "is_held",
    "request_priority",
]

#: what fairshare counts as when its weight is set and the user's factor is not known
FAIRSHARE_GUESS = 0.5


@dataclass(frozen=True, slots=True)
class PriorityEstimate:
    """A priority as slurmctld would compute it, its weighted terms and what was estimated."""

    priority: int
    terms: tuple[tuple[str, float], ...]
    estimated: tuple[str, ...] = ()

    def describe(self) -> str:
        """``101000 = qos 100000 + partition 1000 + age 0``, then what was estimated."""
        terms = " + ".join(f"{name} {value:g}" for name, value in self.terms if value or name == "age")
        said = f"{self.priority} = {terms}" if terms else str(self.priority)
        if self.estimated:
            return f"{said}; estimated: {'; '.join(self.estimated)}"
        return f"{said}; no factor estimated"


def _factor(value: int, highest: int, normalised: bool) -> float:
    if not normalised:
        return float(value)
    return value / highest if highest > 0 else 0.0


def estimate_priority(
    weights: PriorityWeights,
    *,
    qos_priority: int,
    qos_max: int,
    partition_factor: int,
    partition_max: int,
    age_s: float = 0.0,
    fairshare: float | None = None,
    nodes: int = 1,
    cluster_nodes: int = 1,
    nice: int = 0,
    estimated: tuple[str, ...] = (),
) -> PriorityEstimate:
    """slurmctld's multifactor priority of a job with these factors (see the module docstring).

    `qos_priority`/`qos_max`: the job's QOS Priority and the highest over all QOS;
    `partition_factor`/`partition_max`: its partition's PriorityJobFactor and the highest;
    `age_s`: the time it has accrued; `fairshare`: the user's factor when known; `nice`: the
    job's nice value (0 by default); `estimated`: what the caller already estimated (said first).
    """
    said = list(estimated)
    terms: list[tuple[str, float]] = []
    if weights.qos:
        terms.append(("qos", weights.qos * _factor(qos_priority, qos_max, weights.normalised("QOS"))))
    if weights.partition:
        factor = _factor(partition_factor, partition_max, weights.normalised("PART"))
        terms.append(("partition", weights.partition * factor))
    if weights.age:
        max_age = weights.max_age_s
        terms.append(("age", weights.age * (min(max(age_s, 0.0) / max_age, 1.0) if max_age > 0 else 1.0)))
    if weights.fairshare:
        if fairshare is None:
            fairshare = FAIRSHARE_GUESS
            said.append(f"fairshare factor {FAIRSHARE_GUESS:g} (the user's is not read)")
        terms.append(("fairshare", weights.fairshare * fairshare))
    if weights.job_size:
        total = max(cluster_nodes, 1)
        size = (total - nodes) / total if weights.favor_small else nodes / total
        terms.append(("job size", weights.job_size * min(max(size, 0.0), 1.0)))
        said.append(f"job size factor from {nodes} node(s) of {total} (CPUs not counted)")
    if weights.assoc:
        terms.append(("assoc", 0.0))
        said.append("assoc factor 0 (the association's priority is not read)")
    if weights.tres:
        said.append("TRES factors 0 (PriorityWeightTRES is not modelled)")
    if weights.site_plugin:
        said.append(f"site factor 0 ({weights.site_plugin} is not modelled)")
    if nice:
        terms.append(("nice", -float(nice)))
    total_prio = sum(value for _, value in terms)
    # slurmctld truncates the double; Priority 0 is reserved for held jobs.
    priority = max(int(math.floor(total_prio + 1e-9)), 1)
    return PriorityEstimate(priority, tuple(terms), tuple(said))


#: what Slurm's hold reasons mean
_HELD = {
    "JobHeldAdmin": "held by an operator (scontrol hold)",
    "JobHeldUser": "held by its user (sbatch -H, scontrol hold)",
}


def is_held(job: Job) -> bool:
    """Slurm shows a held job as pending at Priority=0 (0 is reserved for holds)."""
    return job.state is JobState.PENDING and job.priority == 0


def check_hints(cfg: PreemptConfig, hints: Mapping[str, str], cluster: str) -> None:
    """BadInput, naming the known ones, for a ``--qos``/``--partition`` the cluster does not have."""
    where = f" on cluster {cluster}" if cluster else ""
    qos = hints.get("qos")
    if qos is not None and qos not in cfg.qos:
        known = ", ".join(sorted(cfg.qos)) or "none: the cluster keeps no accounting"
        raise BadInput(f"--qos {qos}: no such QOS{where} (QOS: {known})")
    part = hints.get("partition")
    if part is not None and part not in cfg.partitions:
        known = ", ".join(sorted(cfg.partitions)) or "none"
        raise BadInput(f"--partition {part}: no such partition{where} (partitions: {known})")


def request_priority(
    cfg: PreemptConfig, snapshot: Snapshot, request: PreviewRequest, *, nice: int | None = None
) -> NativePriority | None:
    """The priority slurmctld would give `request` now (`Backend.native_priority`): a what-if
    by QOS/partition (hints, or a class naming one) as a new job; a held job's own request at
    the priority it gets on release (`nice`: the held job's, when read). None when the
    request's priority stands: one given, urgent, a job not held, a what-if naming neither a
    QOS nor a partition, or a cluster without priority/multifactor."""
    check_hints(cfg, request.hints, snapshot.cluster)
    if request.priority is not None or request.urgent or not cfg.weights.multifactor:
        return None
    said: list[str] = []
    held: Job | None = None
    if request.job_id is not None:
        held = snapshot.job(request.job_id)
        if held is None or not is_held(held):
            return None
        job = held
        qos, partition = job.qos, job.partition
        if nice is None:
            said.append("nice 0 (not read)")
    else:
        qos = request.hints.get("qos") or (request.job_class if cfg.by_qos and request.job_class in cfg.qos else None)
        partition = request.hints.get("partition") or (
            request.job_class if cfg.by_partition and request.job_class in cfg.partitions else None
        )
        if qos is None and partition is None:
            return None
    per_node = max((n.gpus for n in snapshot.nodes), default=0)
    nodes = -(-request.gpus // per_node) if per_node else 1
    if qos is None and cfg.qos:
        qos = "normal" if "normal" in cfg.qos else None
        said.append(f"QOS {qos or 'none'} (none given; slurmctld takes the user's default QOS)")
    if partition is None:
        partition = cfg.default_partition  # (what slurmctld takes too)
        if partition is None:
            said.append("partition factor 0 (none given, and no default partition)")
    part = cfg.partitions.get(partition or "")
    estimate = estimate_priority(
        cfg.weights,
        qos_priority=cfg.qos[qos].priority if qos is not None and qos in cfg.qos else 0,
        qos_max=max((q.priority for q in cfg.qos.values()), default=0),
        partition_factor=part.job_factor if part else 0,
        partition_max=max((p.job_factor for p in cfg.partitions.values()), default=0),
        age_s=0.0,  # a new job; a held one accrues again from its release
        nodes=nodes,
        cluster_nodes=len(snapshot.nodes),
        nice=nice or 0,
        estimated=tuple(said),
    )
    what = f"QOS {qos}" if qos else "no QOS"
    what += f", partition {partition}" if partition else ""
    if held is not None:
        reason = held.reason or "held"
        why = _HELD.get(reason, reason)
        how = (
            f"job {request.job_id} is held ({reason}: {why}); previewed at the priority slurmctld "
            f"gives it on release ({what}, age 0: a hold stops its accrual): {estimate.describe()}"
        )
    else:
        how = f"priority as slurmctld would give a new job ({what}) now: {estimate.describe()}"
    return NativePriority(estimate.priority, how)
