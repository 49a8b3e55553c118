"""The immutable domain model: exactly `gpuq.snapshot/v1` (see README, "Snapshot format").

Every backend turns its world into these objects; policy, SLA maths and the simulator are pure
functions over them. Times are float epoch seconds (UTC); `snapshot_io` converts to and from JSON.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any, NamedTuple, TypeVar, cast

from gpuq.gcpause import gc_paused

T = TypeVar("T")

__all__ = [
    "FORMAT",
    "ACTIVE_STATES",
    "QUEUED_STATES",
    "NO_ALLOCATION",
    "DAY_S",
    "Job",
    "JobClass",
    "JobState",
    "Node",
    "NodeState",
    "PreemptionEvent",
    "Snapshot",
]

FORMAT = "gpuq.snapshot/v1"
DAY_S = 86400.0


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


@dataclass(frozen=True, slots=True)
class JobClass:
    """A QOS, partition or PriorityClass: default priority, preemptibility and SLA."""

    name: str
    priority: int = 0
    preemptible: bool = True
    target_p95_s: float | None = None
    max_wait_s: float | None = None


@dataclass(frozen=True, slots=True)
class Node:
    name: str
    gpus: int
    gpu_model: str | None = None
    state: NodeState = NodeState.IDLE


NO_ALLOCATION: Mapping[str, tuple[int | None, ...]] = MappingProxyType({})


class Job(NamedTuple):
    """One job or pod. `job_class` is the snapshot's `class` field.

    A NamedTuple rather than a frozen dataclass: just as immutable, and about ten times cheaper
    to build, which matters when a snapshot holds 200,000 jobs. Derive changed copies with
    `job._replace(field=value)`.

    Optional fields beyond the v1 minimum (`reason`, `urgent`, `account`, `partition`, `qos`,
    `comment`, `checkpoint_interval_s`, `duration_s`) are written only when set and ignored by
    consumers that do not know them, as the format allows.
    """

    id: str
    name: str
    user: str
    tenant: str
    job_class: str
    priority: int
    state: JobState
    submit_time: float
    gpus: int
    eligible_time: float | None = None
    start_time: float | None = None
    end_time: float | None = None
    # Node name -> GPU indexes held there (None where the backend cannot tell which GPU).
    # Treat it as read-only; the shared empty default is never mutated.
    allocation: Mapping[str, tuple[int | None, ...]] = NO_ALLOCATION
    preemption_times: tuple[float, ...] = ()
    last_checkpoint_time: float | None = None
    exempt_until: float | None = None
    reason: str | None = None
    urgent: bool = False
    account: str | None = None
    partition: str | None = None
    qos: str | None = None
    comment: str | None = None
    checkpoint_interval_s: float | None = None
    duration_s: float | None = None

    @property
    def is_pending(self) -> bool:
        return self.state is JobState.PENDING

    @property
    def holds_gpus(self) -> bool:
        return self.state in ACTIVE_STATES

    @property
    def queued_since(self) -> float:
        """Start of the wait: eligibility, or submission when eligibility is unknown."""
        return self.eligible_time if self.eligible_time is not None else self.submit_time

    def wait_s(self, now: float) -> float | None:
        """Queue wait: `start - eligible`; the censored age for pending jobs; None if never started."""
        if self.start_time is not None:
            return max(0.0, self.start_time - self.queued_since)
        if self.is_pending:
            return max(0.0, now - self.queued_since)
        return None

    def preemptions_since(self, since: float, until: float) -> int:
        """Preemptions with time t in (since, until]."""
        return sum(1 for t in self.preemption_times if since < t <= until)

    def exempt_at(self, now: float) -> bool:
        return self.exempt_until is not None and self.exempt_until > now

    @property
    def nodes(self) -> tuple[str, ...]:
        return tuple(self.allocation)


@dataclass(frozen=True, slots=True)
class PreemptionEvent:
    """Who preempted whom, when, and the GPU-time it cost (snapshot field `preemption_events`)."""

    time: float
    victim: str
    preemptor: str | None
    gpus: int
    gpu_seconds_lost: float
    mode: str
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The state of one cluster at one instant."""

    cluster: str
    backend: str
    taken_at: float
    classes: tuple[JobClass, ...] = ()
    nodes: tuple[Node, ...] = ()
    jobs: tuple[Job, ...] = ()
    preemption_events: tuple[PreemptionEvent, ...] = ()
    # Derived indexes (`derived`), built on first use. The snapshot never changes, so they never
    # go stale.
    _derived: dict[Hashable, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

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
                for node, indexes in job.allocation.items():
                    used[node] = used.get(node, 0) + len(indexes)
                    if state is run:
                        running.setdefault(node, []).append(job)
        return used, {n: tuple(js) for n, js in running.items()}

    def derived(self, key: Hashable, build: Callable[[], T]) -> T:
        """A value computed from this snapshot (an index, this module's or another layer's), built
        once. `key` must say everything the value depends on besides the snapshot itself."""
        try:
            return cast(T, self._derived[key])
        except KeyError:
            with gc_paused(keep=True):
                value = self._derived[key] = build()
            return value

    def used_gpus(self) -> dict[str, int]:
        """GPUs held per node by running, suspended and completing jobs (do not mutate)."""
        return self._placement_index()[0]

    def running_on(self) -> dict[str, tuple[Job, ...]]:
        """Running jobs per node they occupy (do not mutate)."""
        return self._placement_index()[1]

    def job_class(self, name: str) -> JobClass | None:
        for cls in self.classes:
            if cls.name == name:
                return cls
        return None

    @property
    def total_gpus(self) -> int:
        return sum(n.gpus for n in self.nodes)
