"""A discrete-event simulator of a shared GPU cluster that schedules with the policy engine.

Pure: no I/O and no clock; time only moves when `run_until` is called. Events sit in one heap
keyed by (exact time, sequence number), so equal times resolve in a fixed order and a seed always
gives the same run. After every batch of same-time events one scheduling pass starts jobs in
queue order (effective priority desc, queued-since, id); a blocked head may preempt through the
policy engine; lower jobs that fit the free GPUs then backfill.

The hot loop stays cheap: victims are only looked for when a preemption is possible at all (the
head outranks the cheapest running victim by more than Δ, and enough unprotected GPUs exist on
one node), and a "no" is remembered until the running set or the head changes, or until the
next moment a protection (min runtime, exemption, 24 h cap) expires or aging closes the gap —
those moments are exact events too. Single-node requests are decided on plain numbers by the
engine's own rule (`gpuq.sim.victims`; `fast_path`), multi-node requests by the policy engine
itself; with `check_fast_path` (the tests) every decision is compared with the engine's.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from gpuq.errors import NotFound, Refused
from gpuq.gcpause import gc_paused
from gpuq.model import DAY_S, Job, JobClass, JobState, Node, NodeState, PreemptionEvent, Snapshot
from gpuq.policy.config import DEFAULT_POLICY, Mode, Policy
from gpuq.policy.cover import best_single_node
from gpuq.sim.cluster import Gpus
from gpuq.sim.jobs import CANCELLED, COMPLETED, FUTURE, PENDING, RUNNING, SUSPENDED, SimJob
from gpuq.sim.planner import Planner, engine_planner
from gpuq.sim.queue import PendingQueue
from gpuq.sim.workload import DEFAULT_CLASSES, ClusterSpec, JobSpec, WorkloadStream
from gpuq.timefmt import format_time

__all__ = ["STATE_VERSION", "Simulator"]

STATE_VERSION: Final = 1

# The modes `_preempt` tells apart, as plain module names: in the compiled loop `Mode.X` is a
# lookup on the enum class each time.
_GRACEFUL, _CANCEL, _SUSPEND = Mode.GRACEFUL, Mode.CANCEL, Mode.SUSPEND

# Event kinds (small ints: compared only for equality in the loop; Final, so the compiled loop
# uses the numbers themselves instead of looking the names up).
_ARRIVE: Final = 0
_FINISH: Final = 1
_AGE: Final = 2
_DRAIN: Final = 3
_RECHECK: Final = 4
_GENERATE: Final = 5
_KIND_NAMES = ("arrive", "finish", "age", "drain", "recheck", "generate")

_Event = tuple[float, int, int, "SimJob | None", int]
_INF: Final = math.inf


def _chosen(cost: float) -> str:
    return f"chosen (cost {cost:.0f})"  # the engine's own wording


#: Why a victim was chosen: the engine's sentence, or (fast paths) its cost, phrased only when read.
_Why = str | float
#: Victims for a blocked head, each with why, and the nodes the head should start on.
_Choice = tuple[list[tuple[SimJob, _Why]], tuple[str, ...]]
#: One preemption as logged: time, victim, preemptor, GPUs, GPU-seconds lost, mode, and the
#: reason — a sentence, or the chosen cost of a policy preemption (`_reason` phrases it).
_LogEntry = tuple[float, str, "str | None", int, float, Mode, _Why]


#: Two costs this far apart (GPU-seconds) compare the same rounded to 6 decimals as the engine
#: rounds them (rounding moves each by at most 0.5e-6).
_NEAR: Final = 2e-6


def _single_key(cost: float, job: SimJob) -> tuple[float, float, float, str]:
    """The engine's order of single victims: cost to 6 decimals, priority, later start, id (its
    last tie-break, the node, never decides: no two jobs share an id)."""
    return (round(cost, 6), job.rep, -job.run_start, job.id)  # type: ignore[operator]


# The orders of the engine's multi-node plan (`engine._plan_multi`), on (cost, job) pairs.
def _per_gpu_order(item: tuple[float, SimJob]) -> tuple[float, int, str]:
    cost, job = item
    return (cost / job.gpus, -job.gpus, job.id)


def _dearest_first(item: tuple[float, SimJob]) -> tuple[float, str]:
    return (-item[0], item[1].id)


def _cheapest_first(item: tuple[float, SimJob]) -> tuple[float, str]:
    return (item[0], item[1].id)


def _emptiest_first(node: tuple[int, str]) -> tuple[int, str]:
    return (-node[0], node[1])


def _for_job(preemptor: str, detail: str) -> str:
    """A policy preemption's reason: for which job, and the engine's word on the victim."""
    return f"preempted for job {preemptor}: {detail}" if detail else f"preempted for job {preemptor}"


def _reason(preemptor: str | None, why: _Why) -> str:
    if isinstance(why, str):
        return why
    return _for_job(str(preemptor), _chosen(why))


class _ClassInfo:
    __slots__ = ("preemptible", "max_wait", "rate")

    def __init__(self, preemptible: bool, max_wait: float | None, rate: float) -> None:
        self.preemptible = preemptible
        self.max_wait = max_wait
        self.rate = rate if max_wait is not None else 0.0


class Simulator:
    """The simulated cluster. Feed it jobs (`submit`) or a `WorkloadStream`, then `run_until(t)`."""

    def __init__(
        self,
        *,
        policy: Policy = DEFAULT_POLICY,
        cluster: ClusterSpec | None = None,
        classes: Sequence[JobClass] = DEFAULT_CLASSES,
        start: float = 0.0,
        name: str = "demo",
        planner: Planner | None = None,
        stream: WorkloadStream | None = None,
        max_pending: int | None = None,
        history_limit: int = 2000,
        event_limit: int = 2000,
        trace: bool = False,
    ) -> None:
        self.name = name
        self.spec = cluster or ClusterSpec()
        self.classes = tuple(classes)
        self.t0 = start
        self.now = start
        self.max_pending = max_pending
        self.trace: list[tuple[float, str, str, str | None]] | None = [] if trace else None
        self._planner: Planner = planner or engine_planner
        self.stream = stream
        self._gpus = Gpus(self.spec.node_names(), self.spec.gpus_per_node)
        self._nodes = tuple(Node(n, self.spec.gpus_per_node, self.spec.gpu_model) for n in self._gpus.names)
        self._events: list[_Event] = []
        self._seq = 0
        self._jobs: dict[str, SimJob] = {}  # every job not finished yet, future ones included
        self._running: dict[str, SimJob] = {}
        # Possible victims (running, preemptible, not saving) counted per effective priority, and
        # those priorities in a heap: the lowest one is all the quick checks need.
        self._victim_count: dict[float, int] = {}  # a key is in the heap exactly while it is here
        self._victim_reps: list[float] = []
        self.history: deque[SimJob] = deque(maxlen=history_limit)
        self._preemption_log: deque[_LogEntry] = deque(maxlen=event_limit)
        self._rver = 0  # bumped whenever the running set or a victim's protection changes
        self._blocked: tuple[str, int, int] | None = None  # (head id, qver, rver) the engine said no to
        self._recheck_ver = 0
        self._recheck_at = _INF
        self.idle_gpu_s = 0.0
        self.closed_gpu_s = 0.0  # GPU-seconds of runs that have ended
        self.events_processed = 0
        self.plans = 0
        self.preemptions = 0
        self.dropped = 0
        self._ckpt_running = 0  # running jobs that report checkpoints
        self._mcache: dict[str, tuple[tuple[Any, ...], Job]] = {}
        #: decide one-GPU requests without building a snapshot (same choice as the engine)
        self.fast_path = True
        #: test hook: also ask the engine on every fast-path decision and compare
        self.check_fast_path = False
        self.set_policy(policy)
        self._queue = PendingQueue(self._qep)
        if stream is not None:
            self._push(start, _GENERATE, None, 0)

    # ---- policy and priorities -------------------------------------------------------------

    def set_policy(self, policy: Policy) -> None:
        """Use `policy` from now on (the demo backend takes it from each CLI call)."""
        if getattr(self, "policy", None) == policy:
            return
        self.policy = policy
        # The numbers the event loop reads, copied once: a read on the (frozen, interpreted)
        # Policy costs a dictionary lookup, and the loop makes several per preemption.
        self._urgent = float(policy.urgent_priority)
        self._delta = policy.delta
        self._mode = policy.mode
        self._grace = policy.grace_period_s
        self._min_runtime = policy.min_runtime_s
        self._cap = policy.max_preemptions_per_day
        self._default_ckpt = policy.default_checkpoint_interval_s
        self._lw = policy.lost_work_weight
        self._pw = policy.priority_weight
        self._gated = self._min_runtime > 0 or self._cap > 0  # time-limited protections
        self._cinfo: dict[str, _ClassInfo] = {}
        for cls in self.classes:
            self._class_info(cls.name)
        self._blocked = None
        if hasattr(self, "_queue"):
            # Priorities, aging and preemptibility may all have changed: re-sort everything.
            for job in list(self._queue.jobs.values()):
                self._enqueue(job)
            for job in self._running.values():
                self._arm(job)  # (uncounts it at its old priority, counts it at its new one)
            self._rver += 1
            self._schedule()

    def _class_info(self, name: str) -> _ClassInfo:
        info = self._cinfo.get(name)
        if info is None:
            resolved = self.policy.resolve_class(self._class(name), name)
            info = _ClassInfo(resolved.preemptible, resolved.max_wait_s, self.policy.aging_rate(name))
            self._cinfo[name] = info
        return info

    def _class(self, name: str) -> JobClass | None:
        for cls in self.classes:
            if cls.name == name:
                return cls
        return None

    def _qep(self, job: SimJob, now: float) -> float:
        """Effective priority of a queued job: urgency, else base plus aging past max_wait."""
        if job.urgent:
            return self._urgent
        if job.aging:
            info = self._cinfo[job.cls]
            return job.priority + info.rate * (now - job.qs - info.max_wait) / 60.0  # type: ignore[operator]
        return float(job.priority)

    def _rep(self, job: SimJob) -> float:
        """Effective priority of a running job: urgency, else base plus the aging it had earned
        when it started (`rules.effective_priority`); constant for the whole run."""
        if job.urgent:
            return self._urgent
        info = self._cinfo[job.cls]
        if info.max_wait is not None and info.rate > 0 and job.run_start is not None:
            overdue = job.run_start - job.qs - info.max_wait
            if overdue > 0:
                return job.priority + info.rate * overdue / 60.0
        return float(job.priority)

    def _arm(self, job: SimJob, renew: bool = True) -> None:
        """Fix a running job's victim numbers for this run, and list it as a possible victim.

        Both are constant while it runs: its effective priority (`_rep`) and the moment its
        protections end (`_protection_end`; the 24 h cap window only loses entries during a run).
        Called at start and again whenever a bump, an exemption or a new policy changes them;
        `renew=False` keeps the job's version `hver` (restoring saved state).
        """
        self._unlist(job)  # (counted under its old priority, if at all)
        info = self._cinfo.get(job.cls) or self._class_info(job.cls)
        # (the common case, without aging, urgency or protections, needs no arithmetic)
        job.rep = float(job.priority) if info.max_wait is None and not job.urgent else self._rep(job)
        job.prot = self._protection_end(job, self.now) if self._gated or job.exempt_until is not None else 0.0
        if renew:
            job.hver += 1
        if job.drain_until is None and info.preemptible:
            self._list(job)

    def _list(self, job: SimJob) -> None:
        """Count a running job as a possible victim at its effective priority."""
        count = self._victim_count
        rep = job.rep
        n = count.get(rep)
        if n is None:
            count[rep] = 1
            heapq.heappush(self._victim_reps, rep)
            if len(count) > 4 * len(self._running) + 64:  # drop priorities nobody holds any more
                self._victim_count = count = {r: c for r, c in count.items() if c}
                self._victim_reps = list(count)
                heapq.heapify(self._victim_reps)
        else:
            count[rep] = n + 1
        job.listed = True

    def _unlist(self, job: SimJob) -> None:
        """No longer a possible victim (stopped, saving, or about to be counted anew)."""
        if job.listed:
            self._victim_count[job.rep] -= 1
            job.listed = False

    def _lowest_victim(self) -> float | None:
        """The lowest effective priority among possible victims (None: there are none)."""
        reps = self._victim_reps
        count = self._victim_count
        while reps:
            rep = reps[0]
            if count[rep]:
                return rep
            del count[heapq.heappop(reps)]
        return None

    def effective_priority(self, job_id: str) -> float:
        job = self._visible(job_id)
        if job.state in (PENDING, SUSPENDED):
            return self._qep(job, self.now)
        return job.rep if job.state == RUNNING else self._rep(job)

    # ---- events ----------------------------------------------------------------------------

    def _push(self, when: float, kind: int, job: SimJob | None, ver: int) -> None:
        self._seq += 1
        heapq.heappush(self._events, (when, self._seq, kind, job, ver))

    def submit(self, spec: JobSpec | Iterable[JobSpec]) -> None:
        """Schedule the arrival of jobs at their submit times (at least `now`). All or nothing: a
        duplicate id (with a known job or within the batch) refuses the whole batch."""
        specs = [spec] if isinstance(spec, JobSpec) else list(spec)
        jobs = self._jobs
        seen: set[str] = set()
        for s in specs:
            if s.id in jobs or s.id in seen:
                raise ValueError(f"duplicate job id {s.id!r}")
            seen.add(s.id)
        arrivals: list[_Event] = []
        with gc_paused():  # (many new objects, no cycles among them)
            for s in specs:
                job = SimJob(s)
                if job.submit < self.now:
                    job.submit = job.qs = self.now
                jobs[job.id] = job
                self._seq += 1
                arrivals.append((job.submit, self._seq, _ARRIVE, job, 0))
            # One heapify for the lot (linear) instead of a push each.
            self._events.extend(arrivals)
            heapq.heapify(self._events)

    def next_event_time(self) -> float | None:
        return self._events[0][0] if self._events else None

    def run(self, max_time: float = _INF) -> int:
        """Run until no events are left (a finite workload) or `max_time`."""
        if self.stream is not None and max_time == _INF:
            raise ValueError("a simulator fed by an endless stream needs a max_time")
        return self.run_until(max_time)

    def run_until(self, until: float) -> int:
        """Process every event at or before `until`, then stand at `until`; returns events processed.

        One scheduling pass follows each instant's batch of events. Stale events (a finish of a
        job preempted since, a superseded recheck) are dropped without moving the clock. The
        loop makes no reference cycles, so the cyclic garbage collector is paused meanwhile: it
        would only walk the heaps' many short-lived entries again and again (~5%).
        """
        with gc_paused():
            return self._run_until(until)

    def _run_until(self, until: float) -> int:
        events = self._events
        gpus = self._gpus
        pop = heapq.heappop
        processed = 0
        dirty = False
        while events or dirty:
            if not events:
                dirty = False
                self._schedule()  # may start jobs, so add finish events
                continue
            t, _, kind, job, ver = events[0]
            if kind in (_FINISH, _DRAIN):
                if job.epoch != ver or job.state != RUNNING:  # type: ignore[union-attr]
                    pop(events)
                    continue
            elif kind == _AGE:
                if job.qver != ver:  # type: ignore[union-attr]
                    pop(events)
                    continue
            elif kind == _RECHECK and ver != self._recheck_ver:
                pop(events)
                continue
            if t != self.now or t > until:
                if dirty:  # leaving this instant: schedule first (it may add events at this instant)
                    dirty = False
                    self._schedule()
                    continue
                if t > until:
                    break
                self.idle_gpu_s += gpus.total_free * (t - self.now)
                self.now = t
            pop(events)
            processed += 1
            dirty = True
            if kind == _FINISH:
                self._finish(job)  # type: ignore[arg-type]
            elif kind == _ARRIVE:
                self._arrive(job)  # type: ignore[arg-type]
            elif kind == _AGE:
                self._enqueue(job)  # type: ignore[arg-type]
                self._blocked = None  # the order among waiting jobs starts to move
            elif kind == _DRAIN:
                self._drained(job)  # type: ignore[arg-type]
            elif kind == _RECHECK:
                self._recheck_at = _INF
                self._blocked = None
            else:
                self._generate()
        if until > self.now and until < _INF:
            self.idle_gpu_s += gpus.total_free * (until - self.now)
            self.now = until
        self.events_processed += processed
        return processed

    def _arrive(self, job: SimJob) -> None:
        if self.max_pending is not None and len(self._queue) >= self.max_pending:
            # Users stop submitting into a hopeless queue; keeps a long-running demo bounded.
            del self._jobs[job.id]
            self.dropped += 1
            return
        job.state = PENDING
        self._enqueue(job)

    def _generate(self) -> None:
        assert self.stream is not None
        when, batch = self.stream.next_batch(self.now)
        for spec in batch:
            job = SimJob(spec)
            self._jobs[job.id] = job
            self._push(when, _ARRIVE, job, 0)
        self._push(when, _GENERATE, None, 0)

    def _enqueue(self, job: SimJob, renew: bool = True) -> None:
        """Put a waiting job in the right queue group; schedule the moment it starts to age."""
        info = self._cinfo.get(job.cls) or self._class_info(job.cls)
        if job.urgent or info.max_wait is None or info.rate <= 0:
            job.aging = False
            self._queue.push(job, self._qep(job, self.now), 0.0, 0.0, renew)
            return
        ages_at = job.qs + info.max_wait
        if self.now >= ages_at:
            job.aging = True
            self._queue.push(job, float(job.priority), info.rate, info.max_wait, renew)
        else:
            job.aging = False
            self._queue.push(job, float(job.priority), 0.0, 0.0, renew)
            if renew:
                self._push(ages_at, _AGE, job, job.qver)

    def _recheck(self, when: float) -> None:
        when = max(when, math.nextafter(self.now, _INF))  # never at this instant again: no livelock
        if when < self._recheck_at:
            self._recheck_at = when
            self._recheck_ver += 1
            self._push(when, _RECHECK, None, self._recheck_ver)

    # ---- starting and stopping -------------------------------------------------------------

    def _schedule(self) -> None:
        queue = self._queue
        if not queue.jobs:
            return
        gpus = self._gpus
        now = self.now
        while True:
            head = queue.best(now)
            if head is None:
                return
            placement = gpus.place(head.gpus)
            if placement is not None:
                self._start(head, placement)
                continue
            key = (head.id, head.qver, self._rver)
            if head.claim or key == self._blocked:
                break  # waiting for graceful victims, or known to be stuck as things are
            if self._outranks_nobody(head):
                self._blocked = key  # the common "no" on a busy cluster, without the full check
                break
            if not self._try_preempt(head):
                break
        # Backfill: lower jobs that fit the free GPUs now (the head may still preempt them later).
        per_node = gpus.per_node
        while gpus.total_free > 0 and queue.jobs:
            job = queue.best(now, gpus.max_free(), gpus.total_free, per_node)
            if job is None:
                return
            placement = gpus.place(job.gpus)
            if placement is None:  # pragma: no cover - best() only offers jobs that fit
                return
            self._start(job, placement)

    def _start(self, job: SimJob, placement: list[tuple[int, list[int]]]) -> None:
        now = self.now
        self._queue.remove(job)
        job.alloc = self._gpus.take(placement)
        if len(placement) == 1:  # (the common case, without building a list)
            node_index, indexes = placement[0]
            job.place = ((node_index, len(indexes)),)
        else:
            job.place = tuple([(i, len(idx)) for i, idx in placement])
        job.state = RUNNING
        job.run_start = now
        job.drain_until = None
        job.epoch += 1
        if job.claim:
            for victim_id in job.claim:
                victim = self._jobs.get(victim_id)
                if victim is not None:
                    victim.claimed_by = None
            job.claim = []
        self._push(now + (job.duration - job.done), _FINISH, job, job.epoch)
        self._running[job.id] = job  # insertion order = start order (the fast path relies on it)
        if job.ckpt is not None:
            self._ckpt_running += 1
        self._arm(job)
        self._rver += 1
        if self.trace is not None:
            self.trace.append((now, "start", job.id, None))

    def _release(self, job: SimJob) -> None:
        """Free a job's GPUs and close its run."""
        now = self.now
        self._gpus.release(job.alloc)
        used = job.gpus * (now - job.run_start)  # type: ignore[operator]
        job.gpu_s += used
        self.closed_gpu_s += used
        job.alloc = {}
        self._unlist(job)
        job.drain_until = None
        job.epoch += 1
        job.hver += 1
        del self._running[job.id]
        if self._mcache:  # (filled only when the engine plans)
            self._mcache.pop(job.id, None)
        if job.ckpt is not None:
            self._ckpt_running -= 1
        self._rver += 1
        if job.claimed_by is not None:
            claimant = self._jobs.get(job.claimed_by)
            if claimant is not None and job.id in claimant.claim:
                claimant.claim.remove(job.id)
            job.claimed_by = None

    def _retire(self, job: SimJob, state: str) -> None:
        job.state = state
        job.end = self.now
        del self._jobs[job.id]
        self.history.append(job)

    def _finish(self, job: SimJob) -> None:
        job.last_ckpt = job.last_checkpoint(self.now)
        self._release(job)
        job.done = job.duration
        self._retire(job, COMPLETED)
        if self.trace is not None:
            self.trace.append((self.now, "finish", job.id, None))

    def _requeue(self, job: SimJob, state: str = PENDING) -> None:
        job.state = state
        job.qs = self.now  # waiting again from now (Slurm resets eligibility on requeue too)
        self._enqueue(job)

    def _drained(self, job: SimJob) -> None:
        """End of a graceful preemption's grace period: the job saved everything, then stops."""
        job.done += self.now - job.run_start  # type: ignore[operator]
        if job.ckpt is not None:
            job.last_ckpt = self.now
        self._release(job)
        self._requeue(job)

    # ---- preemption ------------------------------------------------------------------------

    def _kept_on_requeue(self, job: SimJob, elapsed: float) -> float:
        """Work (seconds) a requeued job keeps: up to its last checkpoint (policy-model.md)."""
        if job.ckpt is not None and job.ckpt > 0:
            return elapsed // job.ckpt * job.ckpt
        interval = self._default_ckpt
        if interval > 0:
            return elapsed - elapsed % interval
        return 0.0

    def _preempt(self, job: SimJob, mode: Mode, by: SimJob | None, why: _Why) -> float:
        """Preempt a running job now; returns the GPU-seconds of work lost. `why` as logged:
        a sentence, or the chosen cost of a policy preemption."""
        now = self.now
        elapsed = now - job.run_start  # type: ignore[operator]
        job.preempt_times.append(now)
        self.preemptions += 1
        if self.trace is not None:
            self.trace.append((now, "preempt", job.id, by.id if by else None))
        grace = self._grace
        lost = 0.0
        if mode is _GRACEFUL and grace > 0:
            # Signalled now; it keeps its GPUs while it saves, then is requeued without loss.
            job.drain_until = now + grace
            job.hver += 1
            self._unlist(job)
            self._rver += 1
            self._push(now + grace, _DRAIN, job, job.epoch)
            if by is not None:
                job.claimed_by = by.id
                by.claim.append(job.id)
        elif mode is _CANCEL:
            lost = job.gpus * (job.done + elapsed)
            job.lost_s += lost
            self._release(job)
            self._retire(job, CANCELLED)
        elif mode is _SUSPEND or mode is _GRACEFUL:
            # Suspend: paused with all progress kept; its GPUs are lent out until it resumes.
            # Graceful with no grace period: saved at the signal, nothing lost.
            job.done += elapsed
            if job.ckpt is not None and mode is _GRACEFUL:
                job.last_ckpt = now
            self._release(job)
            self._requeue(job, SUSPENDED if mode is _SUSPEND else PENDING)
        else:
            kept = self._kept_on_requeue(job, elapsed)
            lost = job.gpus * (elapsed - kept)
            job.lost_s += lost
            job.done += kept
            if job.ckpt is not None and kept > 0:
                job.last_ckpt = job.run_start + kept  # type: ignore[operator]
            self._release(job)
            self._requeue(job)
        self._preemption_log.append((now, job.id, None if by is None else by.id, job.gpus, lost, mode, why))
        return lost

    def _protection_end(self, job: SimJob, now: float) -> float:
        """When a running victim stops being protected (0.0 = not protected now)."""
        until = 0.0
        if job.exempt_until is not None and job.exempt_until > now:
            until = job.exempt_until
        min_rt = self._min_runtime
        if min_rt > 0 and now - job.run_start < min_rt:  # type: ignore[operator]
            until = max(until, job.run_start + min_rt)  # type: ignore[operator]
        cap = self._cap
        if cap > 0 and len(job.preempt_times) >= cap:
            window = [t for t in job.preempt_times if now - DAY_S < t <= now]
            if len(window) >= cap:
                window.sort()
                until = max(until, window[len(window) - cap] + DAY_S)
        return until

    def _lost(self, job: SimJob, now: float) -> float:
        """GPU-seconds lost if `job` were preempted now (rules.gpu_seconds_lost, on a SimJob)."""
        start: float = job.run_start  # type: ignore[assignment]
        ran = max(0.0, now - start)
        checkpoint = job.last_checkpoint(now)
        if checkpoint is not None:
            return job.gpus * max(0.0, now - max(start, checkpoint))
        interval = job.ckpt if job.ckpt is not None else self._default_ckpt
        if interval > 0:
            return job.gpus * (ran % interval)
        return job.gpus * ran

    def _requester_ep(self, head: SimJob, now: float) -> float:
        """The head's priority as the engine counts it: urgency only within the tenant's quota."""
        if head.urgent and self.policy.tenant_urgent_quota(head.tenant) > 0:
            held = sum(j.gpus for j in self._running.values() if j.urgent and j.tenant == head.tenant)
            if self.policy.exceeds_urgent_quota(head.tenant, held, head.gpus):
                info = self._cinfo[head.cls]
                ep = float(head.priority)
                if info.max_wait is not None:
                    overdue = now - head.qs - info.max_wait
                    if overdue > 0:
                        ep += self.policy.aging_rate(head.cls) * overdue / 60.0
                return ep
        return self._qep(head, now)

    def _scan(self, head_ep: float, head_rate: float, now: float) -> tuple[list[SimJob], float]:
        """Running jobs the head may preempt now; and the next time that may change.

        Mirrors `rules.protection` (exemption, class, min runtime, 24 h cap, Δ gap) on the numbers
        `_arm` fixed at each job's start.
        """
        delta = self._delta
        eligible: list[SimJob] = []
        unlock = _INF
        cinfo = self._cinfo
        for job in self._running.values():
            if job.drain_until is not None or not cinfo[job.cls].preemptible:
                continue
            job_ep = job.rep
            if not head_ep - job_ep > delta:
                if head_rate > 0:
                    unlock = min(unlock, self._crossing(head_ep, head_rate, job_ep + delta, now))
                continue
            if job.prot > now:
                if job.prot < unlock:
                    unlock = job.prot
                continue
            eligible.append(job)
        return eligible, unlock

    def _cheapest_single(self, head_ep: float, now: float) -> tuple[SimJob, float] | None:
        """The engine's choice for a one-GPU request when no GPU is free: the single eligible
        victim with the least (cost, priority, -start, id, node) — any larger set costs more.

        Running jobs are kept in start order; when lost work is simply GPUs × run time, a job
        started earlier than the best found so far cannot be cheaper, so the scan stops early.
        """
        delta = self._delta
        lw, pw = self._lw, self._pw
        early = pw == 0 and lw > 0 and self._ckpt_running == 0 and self._default_ckpt <= 0
        cinfo = self._cinfo
        best: SimJob | None = None
        best_cost = 0.0
        for job in reversed(self._running.values()):
            start: float = job.run_start  # type: ignore[assignment]
            if early and best is not None and lw * (now - start) > best_cost + _NEAR:
                break
            job_ep = job.rep
            if not head_ep - job_ep > delta or job.prot > now or job.drain_until is not None:
                continue
            if not cinfo[job.cls].preemptible:
                continue
            # (without checkpoints anywhere, lost work is just GPUs × run time)
            cost = lw * (job.gpus * max(0.0, now - start) if early else self._lost(job, now))
            if pw:
                cost += pw * job_ep
            # Costs further apart than _NEAR order the same rounded (rounding is slow); nearer
            # ones are ordered by the engine's whole key.
            if best is None or cost < best_cost - _NEAR or (
                cost <= best_cost + _NEAR and _single_key(cost, job) < _single_key(best_cost, best)
            ):
                best, best_cost = job, cost
        return None if best is None else (best, best_cost)

    def _decide(self, head: SimJob, now: float) -> tuple[_Choice | None, float]:
        """Victims for a blocked head (None when there are none now) and when to ask again."""
        head_ep = self._requester_ep(head, now)
        head_rate = self._cinfo[head.cls].rate if head.aging and not head.urgent else 0.0
        lowest = self._lowest_victim()
        if lowest is None:
            return None, _INF
        if not head_ep - lowest > self._delta:  # nobody running is low enough
            return None, self._crossing(head_ep, head_rate, lowest + self._delta, now)
        gpus = self._gpus
        need = head.gpus
        if need == 1 and self.fast_path:
            found = self._cheapest_single(head_ep, now)
            if found is not None:
                victim, cost = found
                single: _Choice = ([(victim, cost)], (min(victim.alloc),))
                if self.check_fast_path:
                    self._check_against_engine(head, now, single)
                return single, _INF
        eligible, unlock = self._scan(head_ep, head_rate, now)
        if need > gpus.per_node:
            if gpus.total_free + sum(j.gpus for j in eligible) < need:
                return None, unlock
            if self.fast_path:
                return self._greedy_multi_node(head, eligible, now), unlock
            nodes = list(range(len(gpus.names)))
        else:
            nodes, per_node = self._candidate_nodes(eligible, need, now)
            if not nodes:
                return None, unlock
            if self.fast_path:
                return self._exact_single_node(head, nodes, per_node, now), unlock
        self.plans += 1
        snapshot = self._planner_snapshot(head, now, nodes)
        planned = self._planner(snapshot, self.policy, self._model_job(head, now), now)
        choice: _Choice | None = None
        if planned is not None:
            running = self._running
            choice = ([(running[v], _for_job(head.id, planned.details.get(v, ""))) for v in planned.victims
                       if v in running], planned.nodes)
        if self.check_fast_path and len(nodes) < len(gpus.names):
            self._check_against_engine(head, now, choice)
        return choice, unlock

    def _candidate_nodes(
        self, eligible: list[SimJob], need_gpus: int, now: float
    ) -> tuple[list[int], dict[int, list[tuple[float, int, SimJob]]]]:
        """Nodes that can hold the optimum: enough eligible GPUs, and a cost lower bound (the
        engine's own: missing GPUs × cheapest cost per GPU) no higher than the best greedy plan.
        Also, per node, its eligible victims as (cost, GPUs on the node, job)."""
        gpus = self._gpus
        free_n = gpus.free_n
        extra = [0] * len(free_n)
        for job in eligible:
            for i, n in job.place:
                extra[i] += n
        usable = {i for i, n in enumerate(extra) if n and free_n[i] + n >= need_gpus}
        if not usable:
            return [], {}
        lw, pw = self._lw, self._pw
        per_node: dict[int, list[tuple[float, int, SimJob]]] = {}
        for job in eligible:
            cost = -1.0
            for i, n in job.place:
                if i in usable:
                    if cost < 0:  # costs only for jobs that matter
                        cost = lw * self._lost(job, now)
                        if pw:
                            cost += pw * job.rep
                    per_node.setdefault(i, []).append((cost, n, job))
        bounds: list[tuple[float, float, int]] = []
        for i, items in per_node.items():
            need = need_gpus - free_n[i]
            items.sort(key=lambda item: item[0] / item[1])
            lower = need * items[0][0] / items[0][1]
            upper, freed = 0.0, 0
            for cost, n, _ in items:
                if freed >= need:
                    break
                upper += cost
                freed += n
            bounds.append((lower, upper, i))
        best_upper = min(upper for _, upper, _ in bounds)
        return sorted(i for lower, _, i in bounds if lower <= best_upper + 1e-5), per_node

    def _exact_single_node(
        self, head: SimJob, nodes: list[int], per_node: dict[int, list[tuple[float, int, SimJob]]], now: float
    ) -> _Choice | None:
        """The engine's single-node choice computed on plain numbers (see `gpuq.sim.victims`)."""
        gpus = self._gpus
        found = best_single_node(
            (gpus.names[i], head.gpus - gpus.free_n[i],
             [(cost, job.id, n, job.rep, job.run_start)  # type: ignore[misc]
              for cost, n, job in per_node[i]])
            for i in nodes
        )
        choice: _Choice | None = None
        if found is not None:
            items, node = found
            items.sort(key=lambda item: (item[0], item[1]))  # the engine lists victims by cost, then id
            running = self._running
            choice = ([(running[item[1]], item[0]) for item in items], (node,))
        if self.check_fast_path:
            self._check_against_engine(head, now, choice)
        return choice

    def _greedy_multi_node(self, head: SimJob, eligible: list[SimJob], now: float) -> _Choice:
        """The engine's multi-node plan (`engine._plan_multi`) computed on plain numbers; the
        caller has made sure the eligible victims free enough GPUs.

        Eligible victims in order of cost per GPU (more GPUs first, then id) until enough GPUs
        are free; then the ones that turned out redundant dropped, most expensive first; the
        job goes to the nodes with the most free GPUs. Every node takes work in the simulator,
        so a victim frees all its GPUs.
        """
        gpus = self._gpus
        need = head.gpus - gpus.total_free
        lw, pw = self._lw, self._pw
        costed: list[tuple[float, SimJob]] = []
        for job in eligible:
            cost = lw * self._lost(job, now)
            if pw:
                cost += pw * job.rep
            costed.append((cost, job))
        costed.sort(key=_per_gpu_order)
        picked: list[tuple[float, SimJob]] = []
        freed = 0
        for item in costed:
            if freed >= need:
                break
            picked.append(item)
            freed += item[1].gpus
        for item in sorted(picked, key=_dearest_first):
            if freed - item[1].gpus >= need:
                picked.remove(item)
                freed -= item[1].gpus
        free_after = list(gpus.free_n)
        for _, job in picked:
            for i, n in job.place:
                free_after[i] += n
        nodes: list[str] = []
        total = 0
        for count, name in sorted(zip(free_after, gpus.names, strict=True), key=_emptiest_first):
            if total >= head.gpus or count == 0:
                break
            nodes.append(name)
            total += count
        picked.sort(key=_cheapest_first)
        choice: _Choice = ([(job, cost) for cost, job in picked], tuple(sorted(nodes)))
        if self.check_fast_path:
            self._check_against_engine(head, now, choice)
        return choice

    @staticmethod
    def _crossing(head_ep: float, head_rate: float, threshold: float, now: float) -> float:
        """First time an aging head's priority exceeds `threshold` (inf when it does not age)."""
        if head_rate <= 0:
            return _INF
        when = now + (threshold - head_ep) * 60.0 / head_rate
        return math.nextafter(max(when, now), _INF)

    def _outranks_nobody(self, head: SimJob) -> bool:
        """True when no running job is a victim for `head` and none can become one by time alone
        (the head does not age, no queued job ages past it): a cheap, certain "no"."""
        if head.urgent or head.aging or self._queue.aging_groups:
            return False
        lowest = self._lowest_victim()
        return lowest is None or not head.priority - lowest > self._delta

    def _try_preempt(self, head: SimJob) -> bool:
        """Preempt for a blocked head as the policy engine decides; True when the head started."""
        if head.claim:
            return False  # its victims are still saving (graceful)
        key = (head.id, head.qver, self._rver)
        if key == self._blocked:
            return False
        now = self.now
        choice, unlock = self._decide(head, now)
        if choice is None and self.check_fast_path:
            self._check_against_engine(head, now, None)  # "nothing to preempt" must agree too
        if choice is not None and self._execute(head, choice):
            return True
        self._blocked = (head.id, head.qver, self._rver)
        if head.claim:
            return False  # victims are saving (graceful): their stop is the next moment that matters
        unlock = min(unlock, self._queue.next_overtake(head, now, self._rate_now))
        if unlock < _INF:
            self._recheck(unlock)
        return False

    def _execute(self, head: SimJob, choice: _Choice) -> bool:
        victims, nodes = choice
        mode = self._mode
        for victim, why in victims:
            self._preempt(victim, mode, head, why)
        placement = self._gpus.place(head.gpus, nodes)
        if placement is None:
            return False
        self._start(head, placement)
        return True

    def _check_against_engine(self, head: SimJob, now: float, choice: _Choice | None) -> None:
        """Test hook: shortcuts (fast path, fewer nodes) must choose exactly what the engine
        chooses on the whole cluster."""
        snapshot = self._planner_snapshot(head, now, range(len(self._gpus.names)))
        engine = engine_planner(snapshot, self.policy, self._model_job(head, now), now)
        got = None if choice is None else ({job.id for job, _ in choice[0]}, choice[1])
        want = None if engine is None else (set(engine.victims), engine.nodes)
        if got != want:
            raise AssertionError(f"fast path chose {got}, the engine {want} for job {head.id} at {now}")

    def _rate_now(self, job: SimJob) -> float:
        return self._cinfo[job.cls].rate if job.aging and not job.urgent else 0.0

    # ---- model objects ---------------------------------------------------------------------

    def _model_job(self, job: SimJob, now: float, reason: str | None = None, exempt: float | None = None) -> Job:
        # A suspended job here has lent its GPUs out and holds none, so the model (where
        # "suspended" means holding GPUs) sees it as pending; the reason says it is suspended.
        state = PENDING if job.state == SUSPENDED else job.state
        running = state == RUNNING
        return Job(
            id=job.id,
            name=job.name,
            user=job.user,
            tenant=job.tenant,
            job_class=job.cls,
            priority=job.priority,
            state=JobState(state),
            submit_time=job.submit,
            gpus=job.gpus,
            eligible_time=job.qs,
            start_time=job.run_start if running or state in (COMPLETED, CANCELLED) else None,
            end_time=job.end,
            allocation={node: tuple(idx) for node, idx in job.alloc.items()},
            preemption_times=tuple(job.preempt_times),
            last_checkpoint_time=job.last_checkpoint(now),
            exempt_until=job.exempt_until if exempt is None else exempt,
            reason=reason,
            urgent=job.urgent,
            checkpoint_interval_s=job.ckpt,
            duration_s=job.duration,
        )

    def _node_objects(self) -> tuple[Node, ...]:
        per_node = self._gpus.per_node
        out = []
        for node, free in zip(self._nodes, self._gpus.free_n, strict=True):
            state = NodeState.IDLE if free == per_node else NodeState.ALLOCATED if free == 0 else NodeState.MIXED
            out.append(Node(node.name, node.gpus, node.gpu_model, state))
        return tuple(out)

    def _running_model(self, job: SimJob, now: float) -> Job:
        """A running job as the engine sees it, reused while nothing about it changes."""
        checkpoint = job.last_checkpoint(now)
        key = (job.epoch, job.hver, checkpoint, job.exempt_until, job.drain_until, job.priority, job.urgent,
               len(job.preempt_times))
        cached = self._mcache.get(job.id)
        if cached is not None and cached[0] == key:
            return cached[1]
        # A job already saving for a graceful preemption is not a victim twice.
        model = self._model_job(job, now, exempt=job.drain_until)
        self._mcache[job.id] = (key, model)
        return model

    def _planner_snapshot(self, head: SimJob, now: float, nodes: Iterable[int]) -> Snapshot:
        """What the engine needs: the candidate nodes, the jobs holding GPUs there, the asking job.

        Leaving out nodes that cannot hold the optimum (see `_candidate_nodes`) does not change
        the engine's choice, only its work.
        """
        all_nodes = self._node_objects()
        chosen = [all_nodes[i] for i in nodes]
        names = {n.name for n in chosen}
        if len(chosen) == len(all_nodes):
            running: Iterable[SimJob] = self._running.values()
        else:
            running = [j for j in self._running.values() if not names.isdisjoint(j.alloc)]
        jobs = [self._running_model(j, now) for j in running]
        jobs.append(self._model_job(head, now))
        return Snapshot(self.name, "demo", now, self.classes, tuple(chosen), tuple(jobs))

    def snapshot(self) -> Snapshot:
        """The cluster now: queue in scheduling order, running jobs, recent finished jobs."""
        now = self.now
        jobs: list[Job] = []
        for job in sorted(self._running.values(), key=lambda j: (j.run_start, j.idkey)):
            reason = None
            if job.drain_until is not None:
                reason = f"Preempting: saving until the grace period ends at {format_time(job.drain_until)}"
            jobs.append(self._model_job(job, now, reason))
        for position, job in enumerate(self._queue.ordered(now)):
            if job.claim:
                reason = "Preempting: waiting for preempted jobs to save and stop"
            elif position == 0:
                reason = "Resources"
            else:
                reason = "Priority"
            if job.state == SUSPENDED:
                reason = f"Suspended (preempted, resumes with its progress): {reason}"
            jobs.append(self._model_job(job, now, reason))
        jobs.extend(self._model_job(job, now) for job in self.history)
        return Snapshot(
            cluster=self.name,
            backend="demo",
            taken_at=now,
            classes=self.classes,
            nodes=self._node_objects(),
            jobs=tuple(jobs),
            preemption_events=self.preemption_events,
        )

    # ---- operator actions ------------------------------------------------------------------

    def _visible(self, job_id: str) -> SimJob:
        job = self._jobs.get(job_id)
        if job is not None and job.state != FUTURE:
            return job
        for old in self.history:
            if old.id == job_id:
                return old
        raise NotFound(f"no job {job_id} on cluster {self.name}")

    def snapshot_job(self, job_id: str) -> Job:
        """One visible job as the snapshot shows it (NotFound for unknown ids)."""
        return self._model_job(self._visible(job_id), self.now)

    def _live(self, job_id: str, action: str) -> SimJob:
        job = self._visible(job_id)
        if job.state in (COMPLETED, CANCELLED):
            raise Refused(f"job {job_id} has already ended ({job.state}); there is nothing to {action}")
        return job

    def bump(
        self, job_id: str, *, priority: int | None = None, urgent: bool = False, dry_run: bool = False
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Set the base priority (which also clears manual urgency) and/or mark the job urgent."""
        if priority is None and not urgent:
            raise Refused("bump needs a new priority or --urgent")
        job = self._live(job_id, "bump")
        new_priority = job.priority if priority is None else priority
        new_urgent = urgent or (job.urgent and priority is None)
        before: dict[str, Any] = {"priority": job.priority, "urgent": job.urgent}
        after: dict[str, Any] = {"priority": new_priority, "urgent": new_urgent}
        if dry_run or after == before:
            return before, after
        job.priority = new_priority
        job.urgent = new_urgent
        self._changed(job)
        return before, after

    def exempt(
        self, job_id: str, *, until: float | None, dry_run: bool = False
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Protect a job from preemption until `until` (epoch s); None lifts the exemption."""
        job = self._live(job_id, "exempt")
        if until is not None and until <= self.now:
            raise Refused(
                f"exemption end {format_time(until)} is not in the future (cluster time {format_time(self.now)})"
            )
        before = {"exempt_until": job.exempt_until}
        after = {"exempt_until": until}
        if not dry_run and after != before:
            job.exempt_until = until
            self._changed(job)
        return before, after

    def preempt(self, job_id: str, *, mode: Mode, dry_run: bool = False) -> tuple[dict[str, Any], dict[str, Any]]:
        """Preempt a running job now (an operator action: no preemptor, policy protections not applied)."""
        job = self._visible(job_id)
        if job.state != RUNNING:
            raise Refused(f"job {job_id} is {job.state}, not running; only running jobs can be preempted")
        if job.drain_until is not None:
            raise Refused(f"job {job_id} is already being preempted (saving until {format_time(job.drain_until)})")
        before = {"state": RUNNING, "allocation": {n: list(i) for n, i in job.alloc.items()},
                  "preemptions": len(job.preempt_times)}
        elapsed = self.now - job.run_start  # type: ignore[operator]
        graceful = mode is Mode.GRACEFUL and self.policy.grace_period_s > 0
        if mode is Mode.CANCEL:
            state, lost = CANCELLED, job.gpus * (job.done + elapsed)
        elif mode is Mode.REQUEUE:
            state, lost = PENDING, job.gpus * (elapsed - self._kept_on_requeue(job, elapsed))
        else:
            state = RUNNING if graceful else SUSPENDED if mode is Mode.SUSPEND else PENDING
            lost = 0.0
        after: dict[str, Any] = {"state": state, "allocation": before["allocation"] if graceful else {},
                                 "preemptions": len(job.preempt_times) + 1, "gpu_seconds_lost": lost}
        if graceful:
            after["grace_until"] = self.now + self.policy.grace_period_s
        if not dry_run:
            self._preempt(job, mode, None, f"preempted by an operator ({mode.value})")
            self._blocked = None
            self._schedule()
        return before, after

    def _changed(self, job: SimJob) -> None:
        """A bump or exemption took effect: re-sort, and let blocked decisions be made again."""
        if job.state in (PENDING, SUSPENDED):
            self._enqueue(job)
        elif job.state == RUNNING:
            self._arm(job)
            self._rver += 1
        self._blocked = None
        self._schedule()

    # ---- accounting ------------------------------------------------------------------------

    def busy_gpu_s(self) -> float:
        """GPU-seconds held by jobs so far (closed runs plus the running ones up to now)."""
        now = self.now
        busy = self.closed_gpu_s
        for job in self._running.values():
            busy += job.gpus * (now - job.run_start)  # type: ignore[operator]
        return busy

    @property
    def capacity(self) -> int:
        return self._gpus.capacity

    @property
    def preemption_events(self) -> tuple[PreemptionEvent, ...]:
        """The most recent preemptions (up to `event_limit`), oldest first."""
        return tuple(PreemptionEvent(t, victim, by, gpus, lost, mode.value, _reason(by, why))
                     for t, victim, by, gpus, lost, mode, why in self._preemption_log)

    def live_jobs(self) -> list[SimJob]:
        """Submitted jobs that have not ended (pending, suspended, running)."""
        return [j for j in self._jobs.values() if j.state != FUTURE]

    def queued_count(self) -> int:
        return len(self._queue)

    # ---- persistence -----------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """Everything needed to continue exactly where this run stands, as JSON-able data."""
        from gpuq.sim.state import dump  # (state.py builds on this module)

        return dump(self)

    @classmethod
    def from_dict(
        cls, raw: Mapping[str, Any], *, policy: Policy = DEFAULT_POLICY, planner: Planner | None = None
    ) -> Simulator:
        """Rebuild a simulator saved by `to_dict` (raises KeyError/ValueError/TypeError on bad data)."""
        from gpuq.sim.state import load

        return load(raw, policy=policy, planner=planner)

    def _rebuild_queue(self) -> None:
        self._queue = PendingQueue(self._qep)
        for job in self._jobs.values():
            if job.state in (PENDING, SUSPENDED):
                self._enqueue_restored(job)

    def _enqueue_restored(self, job: SimJob) -> None:
        info = self._class_info(job.cls)
        if job.aging and not job.urgent and info.max_wait is not None and info.rate > 0:
            self._queue.push(job, float(job.priority), info.rate, info.max_wait, renew=False)
        else:
            self._queue.push(job, self._qep(job, self.now) if job.urgent else float(job.priority), 0.0, 0.0,
                             renew=False)
