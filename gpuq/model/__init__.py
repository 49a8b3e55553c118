"""The immutable domain model: exactly `gpuq.snapshot/v1` (README, "Snapshot format").

Every backend turns its world into these objects; policy, SLA maths and the simulator are pure
functions over them. They are msgspec structs: `gpuq.model.codec` decodes and validates a snapshot
file straight into them and encodes them back byte for byte, and with ``gc=False`` the cyclic
garbage collector does not track the hundreds of thousands of jobs of a large cluster.

Times are timezone-aware `datetime`s (what the wire carries, decoded in C); the policy's arithmetic
runs on epoch seconds (`to_epoch`, `Snapshot.now`), the simulator's on its own floats
(`from_epoch` converts, exactly for whole microseconds). Durations are float seconds.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, TypeVar, cast

import msgspec

__all__ = [
    "ACTIVE_STATES",
    "DAY_S",
    "FORMAT",
    "MAX_DURATION_S",
    "MAX_EPOCH",
    "MAX_GPUS_PER_NODE",
    "MAX_ID_LENGTH",
    "MAX_JOB_GPUS",
    "MAX_NODES",
    "MAX_PRIORITY",
    "QUEUED_STATES",
    "GpuIndex",
    "Job",
    "JobClass",
    "JobIdKey",
    "JobState",
    "Node",
    "NodeState",
    "PreemptionEvent",
    "PreviewRequest",
    "Queue",
    "QueuePolicy",
    "QueueAdmission",
    "QueueQuota",
    "Snapshot",
    "Timestamp",
    "Unread",
    "from_epoch",
    "job_id_key",
    "time_in_range",
    "to_epoch",
]

T = TypeVar("T")

FORMAT = "gpuq.snapshot/v1"
DAY_S = 86400.0

# What can exist, for every number read from outside (files, backends, options): beyond these a
# value is a malformed input, refused with its place named, never a huge loop or an overflow.
#: the last second gpuq represents, 9999-12-31T23:59:59Z (the first is the Unix epoch)
MAX_EPOCH = 253_402_300_799.0
#: no duration is longer than the span of representable times
MAX_DURATION_S = MAX_EPOCH
#: nodes in one cluster (a Slurm host list may expand to at most this many names)
MAX_NODES = 100_000
#: GPUs on one node (GPU indexes run from 0 to this minus one)
MAX_GPUS_PER_NODE = 1024
#: GPUs one job may hold or ask for: every GPU of the largest cluster
MAX_JOB_GPUS = MAX_NODES * MAX_GPUS_PER_NODE
#: priorities (and priority deltas) in magnitude: the integers a float holds exactly
MAX_PRIORITY = 2**53
#: characters in a job id (a Kubernetes ``namespace/name`` is at most 317)
MAX_ID_LENGTH = 512

#: An RFC 3339 time with its UTC offset (a time without one is refused when decoded); it must
#: lie within 1970..9999 in UTC (checked by the codec: a type cannot say it).
Timestamp = Annotated[datetime, msgspec.Meta(tz=True)]
#: Counts, priorities and lengths in seconds, each within what can exist.
Priority = Annotated[int, msgspec.Meta(ge=-MAX_PRIORITY, le=MAX_PRIORITY)]
NodeGpus = Annotated[int, msgspec.Meta(ge=0, le=MAX_GPUS_PER_NODE)]
JobGpus = Annotated[int, msgspec.Meta(ge=0, le=MAX_JOB_GPUS)]
Seconds = Annotated[float, msgspec.Meta(ge=0.0, le=MAX_DURATION_S)]
GpuSeconds = Annotated[float, msgspec.Meta(ge=0.0, le=MAX_JOB_GPUS * MAX_DURATION_S)]
JobId = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_ID_LENGTH)]
#: A GPU's index on its node; None where the backend cannot tell which GPU (Kubernetes).
GpuIndex = Annotated[int, msgspec.Meta(ge=0, le=MAX_GPUS_PER_NODE - 1)] | None


def from_epoch(seconds: float) -> datetime:
    """The UTC time `seconds` after the Unix epoch (exact for whole microseconds)."""
    return datetime.fromtimestamp(seconds, UTC)


def to_epoch(moment: datetime) -> float:
    """Seconds since the Unix epoch."""
    return moment.timestamp()


def time_in_range(epoch: float) -> bool:
    """Whether `epoch` lies within 1970-01-01T00:00:00Z .. 9999-12-31T23:59:59Z (gpuq's times)."""
    return 0.0 <= epoch < MAX_EPOCH + 1.0


class JobState(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    SUSPENDED = "suspended"
    COMPLETING = "completing"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    PREEMPTED = "preempted"
    TIMEOUT = "timeout"


#: States in which a job holds its GPUs.
ACTIVE_STATES = frozenset({JobState.RUNNING, JobState.SUSPENDED, JobState.COMPLETING})
#: Jobs still in the queue: waiting or holding GPUs (not finished).
QUEUED_STATES = ACTIVE_STATES | {JobState.PENDING}


class NodeState(StrEnum):
    IDLE = "idle"
    MIXED = "mixed"
    ALLOCATED = "allocated"
    DOWN = "down"
    DRAIN = "drain"

    @property
    def takes_work(self) -> bool:
        """Down and draining nodes hold no new work."""
        return self not in (NodeState.DOWN, NodeState.DRAIN)


#: The sort key of `job_id_key`: numbers compare as numbers, the id itself settles the rest.
JobIdKey = tuple[tuple[int, str, int], ...]
_DIGITS = re.compile(r"(\d+)")
_HUGE = 10**300


def job_id_key(job_id: str) -> JobIdKey:
    """gpuq's one order of job ids, used by every tie-break and listing: numeric parts compare as
    numbers (``999 < 1000``, ``12 < 12_1 < 12_10``), text parts as text, and the id itself
    settles what is left (``007`` before ``7``), so it is a total order."""
    if job_id.isdecimal() and len(job_id) < 300:  # (isdecimal: what int() takes; '²'.isdigit() holds)
        return ((0, "", int(job_id)), (-1, job_id, 0))
    parts: list[tuple[int, str, int]] = []
    for chunk in _DIGITS.split(job_id):
        if chunk:
            if not chunk.isdecimal():
                parts.append((1, chunk, 0))
            else:  # (digits too many for int() sort after every number: the id settles the rest)
                parts.append((0, "", int(chunk) if len(chunk) < 300 else _HUGE))
    parts.append((-1, job_id, 0))
    return tuple(parts)


class JobClass(msgspec.Struct, frozen=True, gc=False):
    """A QOS, partition or PriorityClass: default priority, preemptibility and SLA.

    `may_preempt`: the classes whose jobs a job of this class may preempt, as the cluster's own
    configuration says (Slurm: the QOS's ``Preempt`` list under preempt/qos, the partitions of a
    lower ``PriorityTier`` under preempt/partition_prio; Kubernetes: none for a PriorityClass with
    ``preemptionPolicy: Never``); left unset (and unwritten) where the cluster sets no such rule
    beyond priority. The policy engine never plans a victim outside it (`JobClass.may_take`).
    """

    name: str
    priority: Priority = 0
    preemptible: bool = True
    target_p95_s: Seconds | None = None
    max_wait_s: Seconds | None = None
    may_preempt: tuple[str, ...] | msgspec.UnsetType = msgspec.UNSET

    def may_take(self, victim_class: str) -> bool:
        """Whether the cluster lets a job of this class preempt a job of `victim_class`."""
        allowed = self.may_preempt
        return not isinstance(allowed, tuple) or victim_class in allowed


class QueuePolicy(StrEnum):
    """Whom a queue manager lets a job preempt among the jobs it admitted (Kueue's ClusterQueue
    ``preemption`` policies ``Never``, ``LowerPriority``, ``LowerOrNewerEqualPriority``, ``Any``)."""

    NEVER = "never"
    LOWER_PRIORITY = "lower_priority"
    LOWER_OR_NEWER_EQUAL_PRIORITY = "lower_or_newer_equal_priority"
    ANY = "any"


class QueueQuota(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    """A queue's GPU quota in one resource flavor (Kueue: a ClusterQueue's ``nvidia.com/gpu`` in
    ``resourceGroups[].flavors[]``): `nominal` GPUs of its own, borrowing from its cohort up to
    `borrowing_limit` more (None: no limit), lending it at most `lending_limit` (None: all)."""

    flavor: str
    nominal: JobGpus = 0
    borrowing_limit: JobGpus | None = None
    lending_limit: JobGpus | None = None


class QueueAdmission(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    """A workload a queue admitted, as its queue manager counts it against the quota (Kueue: a
    Workload's ``status.admission``, whose ``podSetAssignments[].resourceUsage`` it reserves
    whether or not its pods run yet). `workload`: its pods' `Job.owner` (or a pod's id);
    `gpus`: flavor -> GPUs reserved there; `priority`, `queue_time`, `admitted_time` as on
    `Job` (Kueue: ``spec.priority``, its creation, ``QuotaReserved``)."""

    workload: str
    gpus: dict[str, JobGpus] = {}
    priority: Priority = 0
    queue_time: Timestamp | None = None
    admitted_time: Timestamp | None = None


class Queue(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    """A queue a queue manager admits jobs through, and whom it lets them preempt (Kueue: a
    ClusterQueue and its ``spec.preemption``; unset fields are Kueue's defaults, ``Never``).

    `within_queue`: jobs admitted through this same queue; `reclaim_within_cohort`: jobs admitted
    through another queue of the same `cohort` (Kueue takes those only while their queue uses more
    than its nominal quota: gpuq's policy does not check it, the prediction of Kueue's own plan,
    `gpuq.backends.kubernetes.kueueplan`, does). Priorities compared are the queue
    manager's (`Job.queue_priority`)."""

    name: str
    cohort: str | None = None
    within_queue: QueuePolicy = QueuePolicy.NEVER
    reclaim_within_cohort: QueuePolicy = QueuePolicy.NEVER
    #: its GPU quota per resource flavor, in the order the queue lists them (Kueue tries them in
    #: that order); empty: the queue has no GPU quota (or the snapshot predates quotas)
    gpu_quotas: tuple[QueueQuota, ...] = ()
    #: Kueue's ``borrowWithinCohort``: whether a job may preempt in the cohort while borrowing
    #: (``LowerPriority``, else ``Never``), and only jobs below ``maxPriorityThreshold`` + 1
    borrow_within_cohort: QueuePolicy = QueuePolicy.NEVER
    borrow_max_priority: Priority | None = None
    #: whether the queue sets a fair-sharing weight (Kueue's fair sharing: not predicted by gpuq)
    fair_sharing: bool = False
    #: the queues jobs are submitted to that lead here (Kueue's LocalQueues, ``namespace/name``)
    local_queues: tuple[str, ...] = ()
    #: what the queue manager counts as each admitted workload's usage (Kueue: its admission's
    #: reservation); empty where the backend does not read it (older snapshots): the usage is
    #: then the GPUs of the workloads' running pods
    admitted: tuple[QueueAdmission, ...] = ()
    #: the queue manager (`Job.admitted_by` of the jobs it admits)
    manager: str = "kueue"

    @property
    def preempts_nothing(self) -> bool:
        """Whether a job of this queue may preempt no job at all."""
        never = QueuePolicy.NEVER
        return self.within_queue is never and (self.cohort is None or self.reclaim_within_cohort is never)


class Node(msgspec.Struct, frozen=True, gc=False):
    name: str
    gpus: NodeGpus
    gpu_model: str | None = None
    state: NodeState = NodeState.IDLE


class Job(msgspec.Struct, frozen=True, gc=False, omit_defaults=True, rename={"job_class": "class"}):
    """One job or pod; `job_class` is the snapshot's ``class`` field.

    The sixteen v1 fields come first and have no default, so they are always written, nulls
    included; the optional extras after them (`reason` … `owner`) are written only when set,
    as the format allows. Derive changed copies with ``msgspec.structs.replace(job, …)``.
    `allocation` maps node name -> GPU indexes held there; treat it as read-only.
    `conflict`: set by a live backend that saw this job in a placement that cannot last (a
    completing job's GPUs already given to another, `gpuq.model.placement`); views show it and
    previews leave the job out.
    """

    id: JobId
    name: str
    user: str
    tenant: str
    job_class: str
    priority: Priority
    state: JobState
    submit_time: Timestamp
    eligible_time: Timestamp | None
    start_time: Timestamp | None
    end_time: Timestamp | None
    gpus: JobGpus
    allocation: dict[str, tuple[GpuIndex, ...]]
    preemption_times: tuple[Timestamp, ...]
    last_checkpoint_time: Timestamp | None
    exempt_until: Timestamp | None
    reason: str | None = None
    urgent: bool = False
    account: str | None = None
    partition: str | None = None
    qos: str | None = None
    comment: str | None = None
    checkpoint_interval_s: Seconds | None = None
    duration_s: Seconds | None = None
    conflict: str | None = None
    #: what runs the job, one key for all its pods: ``Kind/namespace/name`` on Kubernetes (a
    #: JobSet, Job, PyTorchJob…), ``Kind/name`` where names have no namespace; views group by it
    owner: str | None = None
    #: the most nodes the job may run on, where the cluster fixes it: 1 for a Kubernetes pod, the
    #: node count a Slurm job asked for; None: as many as it needs. Plans never spread it wider.
    max_nodes: Annotated[int, msgspec.Meta(ge=1, le=MAX_NODES)] | None = None
    #: the queue manager of the job (``kueue``): on a job holding GPUs, the one that admitted
    #: it (a pod of a Workload Kueue admitted); on a pending job, the one holding it back (a
    #: Workload waiting for quota), which preempts only jobs it admitted
    admitted_by: str | None = None
    #: seconds this run spent suspended by an operator (a suspension keeps `start_time`; for a
    #: job suspended now, up to the snapshot's moment): neither queue wait nor run time
    suspended_s: Seconds = 0.0
    #: the last resume of this run after a suspension; the suspension kept the run's progress,
    #: so the work a preemption would lose counts from here (or a later checkpoint)
    resumed_time: Timestamp | None = None
    #: the queue its queue manager admitted it through or holds it in (Kueue: the Workload's
    #: ClusterQueue, `Snapshot.queues`), and the priority it orders and preempts by there where
    #: that is not `priority` (Kueue: a pod's Workload's ``spec.priority``)
    queue: str | None = None
    queue_priority: Priority | None = None
    #: the resource flavor of the GPUs its queue manager admitted it with (Kueue: the
    #: Workload's ``status.admission`` flavor of ``nvidia.com/gpu``)
    queue_flavor: str | None = None
    #: when it entered its queue (Kueue: the Workload's creation, its queue order), and when the
    #: queue manager admitted it (Kueue: ``QuotaReserved``), where these are not `submit_time`
    #: and `start_time`
    queue_time: Timestamp | None = None
    admitted_time: Timestamp | None = None

    @property
    def is_pending(self) -> bool:
        return self.state is JobState.PENDING

    @property
    def holds_gpus(self) -> bool:
        return self.state in ACTIVE_STATES

    @property
    def queued_since(self) -> datetime:
        """Start of the wait: eligibility, or submission when eligibility is unknown."""
        return self.eligible_time if self.eligible_time is not None else self.submit_time

    def wait_s(self, now: float) -> float | None:
        """Queue wait: `start - eligible`; the censored age for pending jobs; None if never started."""
        if self.start_time is not None:
            return max(0.0, (self.start_time - self.queued_since).total_seconds())
        if self.state is JobState.PENDING:
            return max(0.0, now - self.queued_since.timestamp())
        return None

    def run_origin(self) -> float | None:
        """Where this run's clock starts (epoch s): its start plus the time it spent suspended,
        so that `now − run_origin()` is the time it has run (None: never started)."""
        start = self.start_time
        return None if start is None else start.timestamp() + self.suspended_s

    @property
    def loss_from(self) -> datetime | None:
        """The start of the run as far as lost work goes: the last resume, else the start."""
        return self.resumed_time if self.resumed_time is not None else self.start_time

    def preemptions_since(self, since: float, until: float) -> int:
        """Preemptions with time t in (since, until] (epoch seconds)."""
        return sum(1 for t in self.preemption_times if since < t.timestamp() <= until)

    def exempt_at(self, now: float) -> bool:
        return self.exempt_until is not None and self.exempt_until.timestamp() > now

    @property
    def nodes(self) -> tuple[str, ...]:
        return tuple(self.allocation)


class PreemptionEvent(msgspec.Struct, frozen=True, gc=False):
    """Who preempted whom, when, and the GPU-time it cost (snapshot field `preemption_events`)."""

    time: Timestamp
    victim: str
    preemptor: str | None = None
    gpus: JobGpus = 0
    gpu_seconds_lost: GpuSeconds = 0.0
    mode: str = ""
    reason: str = ""


class Unread(msgspec.Struct, frozen=True, gc=False):
    """A kind of cluster data the snapshot was built without (snapshot field `unread`): the
    backend could not read it (Kubernetes: the credentials may not list it), so the views built
    on the snapshot lack it and say so."""

    #: what was not read, in the backend's own terms ("nodes", "workloads.kueue.x-k8s.io")
    resource: str
    #: why, in a word or two ("forbidden")
    reason: str
    #: what the snapshot shows instead ("GPU totals from pods only")
    effect: str


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The state of one cluster at one instant."""

    cluster: str
    backend: str
    taken_at: datetime
    classes: tuple[JobClass, ...] = ()
    nodes: tuple[Node, ...] = ()
    jobs: tuple[Job, ...] = ()
    preemption_events: tuple[PreemptionEvent, ...] = ()
    #: the queue manager's queues and their preemption rules (Kueue's ClusterQueues)
    queues: tuple[Queue, ...] = ()
    #: what the backend could not read for this snapshot (a view built on it says so)
    unread: tuple[Unread, ...] = ()
    # Derived indexes (`derived`), built on first use. The snapshot never changes, so they never
    # go stale.
    _derived: dict[Hashable, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def now(self) -> float:
        """`taken_at` in epoch seconds: the instant every rule judges this snapshot at."""
        return self.derived("model.now", self.taken_at.timestamp)

    def job(self, job_id: str) -> Job | None:
        """Look a job up by id."""
        by_id: dict[str, Job] | None = self._derived.get("model.by_id")  # (a lookup: called per job)
        if by_id is None:
            by_id = self.derived("model.by_id", lambda: {j.id: j for j in self.jobs})
        return by_id.get(job_id)

    def _placement_index(self) -> tuple[dict[str, int], dict[str, tuple[Job, ...]]]:
        return self.derived("model.placement", self._build_placement)

    def _build_placement(self) -> tuple[dict[str, int], dict[str, tuple[Job, ...]]]:
        used: dict[str, int] = {}
        running: dict[str, list[Job]] = {}
        active, run = ACTIVE_STATES, JobState.RUNNING
        for job in self.jobs:
            state = job.state
            if state in active:
                # A job in a conflicting placement keeps its GPUs counted as used but is never a
                # victim: preempting it would free GPUs another job holds too.
                victim = state is run and job.conflict is None
                for node, indexes in job.allocation.items():
                    used[node] = used.get(node, 0) + len(indexes)
                    if victim:
                        running.setdefault(node, []).append(job)
        return used, {n: tuple(js) for n, js in running.items()}

    def derived(self, key: Hashable, build: Callable[[], T]) -> T:
        """A value computed from this snapshot (an index, this module's or another layer's), built
        once. `key` must say everything the value depends on besides the snapshot itself."""
        try:
            return cast(T, self._derived[key])
        except KeyError:
            value = self._derived[key] = build()
            return value

    def used_gpus(self) -> dict[str, int]:
        """GPUs held per node by running, suspended and completing jobs (do not mutate)."""
        return self._placement_index()[0]

    def running_on(self) -> dict[str, tuple[Job, ...]]:
        """Running jobs per node they occupy, those marked `conflict` left out (do not mutate)."""
        return self._placement_index()[1]

    def queue(self, name: str) -> Queue | None:
        return next((q for q in self.queues if q.name == name), None)

    def job_class(self, name: str) -> JobClass | None:
        for cls in self.classes:
            if cls.name == name:
                return cls
        return None

    @property
    def total_gpus(self) -> int:
        return sum(n.gpus for n in self.nodes)


class PreviewRequest(msgspec.Struct, frozen=True):
    """What a preview asks about: a pending job's own request (`job_id`) or a what-if.

    `priority` None means the class's default priority; `queued_since` (epoch seconds) lets the
    request age like a job waiting since then. `hints` are for the native scheduler's own
    prediction and mean something only to the backend that reads them (Slurm: ``partition``,
    ``qos``); gpuq's policy ignores them. `priority_note`: set where the native scheduler gave
    `priority` (Slurm's multifactor priority of a what-if, a held job's on release), how it was
    found; a preview says it first.
    """

    gpus: int
    priority: int | None = None
    job_class: str | None = None
    tenant: str | None = None
    urgent: bool = False
    job_id: str | None = None
    queued_since: float | None = None
    hints: Mapping[str, str] = msgspec.field(default_factory=dict)
    priority_note: str | None = None
    #: placement rules of the job asked about (`Job.max_nodes`, `Job.admitted_by`, `Job.queue`)
    max_nodes: int | None = None
    admitted_by: str | None = None
    queue: str | None = None
