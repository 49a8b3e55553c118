"""The queue manager's own preemption plan, predicted: which admitted jobs Kueue would preempt for
a job waiting in one of its ClusterQueues (`Snapshot.queues`), and why it has not admitted it.

A pure function over the snapshot, of the GPU resource only. Kueue's rules, as its source states
them (kubernetes-sigs/kueue ``pkg/scheduler/preemption/preemption.go``: ``GetTargets``,
``findCandidates``, ``candidatesOrdering``, ``minimalPreemptions``, ``fillBackWorkloads``,
``workloadFits``, ``canBorrowWithinCohort``; ``pkg/scheduler/flavorassigner/flavorassigner.go``:
``fitsResourceQuota``), written here anew:

- A workload is preempted whole: every pod of it (`Job.owner`) or none.
- Candidates: workloads of the preemptor's own ClusterQueue as ``withinClusterQueue`` allows
  (``LowerPriority``: strictly lower; ``LowerOrNewerEqualPriority``: also an equal one that entered
  the queue after the preemptor), and workloads of the cohort's other ClusterQueues that borrow
  (use more than their nominal quota) as ``reclaimWithinCohort`` allows (``LowerPriority``: lower;
  ``Any``: any priority).
- Order: other ClusterQueues' workloads before the queue's own, then lower priority first, then
  the most recently admitted first.
- Minimal set: remove candidates in that order (skipping, for another queue, one that stopped
  borrowing meanwhile) until the workload fits, then add back, last removed but one first, every
  one without which it still fits.
- Strategies: only own-queue candidates → borrowing allowed; ``borrowWithinCohort`` on → one pass
  with borrowing, other queues' workloads only below the threshold (``maxPriorityThreshold`` + 1,
  at most the preemptor's priority) once the queue is at its nominal quota, and a taken workload
  at or above it forbids borrowing; otherwise reclaim without borrowing (only while the queue is
  under its nominal quota), then own-queue workloads with borrowing.
- Flavors: the first flavor, in the queue's order, where the request fits at once is where Kueue
  admits it; else the first where preemption finds a set. Preemption is tried only for a request
  within the flavor's nominal quota (or, with ``borrowWithinCohort``, within its borrowing limit).

Left out, and said so: fair sharing (a queue with a fair-sharing weight), workloads already being
evicted (they go first in Kueue's order), hierarchical cohorts and resources other than GPUs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpuq.model import Job, PreviewRequest, Queue, QueuePolicy, QueueQuota, Snapshot

__all__ = ["QueuePlan", "QueueVictim", "Workload", "admission_block", "queue_plan", "workloads_by_queue"]

_WORDS = {QueuePolicy.NEVER: "Never", QueuePolicy.LOWER_PRIORITY: "LowerPriority",
          QueuePolicy.LOWER_OR_NEWER_EQUAL_PRIORITY: "LowerOrNewerEqualPriority", QueuePolicy.ANY: "Any"}  # fmt: skip


@dataclass(slots=True)
class Workload:
    """One admitted workload: its pods (`jobs`), its queue and flavor, and what Kueue orders by.
    `usage`: flavor -> the GPUs it counts against its queue's quota there; `reserved`: whether
    that is its admission's reservation (`Queue.admitted`, as Kueue counts it) or, where the
    snapshot has none, its running pods' GPUs."""

    key: str
    queue: str
    flavor: str | None
    priority: int
    #: when it entered the queue (Kueue's queue order) and when it was admitted (epoch seconds)
    created: float
    admitted: float
    gpus: int = 0
    jobs: list[Job] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)
    reserved: bool = False


@dataclass(frozen=True, slots=True)
class QueueVictim:
    workload: Workload
    reason: str


