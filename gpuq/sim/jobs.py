"""The simulator's mutable job record, its JSON-able form, and what a preemption does to it.

`SimJob` is deliberately a plain slotted class, not a dataclass: the event loop touches a few of
its attributes millions of times, and the snapshot turns it into an immutable `model.Job`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Final

from gpuq.model import JobIdKey, job_id_key
from gpuq.policy.config import Mode
from gpuq.policy.kernel import gpu_seconds_lost_of
from gpuq.sim.workload import JobSpec

__all__ = [
    "first_tick_past",
    "QUANTUM",
    "CANCELLED",
    "COMPLETED",
    "FUTURE",
    "NO_GPUS",
    "PENDING",
    "Preemption",
    "RUNNING",
    "RepCount",
    "SUSPENDED",
    "SimJob",
    "id_key",
    "on_grid",
    "preemption",
    "stopped_progress",
    "strictly_after",
    "with_checkpoint_costs",
]

# Job states inside the simulator; the visible ones equal `model.JobState` values.
# (Final: the compiled simulator uses the strings themselves instead of looking the names up)
FUTURE: Final = "future"  # not submitted yet: invisible in snapshots
PENDING: Final = "pending"
RUNNING: Final = "running"
SUSPENDED: Final = "suspended"  # all progress kept: waits in the queue, or (`Simulator.held`) on its GPUs
COMPLETED: Final = "completed"
CANCELLED: Final = "cancelled"


def id_key(job_id: str) -> JobIdKey:
    """gpuq's one job-id order (`model.job_id_key`), computed once per job. An id of digits alone
    (every trace's and the demo's) gets the kernel's key here, in compiled code: a call into the
    interpreted kernel per submitted job cost more than the rest of creating the job. Up to 18
    ASCII digits, the number is worked out digit by digit in machine integers (`int()` and
    `str.isdecimal`, looked up by name, cost more than the rest). tests/sim/test_fastrules.py
    checks this copy against the kernel."""
    if 0 < len(job_id) < 19:
        value = 0
        for ch in job_id:
            digit = ord(ch) - 48
            if digit < 0 or digit > 9:
                break
            value = value * 10 + digit
        else:
            return ((0, "", value), (-1, job_id, 0))
    if job_id.isdecimal() and len(job_id) < 300:
        return ((0, "", int(job_id)), (-1, job_id, 0))
    return job_id_key(job_id)


#: The simulator's clock ticks in whole microseconds: the model's datetimes hold exactly that,
#: so a snapshot of the simulator (what the policy engine and a preview see) carries the very
#: numbers the event loop decided on.
QUANTUM: Final = 1e-6


def on_grid(t: float) -> float:
    """The first tick at or after `t` (an event is never put before the moment it stands for:
    a job that starts to age at t must find itself aging when its event comes)."""
    tick = math.ceil(t * 1e6)
    while tick / 1e6 < t:  # (t * 1e6 may round a tick low)
        tick += 1
    while (tick - 1) / 1e6 >= t:  # ... or high
        tick -= 1
    return tick / 1e6


def strictly_after(t: float) -> float:
    """The first tick later than `t`: for moments that must come after an instant (a priority
    that has to pass another's, a recheck that must not repeat this instant)."""
    tick = math.floor(t * 1e6)
    while tick / 1e6 <= t:  # (t * 1e6 may round a tick low)
        tick += 1
    return tick / 1e6


#: The most ticks `first_tick_past` steps from its estimate (a straight line's arithmetic is a
#: few ticks off at most; a priority too large for a tick to move it can take more: then a later
#: look settles it).
_STEPS: Final = 64


def first_tick_past(when: float, now: float, past: Callable[[float], bool]) -> float:
    """The first tick after `now` at which `past` holds (a priority line has passed another's or
    a threshold), found from `when`, a tick after a straight line's moment: the rule's own
    arithmetic settles the tick, so the moment is the same whenever it is worked out."""
    for _ in range(_STEPS):  # back while the tick before is past too ...
        before = (round(when * 1e6) - 1) / 1e6
        if before <= now or not past(before):
            break
        when = before
    for _ in range(_STEPS):  # ... forward until past
        if past(when):
            break
        when = strictly_after(when)
    return when


#: the allocation of every job that holds no GPUs, one shared dict: a job's allocation is
#: replaced whole, never changed in place, so no job needs an empty dict of its own
NO_GPUS: Final[dict[str, list[int]]] = {}


class RepCount:
    """How many possible victims run at one effective priority (`victims.VictimIndex`). Each
    counted job holds its own, so that taking it off the count touches no dictionary (a float
    key costs a hash and a comparison of two float objects)."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0


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
        "counted",
        "first_start",
        "save_s",
        "restore_s",
        "overhead_s",
        "began",
        "susp",
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
        self.submit = on_grid(float(spec.submit_time))
        self.qs = self.submit  # queued since: submission, or the last requeue
        self.gpus = spec.gpus
        self.duration = float(spec.duration_s)
        self.ckpt = spec.checkpoint_interval_s  # set = the job reports checkpoints at this interval
        self.state = FUTURE
        self.done = 0.0
        self.run_start: float | None = None
        self.end: float | None = None
        self.alloc = NO_GPUS  # (replaced whole, never changed in place: `Gpus.take` gives a new one)
        self.preempt_times: tuple[float, ...] = ()  # (a new tuple per preemption: few jobs have any)
        self.last_ckpt: float | None = None
        self.exempt_until: float | None = None
        self.epoch = 0  # bumped on every start/stop: stale finish and drain events are skipped
        self.qver = 0  # bumped on every queue (re-)entry and exit: stale queue entries are skipped
        self.hver = 0  # bumped whenever its victim numbers or its run change (engine-model cache key)
        self.aging = False  # past its class's max_wait while queued
        self.gpu_s = 0.0  # GPU-seconds held (closed runs)
        self.lost_s = 0.0  # GPU-seconds of work lost to preemption
        self.drain_until: float | None = None  # graceful preemption: signalled, saving until then
        self.claim: tuple[str, ...] = ()  # victims draining for this job
        self.claimed_by: str | None = None
        # Victim numbers of the current run, fixed at its start (`Simulator.arm`); not saved.
        self.rep = 0.0  # effective priority while running
        self.prot = 0.0  # when its protections (exemption, min runtime, 24 h cap) end; 0 = none
        self.place: tuple[tuple[int, int], ...] = ()  # (node index, GPUs there) of the current run
        # the count it is in as a possible victim at `rep` (`victims.VictimIndex.add`); None: no victim
        self.counted: RepCount | None = None
        self.first_start: float | None = None  # the start of its first run (its queue wait ends)
        # Checkpoint costs of the current run (`Simulator.set_running`; 0.0: free, the common case):
        # each save takes `save_s` after every `ckpt` seconds of work; a restart from saved
        # progress first restores for `restore_s`.
        self.save_s = 0.0
        self.restore_s = 0.0
        self.overhead_s = 0.0  # GPU-seconds spent saving and restoring (closed runs)
        # An operator's suspension (`actions`) keeps the run: `run_start` restarts at the resume
        # (progress and loss count from there), while the run as shown began at `began` and
        # has spent `susp` seconds suspended (closed suspensions): its run time is
        # now − began − susp, and its queue wait ended at `began`.
        self.began = 0.0
        self.susp = 0.0

    def last_checkpoint(self, now: float) -> float | None:
        """The last checkpoint the job reported by `now` (None for jobs that report none).

        With checkpoint costs a run's checkpoints complete at `start + restore + k × (ckpt +
        save)`, and the end of its restore counts as one (the job stands at saved progress);
        a run that has saved nothing yet answers its start (everything since is lost), so the
        kernel's loss never falls back to `ran mod interval` for a save still in progress."""
        ckpt = self.ckpt
        if ckpt is None:
            return None
        start = self.run_start
        if start is not None and self.state == RUNNING and ckpt > 0:
            if self.save_s == 0.0 and self.restore_s == 0.0:
                saved = (now - start) // ckpt * ckpt
                if saved > 0:
                    return on_grid(start + saved)
            else:
                base = start + self.restore_s
                if base <= now:
                    cycles = (now - base) // (ckpt + self.save_s)
                    if cycles > 0:
                        return on_grid(base + cycles * (ckpt + self.save_s))
                    if self.restore_s > 0:
                        return on_grid(base)
                return start if self.last_ckpt is None else self.last_ckpt
        return self.last_ckpt

    def progress(self, now: float) -> tuple[float, float, float]:
        """The current run up to `now` as (seconds of work done, seconds of checkpoint overhead
        completed — its restore and its finished saves —, seconds of work its checkpoints saved).
        Without checkpoint costs all of the run is work. A restore or a save cut short is
        neither work nor overhead."""
        start: float = self.run_start  # type: ignore[assignment]
        if self.save_s == 0.0 and self.restore_s == 0.0:
            return now - start, 0.0, 0.0
        base = start + self.restore_s
        if now < base:
            return 0.0, 0.0, 0.0
        after = now - base
        ckpt = self.ckpt or 0.0
        if ckpt <= 0:
            return after, self.restore_s, 0.0
        cycles = after // (ckpt + self.save_s)
        within = after - cycles * (ckpt + self.save_s)  # into the current cycle: work, then a save
        saved = cycles * ckpt
        return saved + (within if within < ckpt else ckpt), self.restore_s + cycles * self.save_s, saved

    _FIELDS: ClassVar[tuple[str, ...]] = (
        "id", "name", "user", "tenant", "cls", "priority", "urgent", "submit", "qs", "gpus", "duration", "ckpt",
        "state", "done", "run_start", "end", "alloc", "preempt_times", "last_ckpt", "exempt_until", "epoch",
        "qver", "hver", "aging", "gpu_s", "lost_s", "drain_until", "claim", "claimed_by",
    )  # fmt: skip
    #: saved as JSON lists and objects, and read back by `from_dict` into their own types
    _CONVERTED: ClassVar[frozenset[str]] = frozenset({"alloc", "preempt_times", "claim"})
    #: saved too, with the value a state saved before they existed stands for
    _NEWER_FIELDS: ClassVar[tuple[tuple[str, Any], ...]] = (
        ("first_start", None), ("save_s", 0.0), ("restore_s", 0.0), ("overhead_s", 0.0), ("began", None),
        ("susp", 0.0),
    )  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        out = {name: getattr(self, name) for name in self._FIELDS}
        for name, _ in self._NEWER_FIELDS:
            out[name] = getattr(self, name)
        out["alloc"] = {node: list(idx) for node, idx in self.alloc.items()}
        out["preempt_times"] = list(self.preempt_times)
        out["claim"] = list(self.claim)
        return out

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> SimJob:
        job = cls(JobSpec(str(raw["id"]), 0.0, 0.0))  # (a compiled class has no bare __new__)
        for name in cls._FIELDS:
            if name not in cls._CONVERTED:
                setattr(job, name, raw[name])
        for name, default in cls._NEWER_FIELDS:
            setattr(job, name, raw.get(name, default))
        job.idkey = id_key(job.id)
        if raw.get("began") is None:  # (saved before suspensions kept the start: the run's own)
            job.began = 0.0 if job.run_start is None else float(job.run_start)
        job.rep = job.prot = 0.0
        job.place = ()
        job.alloc = {str(node): [int(i) for i in idx] for node, idx in raw["alloc"].items()}
        job.preempt_times = tuple([float(t) for t in raw["preempt_times"]])
        job.claim = tuple([str(v) for v in raw["claim"]])
        return job


# The modes told apart below, as plain module names: in compiled code `Mode.X` is a lookup on the
# enum class each time.
_GRACEFUL, _CANCEL, _SUSPEND = Mode.GRACEFUL, Mode.CANCEL, Mode.SUSPEND


class Preemption:
    """What preempting a running job now does to it: `state` after (RUNNING while it saves
    through a grace period), GPU-seconds `lost`, seconds of work `kept` (added to `done`), its
    new last `checkpoint` (None: unchanged), the end of its grace period (None: none), and the
    seconds of this run's checkpoint `overhead` (saves and restore; 0.0 without their costs)."""

    __slots__ = ("state", "lost", "kept", "checkpoint", "grace_until", "overhead")

    def __init__(
        self, state: str, lost: float, kept: float, checkpoint: float | None, grace_until: float | None,
        overhead: float = 0.0,
    ) -> None:  # fmt: skip
        self.state = state
        self.lost = lost
        self.kept = kept
        self.checkpoint = checkpoint
        self.grace_until = grace_until
        self.overhead = overhead


def preemption(job: SimJob, mode: Mode, now: float, grace: float, default_interval: float) -> Preemption:
    """The effect of preempting running `job` at `now` in `mode` (the simulator's `_preempt` and
    the operator's dry run both ask this), with the policy's grace period and default
    checkpoint interval.

    Graceful: signalled now, it keeps its GPUs while it saves, then is requeued without loss (no
    grace period: saved at the signal). Suspend: paused with all progress kept. Cancel: all its
    work is lost, earlier runs' included. Requeue: it keeps the work up to its last checkpoint and
    loses what `rules.gpu_seconds_lost_of` counts.
    """
    start: float = job.run_start  # type: ignore[assignment]
    elapsed = now - start
    if mode is _GRACEFUL and grace > 0:
        return Preemption(RUNNING, 0.0, 0.0, None, on_grid(now + grace))
    if job.save_s != 0.0 or job.restore_s != 0.0:
        return _costly_preemption(job, mode, now)
    if mode is _CANCEL:
        return Preemption(CANCELLED, job.gpus * (job.done + elapsed), 0.0, None, None)
    if mode is _SUSPEND:
        return Preemption(SUSPENDED, 0.0, elapsed, None, None)
    if mode is _GRACEFUL:
        return Preemption(PENDING, 0.0, elapsed, None if job.ckpt is None else now, None)
    checkpoint = job.last_checkpoint(now)
    interval = job.ckpt if job.ckpt is not None else default_interval
    lost = gpu_seconds_lost_of(job.gpus, start, checkpoint, interval, now)
    # Kept: the run up to where the kernel starts counting the loss.
    if checkpoint is not None:
        since = checkpoint if checkpoint > start else start
        kept = since - start
        return Preemption(PENDING, lost, kept, since if kept > 0 else None, None)
    ran = elapsed if elapsed > 0 else 0.0
    # (a job that reports checkpoints has reported none this run: it keeps nothing)
    kept = ran - ran % interval if interval > 0 and job.ckpt is None else 0.0
    return Preemption(PENDING, lost, kept, None, None)


def with_checkpoint_costs(job: SimJob, remaining: float, save: float, restore: float) -> float:
    """Set a run's checkpoint costs (`SimJob.save_s`, `restore_s`) and return how long it
    takes to do `remaining` seconds of work: its restore, then a save after each interval of
    work (none when the work ends on an interval: the job ends instead)."""
    job.save_s = save
    job.restore_s = restore
    interval: float = job.ckpt  # type: ignore[assignment]
    saves = remaining // interval
    if saves * interval >= remaining:
        saves -= 1
    return remaining + restore + (saves if saves > 0 else 0.0) * save


def stopped_progress(job: SimJob, now: float, final_save: bool) -> tuple[float, float, float]:
    """A run with checkpoint costs stopped at `now` keeping all of its progress (suspended, or
    requeued after a graceful save): (seconds of work kept, seconds of overhead, GPU-seconds
    lost). `final_save`: the job saves once more before it stops (graceful), which costs a
    save taken out of its last work. A restore cut short is lost."""
    start = job.run_start
    assert start is not None  # (a stopped run had its start)
    ran = now - start
    if now < start + job.restore_s:
        return 0.0, 0.0, job.gpus * ran
    work, _, _ = job.progress(now)
    overhead = ran - work  # (a save in progress too: the job's state is kept all the same)
    if final_save:
        save = job.save_s if job.save_s < work else work
        work -= save
        overhead += save
    return work, overhead, 0.0


def _costly_preemption(job: SimJob, mode: Mode, now: float) -> Preemption:
    """`preemption` for a run with checkpoint costs (`SimJob.progress`): the kernel still counts
    the loss, from the last completed checkpoint (`SimJob.last_checkpoint`)."""
    start: float = job.run_start  # type: ignore[assignment]
    if mode is _SUSPEND or mode is _GRACEFUL:  # (graceful here: no grace period, saved at the signal)
        kept, overhead, lost = stopped_progress(job, now, final_save=False)
        state = SUSPENDED if mode is _SUSPEND else PENDING
        checkpoint = None if mode is _SUSPEND or lost else now
        return Preemption(state, lost, kept, checkpoint, None, overhead)
    _, overhead, saved = job.progress(now)
    if mode is _CANCEL:  # (its earlier runs' work is lost too; their overhead was counted then)
        return Preemption(CANCELLED, job.gpus * (job.done + (now - start) - overhead), 0.0, None, None, overhead)
    checkpoint = job.last_checkpoint(now)
    lost = gpu_seconds_lost_of(job.gpus, start, checkpoint, job.ckpt or 0.0, now)
    return Preemption(PENDING, lost, saved, checkpoint if checkpoint is not None and checkpoint > start else None,
                      None, overhead)  # fmt: skip
