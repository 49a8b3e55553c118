"""A discrete-event simulator of a shared GPU cluster that schedules with the policy engine.

Pure: no I/O and no clock; time only moves when `run_until` is called. Events are ordered by
(exact time, sequence number), so equal times resolve in a fixed order and a seed always gives
the same run: arrivals submitted in time order wait in a line of their own
(`events.ArrivalLine`), every other event in one heap. After every batch of same-time events
one scheduling pass starts jobs in queue order (effective priority desc, queued-since, id); a
blocked head may preempt as the policy engine decides (`gpuq.sim.victims`); lower jobs that fit
the free GPUs then backfill.
With a `sched_interval` the scheduler learns of new submissions only at its periodic passes.

The hot loop stays cheap: victims are only looked for when a preemption is possible at all (the
head outranks the cheapest running victim by more than Δ, and enough unprotected GPUs exist),
and a "no" is remembered until a job starts that may be a victim at once, the head changes, or
jobs stop where the head could then fit (`victims.still_blocked`), or until the next moment a
protection (min runtime, exemption, 24 h cap) expires or aging closes the gap — those moments
are exact events too. Waiting jobs that will start to age are lined up per class with one
wake-up in the heap (`gpuq.sim.aging`), not an event each: most start before that moment.

Around it, on the attributes and methods without a leading underscore: `stops` ends runs
(finished, drained, preempted), `preempting` acts on a blocked head's victims, `convert` turns
the state into model objects, `actions` holds the operator actions (an operator's suspension
included), `state` saves and restores it; `events` defines the event kinds they all share.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final

from gpuq.model import Job, JobClass, Node, Snapshot
from gpuq.policy.config import DEFAULT_POLICY, Mode, Policy
from gpuq.policy.kernel import outranks
from gpuq.sim import actions, convert, stops
from gpuq.sim import events as event_heap
from gpuq.sim.aging import AgingLines
from gpuq.sim.cluster import Gpus
from gpuq.sim.convert import Why
from gpuq.sim.events import AGE, AGES, ARRIVE, DRAIN, FINISH, GENERATE, PASS, RECHECK, ArrivalLine, Event
from gpuq.sim.fastrules import FastRules
from gpuq.sim.gcpause import gc_paused
from gpuq.sim.jobs import (
    FUTURE,
    PENDING,
    RUNNING,
    SUSPENDED,
    SimJob,
    on_grid,
    strictly_after,
    with_checkpoint_costs,
)
from gpuq.sim.planner import Planner, engine_planner
from gpuq.sim.preempting import try_preempt, watch_overtake
from gpuq.sim.queue import PendingQueue
from gpuq.sim.retired import Retired
from gpuq.sim.victims import VictimIndex, block, holding, outranks_nobody, still_blocked
from gpuq.sim.workload import DEFAULT_CLASSES, ClusterSpec, JobSpec, WorkloadStream

__all__ = ["STATE_VERSION", "LogEntry", "Observer", "Simulator"]

STATE_VERSION: Final = 2

#: One preemption as logged: time, victim, preemptor, GPUs, GPU-seconds lost, mode, and the
#: reason — a sentence, or the chosen cost of a policy preemption (`convert.reason` phrases it).
LogEntry = tuple[float, str, "str | None", int, float, Mode, Why]

#: Told of each step of a job's life as it happens (`Simulator.observer`): the step ("arrive",
#: "start", "preempt", "drain", "finish", "cancel"), the job, and the job it was preempted for.
Observer = Callable[[str, SimJob, "SimJob | None"], None]

_INF: Final = math.inf


class Simulator:
    """The simulated cluster. Feed it jobs (`submit`) or a `WorkloadStream`, then `run_until(t)`.

    `sched_interval` > 0: the scheduler runs a pass over new submissions every `sched_interval`
    seconds from `start` (as Slurm's does every `sched_interval`); a job that arrives waits,
    pending, for the first pass after its arrival. Finishes, rechecks and aging are acted on at
    once among the jobs it knows. 0: every job is considered the moment it arrives.

    `checkpoint_cost_s`, `restore_cost_s`: what checkpoints cost the jobs that report them
    (those with a checkpoint interval): each save takes `checkpoint_cost_s` after every interval
    of work, and a run that restarts from saved progress after a requeue first restores for
    `restore_cost_s`; both lengthen the run and count as overhead (`overhead_gpu_s`), not as work.

    The attributes and methods without a leading underscore are what the package's other
    modules read, restore and build on; from outside, feed and run it here, and look, act, save
    and restore through `snapshot`/`convert`, `actions` and `state`. `retired` (a replay's
    measures, each job recorded as it ends), `on_retire` (each job as it ends, completed or
    cancelled, before it leaves: a record of every job without keeping them) and `observer`
    (each step of every job) are for replaying traces.
    """

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
        sched_interval: float = 0.0,
        checkpoint_cost_s: float = 0.0,
        restore_cost_s: float = 0.0,
    ) -> None:
        self.name = name
        self.spec = cluster or ClusterSpec()
        self.classes = tuple(classes)
        self.t0 = on_grid(start)
        self.now = self.t0
        self.max_pending = max_pending
        self.sched_interval = sched_interval
        self.trace: list[tuple[float, str, str, str | None]] | None = [] if trace else None
        self.planner: Planner = planner or engine_planner
        self.stream = stream
        self.gpus = Gpus(self.spec.node_names(), self.spec.gpus_per_node)
        self.nodes = tuple(Node(n, self.spec.gpus_per_node, self.spec.gpu_model) for n in self.gpus.names)
        self.events: list[Event] = []
        self.arrivals = ArrivalLine()  # (arrivals submitted in time order: outside the heap)
        self.seq = 0
        self.jobs: dict[str, SimJob] = {}  # every job not finished yet, future ones included
        self.running: dict[str, SimJob] = {}  # in start order (the fast path relies on it)
        self.unseen: dict[str, SimJob] = {}  # arrived, waiting for the next pass (sched_interval)
        self.pass_at = _INF  # the next pass over new submissions, when one is due
        self.victims = VictimIndex()
        #: jobs an operator suspended: paused, out of the queue, holding their GPUs until resumed
        #: (id -> since when); the scheduler's own suspensions lend the GPUs out instead
        self.held: dict[str, float] = {}
        self.history: deque[SimJob] = deque(maxlen=history_limit)
        self.preemption_log: deque[LogEntry] = deque(maxlen=event_limit)
        #: bumped whenever a possible victim appears (a start, a change of priorities or of
        #: protections); stops are kept as the nodes they freed GPUs on (`freed`)
        self.rver = 0
        self.blocked: tuple[str, int, int] | None = None  # (head id, qver, rver) the engine said no to
        self.freed: set[int] = set()  # nodes where jobs stopped since the last look at every node
        self.on_node: list[dict[SimJob, int]] = [{} for _ in self.gpus.names]  # running job -> its GPUs there
        self.recheck_ver = 0
        self.recheck_at = _INF
        self.aging = AgingLines()  # queued jobs lined up to start aging, with one wake-up (AGES)
        self.age_wake = _INF  # when that wake-up comes
        self.age_ver = 0
        self.idle_gpu_s = 0.0
        self.closed_gpu_s = 0.0  # GPU-seconds of runs that have ended
        self.events_processed = 0
        self.plans = 0
        self.preemptions = 0
        self.dropped = 0
        self.ckpt_running = 0  # running jobs that report checkpoints
        self.save_cost = checkpoint_cost_s
        self.restore_cost = restore_cost_s
        self.overhead_gpu_s = 0.0  # GPU-seconds of closed runs spent saving and restoring
        self.lost_gpu_s = 0.0  # GPU-seconds of work lost to preemptions
        self.on_retire: Callable[[SimJob], None] | None = None
        self.retired: Retired | None = None  # (a replay's measures: compiled, so called as such)
        self.observer: Observer | None = None
        self.mcache: dict[str, tuple[tuple[Any, ...], Job]] = {}  # model of running jobs (`convert`)
        #: decide requests on plain numbers (`victims`; the same choice as the engine)
        self.fast_path = True
        #: test hook: also ask the engine on every fast-path decision and compare
        self.check_fast_path = False
        self.policy = policy
        self.rules = FastRules(policy, self.classes)
        self.queue = PendingQueue(self.rules.queued_priority)
        if stream is not None:
            self.push(start, GENERATE, None, 0)

    # ---- policy and priorities -------------------------------------------------------------

    def set_policy(self, policy: Policy) -> None:
        """Use `policy` from now on (the demo backend takes it from each CLI call)."""
        if self.policy == policy:
            return
        self.policy = policy
        self.rules.set_policy(policy)
        # Priorities, aging and preemptibility may all have changed: re-sort everything.
        for job in list(self.queue.jobs.values()):
            self.enqueue(job)
        for job in self.running.values():
            self.arm(job)  # (uncounts it at its old priority, counts it at its new one)
        self.rver += 1
        self.reconsider()

    def arm(self, job: SimJob, renew: bool = True) -> None:
        """Fix a running job's victim numbers for this run, and list it as a possible victim.

        Both are constant while it runs: its effective priority and the moment its protections
        end (the 24 h cap window only loses entries during a run), which is worked out when first
        asked (`FastRules.prot_of`: many jobs end before anyone asks). Called at start and again whenever a
        bump, an exemption or a new policy changes them; `renew=False` keeps the job's version
        `hver` (restoring saved state).
        """
        self.victims.remove(job)  # (counted under its old priority, if at all)
        rules = self.rules
        info = rules.class_info(job.cls)
        # (the common case, without aging, urgency or protections, needs no arithmetic)
        job.rep = float(job.priority) if info.max_wait is None and not job.urgent else rules.running_priority(job)
        job.prot = -1.0 if rules.gated or job.exempt_until is not None else 0.0  # (-1: not worked out yet)
        if renew:
            job.hver += 1
        if job.drain_until is None and info.preemptible:
            self.victims.add(job, len(self.running))

    def effective_priority(self, job_id: str) -> float:
        """A visible job's effective priority now, as the rule kernel counts it."""
        job = actions.visible(self, job_id)
        return self.rules.priority_of(job, self.now, job.state in (PENDING, SUSPENDED) and job.id not in self.held)

    # ---- events ----------------------------------------------------------------------------

    def push(self, when: float, kind: int, job: SimJob | None, ver: int) -> None:
        """Schedule an event of `kind` (`gpuq.sim.events`) at `when`, on the microsecond grid."""
        self.seq += 1
        event_heap.heap_push(self.events, (on_grid(when), self.seq, kind, job, ver))

    def submit(self, spec: JobSpec | Iterable[JobSpec]) -> None:
        """Schedule the arrival of jobs at their submit times (at least `now`). All or nothing: a
        duplicate id (with a known job or within the batch) refuses the whole batch."""
        specs = [spec] if isinstance(spec, JobSpec) else list(spec)
        jobs = self.jobs
        seen: set[str] = set()
        for s in specs:
            if s.id in jobs or s.id in seen:
                raise ValueError(f"duplicate job id {s.id!r}")
            seen.add(s.id)
        arrivals: list[Event] = []
        last = self.arrivals.last_time()
        in_order = True
        with gc_paused():  # (many new objects, no cycles among them)
            for s in specs:
                job = SimJob(s)
                if job.submit < self.now:
                    job.submit = job.qs = self.now
                jobs[job.id] = job
                self.seq += 1
                arrivals.append((job.submit, self.seq, ARRIVE, job, 0))
                if job.submit < last:
                    in_order = False
                last = job.submit
            if in_order:
                self.arrivals.extend(arrivals)
                return
            # Out of time order, into the heap: a few into a large heap a push each; else one
            # heapify for the lot (linear).
            events = self.events
            if len(arrivals) * 16 < len(events):
                for arrival in arrivals:
                    event_heap.heap_push(events, arrival)
            else:
                events.extend(arrivals)
                event_heap.heap_make(events)

    def next_event_time(self) -> float | None:
        first = min(self.events[0][0] if self.events else _INF, self.arrivals.first_time())
        return None if first == _INF else first

    def has_events(self) -> bool:
        return bool(self.events) or len(self.arrivals) > 0

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
        would only walk the heaps' many short-lived entries again and again.
        """
        with gc_paused():
            return self._run_until(on_grid(until) if until < _INF else until)

    def _run_until(self, until: float) -> int:
        events = self.events
        line = self.arrivals
        arriving = line.items
        gpus = self.gpus
        processed = 0
        dirty = False
        while True:
            # The next event: the arrival line's first or the heap's top, whichever comes first.
            head = line.head
            early = head < len(arriving)
            if early:
                event = arriving[head]
                if events:
                    top = events[0]
                    if top[0] < event[0] or (top[0] == event[0] and top[1] < event[1]):
                        event, early = top, False
            elif events:
                event = events[0]
            elif dirty:
                dirty = False
                self._schedule()  # may start jobs, so add finish events
                continue
            else:
                break
            t, _, kind, job, ver = event
            if kind in (FINISH, DRAIN):
                assert job is not None  # (compiled: its fields read as a SimJob's, not by name)
                if job.epoch != ver or job.state != RUNNING:
                    event_heap.heap_pop(events)
                    continue
            elif kind == AGE:
                assert job is not None
                if job.qver != ver:
                    event_heap.heap_pop(events)
                    continue
            elif kind == RECHECK and ver != self.recheck_ver:
                event_heap.heap_pop(events)
                continue
            elif kind == AGES:
                if ver != self.age_ver:
                    event_heap.heap_pop(events)
                    continue
                due = self.aging.next_due()
                if due > t:  # the job it woke for started (or was queued anew) since
                    event_heap.heap_pop(events)
                    self._wake_aging(due)
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
            if early:
                line.head = head + 1
            else:
                event_heap.heap_pop(events)
            processed += 1
            dirty = True
            if kind == FINISH:
                stops.finish(self, job)  # type: ignore[arg-type]
            elif kind == ARRIVE:
                self._arrive(job)  # type: ignore[arg-type]
            elif kind == AGE:
                self.enqueue(job)  # type: ignore[arg-type]
                self.blocked = None  # the order among waiting jobs starts to move
            elif kind == DRAIN:
                stops.drained(self, job)  # type: ignore[arg-type]
            elif kind == RECHECK:
                self.recheck_at = _INF
                self.blocked = None
            elif kind == AGES:
                aged = self.aging.pop_due(t)
                for waiting in aged:
                    self.enqueue(waiting)
                processed += len(aged) - 1  # (each job that starts to age counts, as its own event did)
                self.blocked = None
                self._wake_aging(self.aging.next_due())
            elif kind == PASS:
                self._pass()
            else:
                self._generate()
        if until > self.now and until < _INF:
            self.idle_gpu_s += gpus.total_free * (until - self.now)
            self.now = until
        self.events_processed += processed
        return processed

    def _arrive(self, job: SimJob) -> None:
        if self.max_pending is not None and len(self.queue) + len(self.unseen) >= self.max_pending:
            # Users stop submitting into a hopeless queue; keeps a long-running demo bounded.
            del self.jobs[job.id]
            self.dropped += 1
            return
        job.state = PENDING
        if self.observer is not None:
            self.observer("arrive", job, None)
        if self.sched_interval <= 0:
            self.enqueue(job)
            return
        self.unseen[job.id] = job
        if self.pass_at == _INF:
            interval = self.sched_interval
            passes = math.floor((self.now - self.t0) / interval) + 1
            when = self.t0 + passes * interval
            while when <= self.now:  # (the first pass strictly after the arrival)
                passes += 1
                when = self.t0 + passes * interval
            self.pass_at = on_grid(when)
            self.push(self.pass_at, PASS, None, 0)

    def _pass(self) -> None:
        """A scheduling pass: the jobs submitted since the last one join the queue."""
        self.pass_at = _INF
        for job in self.unseen.values():
            self.enqueue(job)
        self.unseen.clear()

    def _generate(self) -> None:
        assert self.stream is not None
        when, batch = self.stream.next_batch(self.now)
        for spec in batch:
            job = SimJob(spec)
            self.jobs[job.id] = job
            self.push(when, ARRIVE, job, 0)
        self.push(when, GENERATE, None, 0)

    def enqueue(self, job: SimJob, renew: bool = True) -> None:
        """Put a waiting job in the right queue group; schedule the moment it starts to age.
        `renew=False` keeps its queue version and schedules nothing (restoring saved state)."""
        info = self.rules.class_info(job.cls)
        if job.urgent or info.max_wait is None or info.rate <= 0:
            job.aging = False
            self.queue.push(job, self.rules.queued_priority(job, self.now), 0.0, 0.0, renew)
            return
        if not renew:  # (the saved state knows whether it was aging, and its age event)
            rate = info.rate if job.aging else 0.0
            self.queue.push(job, float(job.priority), rate, info.max_wait if job.aging else 0.0, False)
            return
        ages_at = job.qs + info.max_wait
        if self.now >= ages_at:
            job.aging = True
            self.queue.push(job, float(job.priority), info.rate, info.max_wait)
        else:
            job.aging = False
            self.queue.push(job, float(job.priority), 0.0, 0.0)
            self._age_later(job, ages_at)

    def _age_later(self, job: SimJob, ages_at: float) -> None:
        """Have a queued job start to age at `ages_at` (`gpuq.sim.aging`)."""
        when = on_grid(ages_at)
        self.seq += 1
        if not self.aging.add(job, when, self.seq):  # (out of its class's order: an event of its own)
            event_heap.heap_push(self.events, (when, self.seq, AGE, job, job.qver))
        elif when < self.age_wake:
            self._wake_aging(when)

    def _wake_aging(self, when: float) -> None:
        """Wake up for the lined-up jobs at `when` (none: inf), instead of any earlier wake-up."""
        self.age_wake = when
        self.age_ver += 1
        if when < _INF:  # (off the sequence numbers: a restored run, its jobs' own events, uses the same)
            event_heap.heap_push(self.events, (when, -self.age_ver, AGES, None, self.age_ver))

    def recheck(self, when: float) -> None:
        """Look at the queue again at `when` (the earliest such look asked for stands)."""
        when = max(when, strictly_after(self.now))  # never at this instant again: no livelock
        if when < self.recheck_at:
            self.recheck_at = when
            self.recheck_ver += 1
            self.push(when, RECHECK, None, self.recheck_ver)

    # ---- starting and stopping -------------------------------------------------------------

    def _schedule(self) -> None:
        queue = self.queue
        if not queue.jobs:
            return
        gpus = self.gpus
        now = self.now
        while True:
            head = queue.best(now)
            if head is None:
                return
            placement = gpus.place(head.gpus)
            if placement is not None:
                self.start(head, placement)
                continue
            if head.claim:  # waiting for its graceful victims: a job that ages past it goes first
                watch_overtake(self, head)
                break
            if still_blocked(self, head):
                break  # known to be stuck as things are
            if outranks_nobody(self, head):
                block(self, head)  # the common "no" on a busy cluster, without the full check
                break
            if not try_preempt(self, head):
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
            self.start(job, placement)

    def start(self, job: SimJob, placement: list[tuple[int, list[int]]]) -> None:
        """Start a queued job on `placement`, GPUs that are free."""
        self.queue.remove(job)
        job.alloc = self.gpus.take(placement)
        if len(placement) == 1:  # (the common case, without building a list)
            node_index, indexes = placement[0]
            job.place = ((node_index, len(indexes)),)
        else:
            job.place = tuple([(i, len(idx)) for i, idx in placement])
        self.set_running(job, from_free=True)

    def set_running(self, job: SimJob, from_free: bool = False) -> None:
        """Start a run of `job` now on the GPUs it holds (`alloc`, `place` set): its finish event,
        its victim numbers, the running set. Also an operator's resume (`actions`): a job that
        kept its GPUs (not `from_free`)."""
        now = self.now
        remaining = job.duration - job.done
        if job.first_start is None:
            job.first_start = now
        if from_free:  # (a new run; a resume keeps the run it suspended: `began`, `susp`)
            job.began = now
            job.susp = 0.0
        if job.ckpt and (self.save_cost > 0 or self.restore_cost > 0):
            # (a restart from saved progress restores first; a suspended job resumes as it stood)
            restore = self.restore_cost if job.done > 0 and job.state == PENDING else 0.0
            remaining = with_checkpoint_costs(job, remaining, self.save_cost, restore)
        elif job.save_s != 0.0 or job.restore_s != 0.0:
            job.save_s = job.restore_s = 0.0
        job.state = RUNNING
        job.run_start = now
        job.drain_until = None
        job.epoch += 1
        if job.claim:
            for victim_id in job.claim:
                victim = self.jobs.get(victim_id)
                if victim is not None:
                    victim.claimed_by = None
            job.claim = ()
        self.push(now + remaining, FINISH, job, job.epoch)
        self.running[job.id] = job
        for i, n in job.place:
            self.on_node[i][job] = n
        if job.ckpt is not None:
            self.ckpt_running += 1
        self.arm(job)
        # A start only takes GPUs: what a blocked head was told stands unless the new job may be
        # a victim now; one protected for a while yet is asked about when its protections end.
        # A victim of the blocked head already, on GPUs that were free when it was refused, gives
        # it no more room than those free GPUs did (and stays a victim: unprotected, at a fixed
        # priority), so the "no" stands then too.
        if job.counted is not None:  # (a possible victim)
            if job.prot < 0 and self.rules.young_at_start and from_free:  # (protected now, surely)
                if self.blocked is not None:  # not a victim before its minimum runtime: ask then
                    self.recheck(now + self.rules.min_runtime)
            elif self.rules.prot_of(job, now) <= now:
                if not (from_free and self._a_victim_of_the_blocked_head(job)):
                    self.rver += 1
            elif self.blocked is not None:
                self.recheck(job.prot)
        if self.trace is not None:
            self.trace.append((now, "start", job.id, None))
        if self.observer is not None:
            self.observer("start", job, None)

    def _a_victim_of_the_blocked_head(self, job: SimJob) -> bool:
        """Whether the head the engine said no to outranks `job` by more than Δ now (True when
        no such "no" stands: nothing to keep or forget)."""
        blocked = self.blocked
        if blocked is None:
            return True
        head = self.queue.jobs.get(blocked[0])
        if head is None or head.qver != blocked[1]:
            return True
        rules = self.rules
        return outranks(rules.requester_priority(head, self.now, holding(self)), job.rep, rules.delta)

    # ---- the model (`convert`), and what operator actions (`actions`) call -----------------

    def snapshot(self) -> Snapshot:
        """The cluster now: queue in scheduling order, running jobs, recent finished jobs."""
        return convert.snapshot(self)

    def changed(self, job: SimJob, reconsider: bool = True) -> None:
        """A bump or exemption took effect: re-sort, and let blocked decisions be made again (a
        job the scheduler has not seen yet is taken into the queue now: an operator's change
        makes it look). `reconsider=False`: the caller runs the scheduling pass itself."""
        if self.unseen.pop(job.id, None) is not None or (
            job.state in (PENDING, SUSPENDED) and job.id not in self.held
        ):
            self.enqueue(job)
        elif job.state == RUNNING:
            self.arm(job)
            self.rver += 1
        if reconsider:
            self.reconsider()

    def reconsider(self) -> None:
        """Forget the remembered "no" and run a scheduling pass now."""
        self.blocked = None
        self._schedule()

    # ---- accounting ------------------------------------------------------------------------

    def busy_gpu_s(self) -> float:
        """GPU-seconds held by jobs so far (closed runs plus the running ones up to now)."""
        now = self.now
        busy = self.closed_gpu_s
        for job in self.running.values():
            busy += job.gpus * (now - job.run_start)  # type: ignore[operator]
        for job_id, since in self.held.items():
            busy += self.jobs[job_id].gpus * (now - since)
        return busy

    @property
    def capacity(self) -> int:
        return self.gpus.capacity

    def live_jobs(self) -> list[SimJob]:
        """Submitted jobs that have not ended (pending, suspended, running)."""
        return [j for j in self.jobs.values() if j.state != FUTURE]

    def queued_count(self) -> int:
        return len(self.queue) + len(self.unseen)
