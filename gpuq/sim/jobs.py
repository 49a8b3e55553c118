"""The simulator's mutable job record and its JSON-able form.

`SimJob` is deliberately a plain slotted class, not a dataclass: the event loop touches a few of
its attributes millions of times, and the snapshot turns it into an immutable `model.Job`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Final

from gpuq.sim.workload import JobSpec

__all__ = [
    "CANCELLED",
    "COMPLETED",
    "FUTURE",
    "PENDING",
    "RUNNING",
    "SUSPENDED",
    "SimJob",
    "id_key",
]

# Job states inside the simulator; the visible ones equal `model.JobState` values.
# (Final: the compiled simulator uses the strings themselves instead of looking the names up)
FUTURE: Final = "future"  # not submitted yet: invisible in snapshots
PENDING: Final = "pending"
RUNNING: Final = "running"
SUSPENDED: Final = "suspended"  # preempted by suspend: waits in the queue with all progress kept
COMPLETED: Final = "completed"
CANCELLED: Final = "cancelled"


def id_key(job_id: str) -> tuple[int, str]:
    """A total order on ids that is numeric for numeric ids ("999" < "1000")."""
    return (len(job_id), job_id)


class SimJob:
    """One job's whole life in the simulator.

    Progress is kept as `done` (work saved at the start of the current run) plus the time since
    `run_start`; checkpoints are not events but computed on demand from the run start and the
    interval, so they cost nothing in the event loop.
    """

    __slots__ = (
        "id",
        "idkey",
        "name",
        "user",
        "tenant",
        "cls",
        "priority",
        "urgent",
        "submit",
        "qs",
        "gpus",
        "duration",
        "ckpt",
        "state",
        "done",
        "run_start",
        "end",
        "alloc",
        "preempt_times",
        "last_ckpt",
        "exempt_until",
        "epoch",
        "qver",
        "hver",
        "aging",
        "gpu_s",
        "lost_s",
        "drain_until",
        "claim",
        "claimed_by",
        "rep",
        "prot",
        "place",
        "listed",
    )

    def __init__(self, spec: JobSpec) -> None:
        self.id = spec.id
        self.idkey = id_key(spec.id)
        self.name = spec.name
        self.user = spec.user
        self.tenant = spec.tenant
        self.cls = spec.job_class
        self.priority = spec.priority
        self.urgent = False
        self.submit = float(spec.submit_time)
        self.qs = self.submit  # queued since: submission, or the last requeue
        self.gpus = spec.gpus
        self.duration = float(spec.duration_s)
        self.ckpt = spec.checkpoint_interval_s  # set = the job reports checkpoints at this interval
        self.state = FUTURE
        self.done = 0.0
        self.run_start: float | None = None
        self.end: float | None = None
        self.alloc: dict[str, list[int]] = {}
        self.preempt_times: list[float] = []
        self.last_ckpt: float | None = None
        self.exempt_until: float | None = None
        self.epoch = 0  # bumped on every start/stop: stale finish and drain events are skipped
        self.qver = 0  # bumped on every queue (re-)entry and exit: stale queue entries are skipped
        self.hver = 0  # bumped whenever its victim numbers or its run change (engine-model cache key)
        self.aging = False  # past its class's max_wait while queued
        self.gpu_s = 0.0  # GPU-seconds held (closed runs)
        self.lost_s = 0.0  # GPU-seconds of work lost to preemption
        self.drain_until: float | None = None  # graceful preemption: signalled, saving until then
        self.claim: list[str] = []  # victims draining for this job
        self.claimed_by: str | None = None
        # Victim numbers of the current run, fixed at its start (`Simulator._arm`); not saved.
        self.rep = 0.0  # effective priority while running
        self.prot = 0.0  # when its protections (exemption, min runtime, 24 h cap) end; 0 = none
        self.place: tuple[tuple[int, int], ...] = ()  # (node index, GPUs there) of the current run
        self.listed = False  # counted as a possible victim at `rep` (`Simulator._list`)

    def last_checkpoint(self, now: float) -> float | None:
        """The last checkpoint the job reported by `now` (None for jobs that report none)."""
        ckpt = self.ckpt
        if ckpt is None:
            return None
        start = self.run_start
        if start is not None and self.state == RUNNING and ckpt > 0:
            saved = (now - start) // ckpt * ckpt
            if saved > 0:
                return start + saved
        return self.last_ckpt

    _FIELDS: ClassVar[tuple[str, ...]] = (
        "id", "name", "user", "tenant", "cls", "priority", "urgent", "submit", "qs", "gpus", "duration", "ckpt",
        "state", "done", "run_start", "end", "alloc", "preempt_times", "last_ckpt", "exempt_until", "epoch",
        "qver", "hver", "aging", "gpu_s", "lost_s", "drain_until", "claim", "claimed_by",
    )  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        out = {name: getattr(self, name) for name in self._FIELDS}
        out["alloc"] = {node: list(idx) for node, idx in self.alloc.items()}
        out["preempt_times"] = list(self.preempt_times)
        out["claim"] = list(self.claim)
        return out

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> SimJob:
        job = cls(JobSpec(str(raw["id"]), 0.0, 0.0))  # (a compiled class has no bare __new__)
        for name in cls._FIELDS:
            setattr(job, name, raw[name])
        job.idkey = id_key(job.id)
        job.rep = job.prot = 0.0
        job.place = ()
        job.alloc = {str(node): [int(i) for i in idx] for node, idx in raw["alloc"].items()}
        job.preempt_times = [float(t) for t in raw["preempt_times"]]
        job.claim = [str(v) for v in raw["claim"]]
        return job