@dataclass(frozen=True, slots=True)
class QueuePlan:
    """Kueue's plan for one request: `admits_now` (it fits its quota at once, in `flavor`), else
    the `victims` (whole workloads) it would preempt in `flavor`; `notes` say why, in words."""

    queue: str
    flavor: str | None
    admits_now: bool
    victims: tuple[QueueVictim, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def would_preempt(self) -> bool:
        return bool(self.victims)


def workloads_by_queue(snapshot: Snapshot) -> dict[str, list[Workload]]:
    """The workloads each queue admitted, built once per snapshot: each counting its admission's
    reservation where the queue carries it (`Queue.admitted`), else its running pods' GPUs."""
    return snapshot.derived("queueplan.workloads", lambda: _build(snapshot))


def _build(snapshot: Snapshot) -> dict[str, list[Workload]]:
    found: dict[tuple[str, str], Workload] = {}
    queues = {q.name: q for q in snapshot.queues}
    for q in snapshot.queues:
        for adm in q.admitted:
            since = adm.queue_time.timestamp() if adm.queue_time is not None else snapshot.now
            at = adm.admitted_time.timestamp() if adm.admitted_time is not None else since
            total = sum(adm.gpus.values())
            found[(q.name, adm.workload)] = Workload(adm.workload, q.name, next(iter(adm.gpus), None), adm.priority,
                                                     since, at, total, usage=dict(adm.gpus), reserved=True)  # fmt: skip
    for job in snapshot.jobs:
        queue = job.queue
        if queue is None or job.admitted_by is None or not job.holds_gpus:
            continue
        key = job.owner or job.id
        wl = found.get((queue, key))
        if wl is None:
            created = job.queue_time or job.submit_time
            admitted = job.admitted_time or job.start_time or created
            priority = job.queue_priority if job.queue_priority is not None else job.priority
            wl = found[(queue, key)] = Workload(key, queue, job.queue_flavor, priority, created.timestamp(),
                                                admitted.timestamp())  # fmt: skip
        if not wl.reserved:
            wl.gpus += job.gpus
        wl.jobs.append(job)
    out: dict[str, list[Workload]] = {}
    for (queue, _), wl in found.items():
        if not wl.reserved:
            flavor = _flavor_of(wl, queues)
            wl.usage = {flavor: wl.gpus} if flavor is not None else {}
        out.setdefault(queue, []).append(wl)
    return out


def _counted(by_queue: dict[str, list[Workload]], names: list[str]) -> str:
    """Which usage the plan counted, in words."""
    kinds = {wl.reserved for name in names for wl in by_queue.get(name, ())}
    if kinds == {True}:
        return "usage counted as Kueue counts it: each admitted workload's reservation (status.admission)"
    if kinds == {False}:
        return ("usage counted as the admitted workloads' running pods' GPUs (the snapshot has no admission "
                "reservations)")
    if not kinds:
        return "no admitted workload uses the quota"
    return ("usage counted as each admitted workload's reservation (status.admission) where the snapshot has it, "
            "its running pods' GPUs otherwise")


def _flavor_of(wl: Workload, queues: dict[str, Queue]) -> str | None:
    if wl.flavor is not None:
        return wl.flavor
    queue = queues.get(wl.queue)
    return queue.gpu_quotas[0].flavor if queue is not None and queue.gpu_quotas else None


def _quota(queue: Queue, flavor: str) -> QueueQuota:
    return next((q for q in queue.gpu_quotas if q.flavor == flavor), QueueQuota(flavor, 0, 0, 0))


class _Flavor:
    """Usage and quotas of one flavor across the preemptor's queue and its cohort, with the
    cohort's pool of lent quota kept up to date as workloads are taken out and put back."""

    def __init__(self, cq: Queue, members: list[Queue], flavor: str, usage: dict[str, int]) -> None:
        self.cq, self.flavor = cq, flavor
        self.quotas = {m.name: _quota(m, flavor) for m in members}
        self.cohort = cq.cohort
        self.usage = {m.name: usage.get(m.name, 0) for m in members}
        # each member's usage draws first on the quota it keeps (nominal − lending limit), the rest
        # on the cohort's pool: what every member lends
        self.kept = {n: q.nominal - _lendable(q) for n, q in self.quotas.items()}
        self.pool = sum(_lendable(q) for q in self.quotas.values())
        self.pool_used = sum(max(0, self.usage[n] - self.kept[n]) for n in self.quotas)

    def move(self, queue: str, gpus: int) -> None:
        before = self.usage[queue]
        after = self.usage[queue] = before + gpus
        kept = self.kept[queue]
        self.pool_used += max(0, after - kept) - max(0, before - kept)

    def borrowing(self, queue: str) -> bool:
        return self.cohort is not None and self.usage[queue] > self.quotas[queue].nominal

    def fits(self, gpus: int, allow_borrowing: bool) -> bool:
        name = self.cq.name
        quota = self.quotas[name]
        used = self.usage[name] + gpus
        if self.cohort is None or not allow_borrowing:
            if used > quota.nominal:
                return False
        elif quota.borrowing_limit is not None and used > quota.nominal + quota.borrowing_limit:
            return False
        if self.cohort is not None:
            kept = self.kept[name]
            extra = max(0, used - kept) - max(0, self.usage[name] - kept)
            if self.pool_used + extra > self.pool:
                return False
        return True

    def capacity(self) -> int:
        """The most this queue could ever hold in the flavor (nothing else running)."""
        quota = self.quotas[self.cq.name]
        if self.cohort is None:
            return quota.nominal
        most = self.kept[self.cq.name] + self.pool
        return most if quota.borrowing_limit is None else min(most, quota.nominal + quota.borrowing_limit)


def _lendable(quota: QueueQuota) -> int:
    return quota.nominal if quota.lending_limit is None else min(quota.nominal, quota.lending_limit)


@dataclass(slots=True)
class _Preemptor:
    cq: Queue
    gpus: int
    priority: int
    created: float
    exclude: str | None


def _candidates(p: _Preemptor, fl: _Flavor, by_queue: dict[str, list[Workload]]) -> list[QueueVictim]:
    cq, out = p.cq, []
    within = cq.within_queue
    if within is not QueuePolicy.NEVER:
        newer_equal = within is QueuePolicy.LOWER_OR_NEWER_EQUAL_PRIORITY
        rule = f"withinClusterQueue: {_WORDS[within]}"
        for wl in by_queue.get(cq.name, ()):
            if wl.key == p.exclude or not wl.usage.get(fl.flavor):
                continue
            if wl.priority < p.priority:
                out.append(QueueVictim(wl, f"in ClusterQueue {cq.name} at lower priority {wl.priority} < {p.priority} "
                                           f"({rule})"))  # fmt: skip
            elif wl.priority == p.priority and newer_equal and p.created < wl.created:
                out.append(QueueVictim(wl, f"in ClusterQueue {cq.name} at equal priority {wl.priority}, queued after "
                                           f"the preemptor ({rule})"))  # fmt: skip
    reclaim = cq.reclaim_within_cohort
    if cq.cohort is not None and reclaim is not QueuePolicy.NEVER:
        for name in fl.quotas:
            if name == cq.name or not fl.borrowing(name):
                continue
            above = f"{fl.usage[name]} {fl.flavor} GPUs, above its nominal {fl.quotas[name].nominal}"
            for wl in by_queue.get(name, ()):
                if not wl.usage.get(fl.flavor):
                    continue
                if reclaim is QueuePolicy.LOWER_PRIORITY and wl.priority >= p.priority:
                    continue
                out.append(QueueVictim(wl, f"in ClusterQueue {name} of cohort {cq.cohort}, which uses {above} "
                                           f"(reclaimWithinCohort: {_WORDS[reclaim]})"))  # fmt: skip
    # other queues' first, then lower priority, then the most recently admitted
    out.sort(key=lambda v: (v.workload.queue == cq.name, v.workload.priority, -v.workload.admitted, v.workload.key))
    return out


def _minimal(p: _Preemptor, fl: _Flavor, candidates: list[QueueVictim], allow_borrowing: bool,
             threshold: int | None) -> list[QueueVictim]:  # fmt: skip
    """Kueue's minimal set: take candidates in order until the request fits, then put back,
    from the last but one down, each one it still fits without. Empty when it never fits."""
    taken: list[QueueVictim] = []
    fits = False
    name = p.cq.name
    for cand in candidates:
        wl = cand.workload
        if wl.queue != name:
            if not fl.borrowing(wl.queue):
                continue  # (it stopped borrowing as others were taken: nothing left to reclaim)
            if threshold is not None and wl.priority >= threshold:
                allow_borrowing = False
        fl.move(wl.queue, -wl.usage[fl.flavor])
        taken.append(cand)
        if fl.fits(p.gpus, allow_borrowing):
            fits = True
            break
    if not fits:
        for cand in taken:
            fl.move(cand.workload.queue, cand.workload.usage[fl.flavor])
        return []
    for i in range(len(taken) - 2, -1, -1):
        wl = taken[i].workload
        fl.move(wl.queue, wl.usage[fl.flavor])
        if fl.fits(p.gpus, allow_borrowing):
            del taken[i]  # (not needed: it stays)
        else:
            fl.move(wl.queue, -wl.usage[fl.flavor])
    for cand in taken:
        fl.move(cand.workload.queue, cand.workload.usage[fl.flavor])
    return taken


def _targets(p: _Preemptor, fl: _Flavor, candidates: list[QueueVictim]) -> tuple[list[QueueVictim], str]:
    """Kueue's strategies in its order; the victims and which strategy found them."""
    cq = p.cq
    own = [c for c in candidates if c.workload.queue == cq.name]
    if len(own) == len(candidates):
        return _minimal(p, fl, candidates, True, None), "within the ClusterQueue, borrowing if need be"
    under = fl.usage[cq.name] < fl.quotas[cq.name].nominal
    if cq.borrow_within_cohort is not QueuePolicy.NEVER:
        threshold = p.priority
        if cq.borrow_max_priority is not None and cq.borrow_max_priority < threshold:
            threshold = cq.borrow_max_priority + 1
        if not under:
            candidates = [c for c in candidates if c.workload.queue == cq.name or c.workload.priority < threshold]
        return (_minimal(p, fl, candidates, True, threshold),
                f"borrowWithinCohort: workloads of other ClusterQueues below priority {threshold}")  # fmt: skip
    if under:
        found = _minimal(p, fl, candidates, False, None)
        if found:
            return found, "reclaiming quota lent to the cohort, without borrowing"
    return _minimal(p, fl, own, True, None), "within the ClusterQueue, borrowing if need be"


def _usage(by_queue: dict[str, list[Workload]], flavor: str, names: list[str], exclude: str | None) -> dict[str, int]:
    out: dict[str, int] = {}
    for name in names:
        out[name] = sum(wl.usage.get(flavor, 0) for wl in by_queue.get(name, ()) if wl.key != exclude)
    return out


def _preemptor(snapshot: Snapshot, request: PreviewRequest, cq: Queue) -> _Preemptor:
    job = snapshot.job(request.job_id) if request.job_id is not None else None
    if request.urgent:  # (Kueue has no urgency: the highest class a bump would move it to)
        priority = max((c.priority for c in snapshot.classes), default=0)
    elif request.priority is not None:
        priority = request.priority
    else:
        cls = snapshot.job_class(request.job_class or "")
        priority = cls.priority if cls is not None else 0
    if job is not None:
        created = (job.queue_time or job.submit_time).timestamp()
    else:  # a what-if enters the queue now, after every admitted workload
        created = request.queued_since if request.queued_since is not None else snapshot.now
    exclude = job.owner or job.id if job is not None else None
    return _Preemptor(cq, request.gpus, priority, created, exclude)


def queue_plan(snapshot: Snapshot, request: PreviewRequest) -> QueuePlan | None:
    """Kueue's plan for `request` waiting in ClusterQueue `request.queue`; None when the request
    waits in no queue of the snapshot."""
    cq = snapshot.queue(request.queue or "") if request.queue else None
    if cq is None:
        return None
    members = [q for q in snapshot.queues if q.cohort == cq.cohort] if cq.cohort else [cq]
    notes: list[str] = []
    if any(m.fair_sharing for m in members):
        where = f"cohort {cq.cohort}" if cq.cohort else f"ClusterQueue {cq.name}"
        return QueuePlan(
            cq.name,
            None,
            False,
            notes=(
                f"{where} uses fair sharing: Kueue then preempts by the queues' shares, which gpuq does not predict",
            ),
        )
    if not cq.gpu_quotas:
        return QueuePlan(
            cq.name,
            None,
            False,
            notes=(f"ClusterQueue {cq.name} has no nvidia.com/gpu quota: Kueue admits no GPU workload through it",),
        )
    by_queue = workloads_by_queue(snapshot)
    p = _preemptor(snapshot, request, cq)
    names = [m.name for m in members]
    flavors = [_Flavor(cq, members, q.flavor, _usage(by_queue, q.flavor, names, p.exclude))
               for q in cq.gpu_quotas]  # fmt: skip
    counted = _counted(by_queue, names)
    for fl in flavors:
        if fl.fits(p.gpus, True):
            borrows = fl.usage[cq.name] + p.gpus > fl.quotas[cq.name].nominal
            return QueuePlan(
                cq.name,
                fl.flavor,
                True,
                notes=(
                    f"fits ClusterQueue {cq.name}'s quota in flavor {fl.flavor} now"
                    + (f", borrowing from cohort {cq.cohort}" if borrows else "")
                    + ": Kueue admits it, preempting nothing",
                    counted,
                ),
            )
    for fl in flavors:
        quota = fl.quotas[cq.name]
        short = f"flavor {fl.flavor}: {fl.usage[cq.name]} of {quota.nominal} nominal GPUs in use"
        borrow_ok = cq.borrow_within_cohort is not QueuePolicy.NEVER and cq.cohort is not None
        if p.gpus > fl.capacity() or not (p.gpus <= quota.nominal or borrow_ok):
            notes.append(f"{short}; {p.gpus} GPUs is more than its nominal quota, so Kueue does not preempt for it "
                         "there (it waits to borrow)")  # fmt: skip
            continue
        candidates = _candidates(p, fl, by_queue)
        if not candidates:
            notes.append(f"{short}; no admitted workload there that its preemption rules let it take "
                         f"(withinClusterQueue: {_WORDS[cq.within_queue]}, reclaimWithinCohort: "
                         f"{_WORDS[cq.reclaim_within_cohort] if cq.cohort else 'no cohort'})")  # fmt: skip
            continue
        victims, how = _targets(p, fl, candidates)
        if victims:
            return QueuePlan(cq.name, fl.flavor, False, tuple(victims), (*notes, f"{short}; preempts {how}", counted))
        notes.append(f"{short}; preempting every workload its rules let it take would still not make room")
    return QueuePlan(cq.name, None, False, notes=(*notes, counted))


def admission_block(snapshot: Snapshot, job: Job) -> str | None:
    """Why Kueue has not admitted a pending `job` (quota, flavor, borrowing), in plain words;
    None when it waits in no queue of the snapshot."""
    cq = snapshot.queue(job.queue) if job.queue else None
    if cq is None:
        return None
    if not cq.gpu_quotas:
        return f"Kueue ClusterQueue {cq.name} has no nvidia.com/gpu quota, so it admits no GPU workload"
    by_queue = workloads_by_queue(snapshot)
    members = [q for q in snapshot.queues if q.cohort == cq.cohort] if cq.cohort else [cq]
    parts = []
    for q in cq.gpu_quotas:
        fl = _Flavor(cq, members, q.flavor, _usage(by_queue, q.flavor, [m.name for m in members], None))
        used = fl.usage[cq.name]
        text = f"flavor {q.flavor}: {used} of {q.nominal} nominal GPUs in use"
        if fl.fits(job.gpus, True):
            text += f", so {job.gpus} more fit: Kueue should admit it at its next pass"
        elif cq.cohort is None:
            text += (
                f"; {job.gpus} more need {used + job.gpus - q.nominal} beyond it, and with no cohort it cannot borrow"
            )
        else:
            free = fl.pool - fl.pool_used
            limit = "no borrowing limit" if q.borrowing_limit is None else f"borrowing limit {q.borrowing_limit}"
            text += (f"; cohort {cq.cohort} has {max(0, free)} lent GPUs unused ({limit}), short of the "
                     f"{job.gpus} it needs")  # fmt: skip
        parts.append(text)
    counted = _counted(by_queue, [m.name for m in members])
    return f"Kueue holds it in ClusterQueue {cq.name} for lack of quota: " + "; ".join(parts) + f" ({counted})"
