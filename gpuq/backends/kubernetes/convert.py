"""Kubernetes objects → gpuq's model: a Job per GPU-requesting pod, Nodes, classes, preemptions.

Pure functions over the wire structs (`gpuq.backends.kubernetes.wire`); no I/O, no clock. The
mapping (README, "Kubernetes"):

- a pod is a job ``namespace/name``: GPUs are its effective ``nvidia.com/gpu`` request (limits
  where requests are absent, init containers and sidecars counted as the scheduler counts them),
  priority ``spec.priority``, class ``priorityClassName``, user the ``gpuq.io/user`` annotation
  (else the namespace), tenant the namespace, the controlling owner (Job, JobSet, PyTorchJob…) in
  `Job.owner` as ``Kind/namespace/name`` (what views group a job's pods by) and, for people, in
  `Job.comment` as ``Kind/name``;
- state from phase, conditions and deletionTimestamp: a bound pod being deleted still holds its
  GPUs (``completing``) until it is gone; a Failed pod whose ``DisruptionTarget`` condition says
  the scheduler preempted it is ``preempted``;
- a bound pod's allocation is ``{node: (None,) * gpus}``: which GPUs it holds is not in the API.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta

import msgspec

from gpuq.backends.kubernetes.kueue import Admission, ClusterQueue, Workload, WorkloadPriorityClass
from gpuq.backends.kubernetes.wire import GPU_RESOURCE, Condition, Node, Pod, PriorityClass, quantity_int
from gpuq.errors import BadInput
from gpuq.model import (
    ACTIVE_STATES,
    MAX_GPUS_PER_NODE,
    MAX_JOB_GPUS,
    MAX_NODES,
    MAX_PRIORITY,
    Job,
    JobClass,
    JobState,
    NodeState,
    PreemptionEvent,
    Queue,
    QueueAdmission,
    QueuePolicy,
    QueueQuota,
    time_in_range,
)
from gpuq.model import Node as ModelNode
from gpuq.textsafe import visible

__all__ = [
    "CHECKPOINT_ANNOTATION",
    "EXEMPT_KEY",
    "KUEUE",
    "NO_CLASS",
    "PREEMPTION_REASONS",
    "SYSTEM_PRIORITY_MIN",
    "USER_ANNOTATION",
    "admission_reservations",
    "admitted_owners",
    "cluster_queue",
    "gpu_flavor",
    "job_class",
    "merged_times",
    "model_node",
    "owner_key",
    "owner_of",
    "parse_time",
    "pod_job",
    "pod_preemption_time",
    "pod_state",
    "preemption_event",
    "synthetic_node",
    "workload_class",
    "workload_job",
]

USER_ANNOTATION = "gpuq.io/user"
CHECKPOINT_ANNOTATION = "gpuq.io/last-checkpoint"
#: an annotation (or label) holding the time a pod is exempt from preemption until
EXEMPT_KEY = "gpuq.io/exempt-until"
JOBSET_LABEL = "jobset.sigs.k8s.io/jobset-name"
#: `Job.admitted_by` of what Kueue holds back or admitted
KUEUE = "kueue"
#: the class of pods without a priorityClassName (and no global default class to give them one)
NO_CLASS = "none"
#: DisruptionTarget reasons of a scheduler preemption (1.26 renamed the first to the second)
PREEMPTION_REASONS = frozenset({"PreemptionByScheduler", "PreemptionByKubeScheduler"})
#: PriorityClass values above a billion are reserved for system-critical pods: nothing outranks
#: them enough to preempt them for GPUs, so gpuq treats those classes as not preemptible
SYSTEM_PRIORITY_MIN = 1_000_000_001
#: a Preempted event and a DisruptionTarget condition this close together are one preemption
SAME_PREEMPTION = timedelta(seconds=120)

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
_OUT_OF_SERVICE_TAINT = "node.kubernetes.io/out-of-service"


def parse_time(text: str | None) -> datetime | None:
    """An RFC 3339 time from an annotation (``2026-11-29T17:40:00Z``); None when absent, not a
    time with a UTC offset, or outside 1970..9999."""
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    if moment.tzinfo is None or not time_in_range(moment.timestamp()):
        return None
    return moment.astimezone(UTC)


def owner_of(pod: Pod) -> str | None:
    """``Kind/name`` of what runs the pod: its JobSet (by label, the pod's owner being one of the
    JobSet's Jobs), else its controlling owner reference (Job, PyTorchJob, ReplicaSet…)."""
    jobset = pod.metadata.labels.get(JOBSET_LABEL)
    if jobset:
        return f"JobSet/{jobset}"
    owner = pod.metadata.controller
    return f"{owner.kind}/{owner.name}" if owner is not None else None


def owner_key(pod: Pod) -> str | None:
    """`owner_of` with the pod's namespace, ``Kind/namespace/name`` (owners are in their pods'
    namespace, and two namespaces may each have a ``Job/train``): `Job.owner`."""
    owner = owner_of(pod)
    if owner is None:
        return None
    kind, _, name = owner.partition("/")
    return f"{kind}/{pod.metadata.namespace}/{name}"


def _disruption(pod: Pod) -> Condition | None:
    found = pod.status.condition("DisruptionTarget")
    return found if found is not None and found.status == "True" else None


def pod_preemption_time(pod: Pod) -> datetime | None:
    """When the scheduler marked the pod for preemption (its DisruptionTarget condition)."""
    cond = _disruption(pod)
    if cond is not None and cond.reason in PREEMPTION_REASONS:
        return cond.last_transition_time or pod.metadata.deletion_timestamp or pod.metadata.creation_timestamp
    return None


def _because(cond: Condition | None) -> str:
    if cond is None:
        return ""
    return ": ".join(part for part in (cond.reason, cond.message) if part)


def pod_state(pod: Pod) -> tuple[JobState, str | None]:
    """The job state of a pod and why (None: nothing to say)."""
    meta, spec, status = pod.metadata, pod.spec, pod.status
    phase, bound = status.phase, bool(spec.node_name)
    disruption = _disruption(pod)
    if phase == "Succeeded":
        return JobState.COMPLETED, None
    if phase == "Failed":
        if disruption is not None and disruption.reason in PREEMPTION_REASONS:
            return JobState.PREEMPTED, _because(disruption)
        if status.reason == "DeadlineExceeded":
            return JobState.TIMEOUT, _because(Condition(reason=status.reason, message=status.message))
        failed = _because(disruption) or _because(Condition(reason=status.reason, message=status.message))
        return JobState.FAILED, failed or None
    if meta.deletion_timestamp is not None:
        if not bound:
            return JobState.CANCELLED, "deleted before it was scheduled"
        grace = meta.deletion_grace_period_seconds
        note = (
            f"terminating: deleted, holds its GPUs until the kubelet confirms (deadline {_rfc(meta.deletion_timestamp)}"
        )
        note += f", grace {grace} s)" if grace is not None else ")"
        if disruption is not None:
            note += f"; {_because(disruption)}"
        return JobState.COMPLETING, note
    if bound:
        why: str | None = None
        if phase == "Unknown":
            why = "phase Unknown: its node stopped reporting"
        elif phase in ("Pending", ""):
            why = f"bound to {spec.node_name}, starting"
        if disruption is not None:
            why = f"{why}; " if why else ""
            why += f"being disrupted: {_because(disruption)}"
        return JobState.RUNNING, why
    scheduled = status.condition("PodScheduled")
    parts = []
    if scheduled is not None and scheduled.status == "False":
        parts.append(_because(scheduled))
    if status.nominated_node_name:
        parts.append(f"nominated node {status.nominated_node_name} (preempting there)")
    return JobState.PENDING, "; ".join(p for p in parts if p) or None


def _rfc(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _end_time(pod: Pod, state: JobState) -> datetime | None:
    if state in ACTIVE_STATES or state is JobState.PENDING:
        return None
    ends = [
        s.state.terminated.finished_at
        for s in pod.status.container_statuses
        if s.state.terminated is not None and s.state.terminated.finished_at is not None
    ]
    if ends:
        return max(ends)
    cond = _disruption(pod) or pod.status.condition("Ready")
    return cond.last_transition_time if cond is not None else None


def merged_times(first: Iterable[datetime], more: Iterable[datetime]) -> tuple[datetime, ...]:
    """Preemption times from two sources (conditions, events), one per preemption: a time within
    `SAME_PREEMPTION` of one already kept is the same preemption seen twice."""
    if not first and not more:  # (almost every pod: no preemption at all)
        return ()
    kept: list[datetime] = sorted(first)
    for moment in sorted(more):
        if all(abs(moment - k) > SAME_PREEMPTION for k in kept):
            kept.append(moment)
    return tuple(sorted(kept))


def pod_job(pod: Pod, event_times: Iterable[datetime] = (), *, no_class: str = NO_CLASS) -> Job:
    """The gpuq job of one pod; `event_times`: when Events say the scheduler preempted it."""
    meta, spec, status = pod.metadata, pod.spec, pod.status
    gpus = pod.gpus()
    state, reason = pod_state(pod)
    # (GPU indexes are unknown through the API: one None per GPU)
    allocation: dict[str, tuple[int | None, ...]] = {}
    if state in ACTIVE_STATES and gpus:
        allocation = {spec.node_name: (None,) * gpus}
    own = pod_preemption_time(pod)
    times = merged_times(() if own is None else (own,), event_times)
    exempt = parse_time(meta.annotations.get(EXEMPT_KEY)) or parse_time(meta.labels.get(EXEMPT_KEY))
    return Job(
        id=meta.key,
        name=meta.name,
        user=meta.annotations.get(USER_ANNOTATION) or meta.namespace,
        tenant=meta.namespace,
        job_class=spec.priority_class_name or no_class,
        priority=spec.priority if spec.priority is not None else 0,
        state=state,
        submit_time=meta.creation_timestamp or _EPOCH,
        eligible_time=None,
        start_time=status.start_time if state is not JobState.PENDING else None,
        end_time=_end_time(pod, state),
        gpus=gpus,
        allocation=allocation,
        preemption_times=times,
        last_checkpoint_time=parse_time(meta.annotations.get(CHECKPOINT_ANNOTATION)),
        exempt_until=exempt,
        reason=reason,
        comment=owner_of(pod),
        owner=owner_key(pod),
        max_nodes=1,  # (a pod runs on one node)
    )


def model_node(node: Node, used: int) -> ModelNode:
    """A node and its state: down when not Ready (or out of service), drain when cordoned,
    else idle/mixed/allocated by the GPUs bound pods request there (`used`).

    The ``node.kubernetes.io/not-ready``/``unreachable`` taints are not read: they follow the
    Ready condition (read directly) with a lag. Other taints do not change the state: dedicated
    GPU nodes are routinely tainted for GPU pods only."""
    name = node.metadata.name
    gpus = node.gpus()
    if gpus > MAX_GPUS_PER_NODE:
        raise BadInput(f"node {name}: {gpus} GPUs is more than a node can have ({MAX_GPUS_PER_NODE})")
    ready = node.ready()
    taints = {t.key for t in node.spec.taints}
    if ready is None or ready.status != "True" or _OUT_OF_SERVICE_TAINT in taints:
        state = NodeState.DOWN
    elif node.spec.unschedulable or _UNSCHEDULABLE_TAINT in taints:
        state = NodeState.DRAIN
    elif used <= 0:
        state = NodeState.IDLE
    elif used >= gpus:
        state = NodeState.ALLOCATED
    else:
        state = NodeState.MIXED
    return ModelNode(name, gpus, node.metadata.labels.get("nvidia.com/gpu.product") or None, state)


def synthetic_node(name: str, used: int) -> ModelNode:
    """A node known only from the pods bound to it (no right to list nodes): as many GPUs as
    they hold, all in use, model and state otherwise unknown."""
    return ModelNode(name, min(used, MAX_GPUS_PER_NODE), None, NodeState.ALLOCATED)


def job_class(pc: PriorityClass) -> JobClass:
    """A PriorityClass as a gpuq class (SLA targets come from the policy file); a class with
    ``preemptionPolicy: Never`` preempts no pod (kube-scheduler's ``PodEligibleToPreemptOthers``)."""
    never = pc.preemption_policy == "Never"
    return JobClass(pc.metadata.name, pc.value, preemptible=pc.value < SYSTEM_PRIORITY_MIN,
                    may_preempt=() if never else msgspec.UNSET)  # fmt: skip


def preemption_event(
    time: datetime,
    victim_id: str,
    victim: Job | None,
    message: str,
    related: str | None = None,
) -> PreemptionEvent:
    """One preemption: `message` is the scheduler's ("Preempted by NS/NAME on node N"), which
    names the preemptor (else `related`, events.k8s.io's related object). GPU-time lost: the
    victim's GPUs since its last checkpoint (else its start)."""
    preemptor = related
    if message.startswith("Preempted by "):
        named = message[len("Preempted by ") :].split(" on node ", 1)[0].strip()
        preemptor = named or related
    gpus, lost = 0, 0.0
    mode = "cancel"
    if victim is not None:
        gpus = victim.gpus
        since = max((t for t in (victim.start_time, victim.last_checkpoint_time) if t is not None and t <= time),
                    default=None)  # fmt: skip
        if since is not None:
            lost = gpus * (time - since).total_seconds()
        # a controller (Job, JobSet…) recreates a deleted pod: the work is requeued, gracefully
        mode = "graceful" if victim.owner else "cancel"
    return PreemptionEvent(time, victim_id, preemptor, gpus, lost, mode, message)


def workload_job(workload: Workload, *, no_class: str = NO_CLASS) -> Job | None:
    """A Kueue Workload still waiting for quota, as a pending job (its pods do not exist yet: Kueue
    keeps the Job suspended). None for one that holds quota (its pods are the jobs) or that was
    deactivated."""
    meta, spec = workload.metadata, workload.spec
    if not spec.active or workload.is_true("QuotaReserved") or workload.is_true("Finished"):
        return None
    waiting = workload.condition("QuotaReserved")
    parts = [f"Kueue queue {spec.queue_name}" if spec.queue_name else "Kueue"]
    if waiting is not None and waiting.message:
        parts.append(waiting.message)
    times = []
    for kind in ("Evicted", "Preempted"):
        cond = workload.condition(kind)
        if (
            cond is not None
            and cond.status == "True"
            and cond.last_transition_time is not None
            and (kind == "Preempted" or cond.reason == "Preempted")
        ):
            times.append(cond.last_transition_time)
    owner = meta.controller
    return Job(
        id=meta.key,
        name=meta.name,
        user=meta.annotations.get(USER_ANNOTATION) or meta.namespace,
        tenant=meta.namespace,
        job_class=workload.class_name or no_class,
        priority=spec.priority if spec.priority is not None else 0,
        state=JobState.PENDING,
        submit_time=meta.creation_timestamp or _EPOCH,
        eligible_time=None,
        start_time=None,
        end_time=None,
        gpus=workload.gpus(),
        allocation={},
        preemption_times=merged_times(times[:1], times[1:]),
        last_checkpoint_time=parse_time(meta.annotations.get(CHECKPOINT_ANNOTATION)),
        exempt_until=parse_time(meta.annotations.get(EXEMPT_KEY)),
        reason=": ".join(parts),
        comment=f"{owner.kind}/{owner.name}" if owner is not None else None,
        owner=f"{owner.kind}/{meta.namespace}/{owner.name}" if owner is not None else None,
        # each of its pods runs on one node; Kueue preempts only the workloads it admitted
        max_nodes=min(MAX_NODES, max(1, sum(ps.count for ps in spec.pod_sets))),
        admitted_by=KUEUE,
    )


def admitted_owners(workloads: Iterable[Workload]) -> dict[str, Workload]:
    """What runs each workload Kueue admitted (holds quota for, not finished), as `Job.owner`
    keys (``Kind/namespace/name``; a plain pod's workload: the pod's own ``namespace/name``),
    with the workload: the pods of those are the jobs Kueue may preempt."""
    out: dict[str, Workload] = {}
    for workload in workloads:
        owner = workload.metadata.controller
        if owner is None or not workload.is_true("QuotaReserved") or workload.is_true("Finished"):
            continue
        namespace = workload.metadata.namespace
        out[f"{namespace}/{owner.name}" if owner.kind == "Pod" else f"{owner.kind}/{namespace}/{owner.name}"] = workload
    return out


def admission_reservations(workloads: Iterable[Workload]) -> tuple[dict[str, list[QueueAdmission]], list[str]]:
    """Per ClusterQueue, the GPUs each workload it admitted reserves per flavor, as Kueue counts
    its usage (``status.admission.podSetAssignments[].resourceUsage``, whether its pods run yet
    or not), keyed like `admitted_owners`; and, in words, the admissions that could not be read
    (no GPU usage for a workload that asks GPUs, a bad quantity): those count by their pods."""
    out: dict[str, list[QueueAdmission]] = {}
    problems: list[str] = []
    for workload in workloads:
        admission = workload.status.admission
        if admission is None or not admission.cluster_queue or not workload.is_true("QuotaReserved") or \
                workload.is_true("Finished"):  # fmt: skip
            continue
        meta = workload.metadata
        where = f"Workload {visible(meta.key)}: status.admission"
        owner = meta.controller
        if owner is None:
            key = f"Workload/{meta.key}"
        elif owner.kind == "Pod":
            key = f"{meta.namespace}/{owner.name}"
        else:
            key = f"{owner.kind}/{meta.namespace}/{owner.name}"
        gpus: dict[str, int] = {}
        try:
            for assignment in admission.pod_set_assignments:
                raw = assignment.resource_usage.get(GPU_RESOURCE)
                if raw is None:
                    continue
                flavor = assignment.flavors.get(GPU_RESOURCE)
                if not flavor:
                    raise BadInput(f"{where} reserves nvidia.com/gpu in no flavor")
                used = quantity_int(raw, f"{where} nvidia.com/gpu of pod set {visible(assignment.name)}")
                gpus[flavor] = min(gpus.get(flavor, 0) + used, MAX_JOB_GPUS)
            if not gpus and workload.gpus() > 0:
                raise BadInput(f"{where} reserves no nvidia.com/gpu, though the workload asks for GPUs")
        except BadInput as exc:
            problems.append(f"{exc}: its usage counted as its running pods' GPUs")
            continue
        if not gpus:
            continue  # (a workload without GPUs: nothing of the GPU quota)
        reserved = workload.condition("QuotaReserved")
        out.setdefault(admission.cluster_queue, []).append(QueueAdmission(
            key, gpus, _priority(workload.spec.priority), meta.creation_timestamp,
            reserved.last_transition_time if reserved else None))  # fmt: skip
    return out, problems


def _priority(value: int | None) -> int:
    return 0 if value is None else max(-MAX_PRIORITY, min(MAX_PRIORITY, value))


def gpu_flavor(admission: Admission | None) -> str | None:
    """The resource flavor Kueue admitted a workload's GPUs with (its first pod set asking for
    any), None when the admission names none."""
    if admission is None:
        return None
    return next((a.flavors[GPU_RESOURCE] for a in admission.pod_set_assignments if GPU_RESOURCE in a.flavors), None)


#: Kueue's values of ``withinClusterQueue`` and ``reclaimWithinCohort`` (its CRD's enums)
_WITHIN = {"Never": QueuePolicy.NEVER, "LowerPriority": QueuePolicy.LOWER_PRIORITY,
           "LowerOrNewerEqualPriority": QueuePolicy.LOWER_OR_NEWER_EQUAL_PRIORITY}  # fmt: skip
_RECLAIM = {"Never": QueuePolicy.NEVER, "LowerPriority": QueuePolicy.LOWER_PRIORITY, "Any": QueuePolicy.ANY}
_BORROW = {"Never": QueuePolicy.NEVER, "LowerPriority": QueuePolicy.LOWER_PRIORITY}


def cluster_queue(cq: ClusterQueue) -> tuple[Queue, tuple[str, ...]]:
    """A ClusterQueue's cohort and preemption rules, and what in them could not be read, in words
    for the operator. An absent policy is Kueue's default, ``Never``; one gpuq does not know (a
    newer Kueue's, a wrong type) is read as ``Never`` too, so gpuq names no victim Kueue might
    not take."""
    spec = cq.spec
    found = spec.preemption
    problems: list[str] = []

    def policy(value: object, known: dict[str, QueuePolicy], field: str) -> QueuePolicy:
        if value is None or value == "":
            return QueuePolicy.NEVER
        if isinstance(value, str) and value in known:
            return known[value]
        shown = visible(value if isinstance(value, str) else msgspec.json.encode(value).decode())
        problems.append(f"ClusterQueue {visible(cq.metadata.name)}: spec.preemption.{field} '{shown}' is not one of "
                        f"{', '.join(known)}: read as Never")  # fmt: skip
        return QueuePolicy.NEVER

    within = policy(None if found is None else found.within_cluster_queue, _WITHIN, "withinClusterQueue")
    reclaim = policy(None if found is None else found.reclaim_within_cohort, _RECLAIM, "reclaimWithinCohort")
    borrow, threshold = _borrow_within_cohort(None if found is None else found.borrow_within_cohort, policy, problems,
                                              visible(cq.metadata.name))  # fmt: skip
    try:
        quotas = tuple(QueueQuota(flavor, min(nominal, MAX_JOB_GPUS), _capped(borrowing), _capped(lending))
                       for flavor, nominal, borrowing, lending in cq.gpu_quotas())  # fmt: skip
    except BadInput as exc:
        problems.append(f"ClusterQueue {visible(cq.metadata.name)}: {exc}: its GPU quota read as none")
        quotas = ()
    queue = Queue(cq.metadata.name, spec.cohort or spec.cohort_name or None, within, reclaim, quotas, borrow,
                  threshold, fair_sharing=spec.fair_sharing is not None)  # fmt: skip
    return queue, tuple(problems)


def _capped(value: int | None) -> int | None:
    return None if value is None else min(value, MAX_JOB_GPUS)


def _borrow_within_cohort(raw: object, policy: Callable[[object, dict[str, QueuePolicy], str], QueuePolicy],
                          problems: list[str], name: str) -> tuple[QueuePolicy, int | None]:  # fmt: skip
    """``borrowWithinCohort {policy, maxPriorityThreshold}``: its policy (``Never`` when absent or
    unknown, reported by `policy`) and its threshold (None: the preemptor's own priority)."""
    if not isinstance(raw, dict):
        return policy(raw, _BORROW, "borrowWithinCohort"), None
    chosen = policy(raw.get("policy"), _BORROW, "borrowWithinCohort.policy")
    threshold = raw.get("maxPriorityThreshold")
    if threshold is None:
        return chosen, None
    if type(threshold) is not int or abs(threshold) > MAX_PRIORITY:
        shown = visible(msgspec.json.encode(threshold).decode())
        problems.append(f"ClusterQueue {name}: spec.preemption.borrowWithinCohort.maxPriorityThreshold '{shown}' is "
                        "not a priority: read as Never")  # fmt: skip
        return QueuePolicy.NEVER, None
    return chosen, threshold


def workload_class(wpc: WorkloadPriorityClass) -> JobClass:
    return JobClass(wpc.metadata.name, wpc.value, preemptible=True)
