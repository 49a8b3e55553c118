"""Victim choice: which running jobs a request would preempt, and why each candidate was spared.

Pure: takes (snapshot, policy, request, now) and returns a Plan; never reads the clock.

- Single-node requests (at most the GPUs of the largest node) get the exact minimum-cost victim
  set over all nodes, with the tie-breaks of the policy model. Each node has at most a few dozen
  jobs, so an exhaustive branch-and-bound over minimal covers per node is cheap; nodes are visited
  in order of a cost lower bound so that large clusters examine only a handful, and on large
  clusters only the nodes whose bound can matter are costed at all (`pruning.PrunedOrder`).
- Multi-node requests get a valid cost-greedy plan: cheapest GPUs first, then redundant victims
  dropped, most expensive first.

Every number comes from the rule kernel (`rules`, `kernel`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, cast

import msgspec

from gpuq.model import Job, JobClass, JobIdKey, JobState, Node, PreviewRequest, Snapshot, job_id_key
from gpuq.policy.config import Policy
from gpuq.policy.cover import Best, Item, Share, greedy_cover, per_gpu_order, search_node
from gpuq.policy.plan import Candidate, Plan
from gpuq.policy.pruning import PrunedOrder
from gpuq.policy.rules import (
    QueueStanding,
    Reason,
    effective_priority,
    effective_priority_of,
    gpu_seconds_lost,
    outranks,
    over_urgent_quota,
    protection,
    requester_priority_of,
    victim_cost_of,
)

__all__ = [
    "Candidate",
    "Plan",
    "Reason",
    "class_of",
    "free_gpus",
    "plan_preemption",
    "request_for_job",
]

_EPS = 1e-6


def class_of(snapshot: Snapshot, policy: Policy, name: str) -> JobClass:
    return policy.resolve_class(snapshot.job_class(name), name)


def free_gpus(snapshot: Snapshot) -> dict[str, int]:
    """Free GPUs per node that takes work (down/draining nodes are left out)."""
    used = snapshot.used_gpus()
    return {n.name: max(0, n.gpus - used.get(n.name, 0)) for n in snapshot.nodes if n.state.takes_work}


def request_for_job(job: Job) -> PreviewRequest:
    return PreviewRequest(
        gpus=job.gpus,
        priority=job.priority,
        job_class=job.job_class,
        tenant=job.tenant,
        urgent=job.urgent,
        job_id=job.id,
        queued_since=job.queued_since.timestamp() if job.state is JobState.PENDING else None,
        max_nodes=job.max_nodes,
        admitted_by=job.admitted_by,
        queue=job.queue,
    )


@dataclass(slots=True)
class _Victim:
    """A running job considered as a victim, with its numbers computed once."""

    job: Job
    cost: float
    lost: float
    priority: float
    protected: tuple[Reason, str] | None
    idkey: JobIdKey
    on_node: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class _Context:
    snapshot: Snapshot
    policy: Policy
    now: float
    requester_priority: float
    exclude: str | None
    #: the requester's class and queue manager: the cluster's own rules of whom it may preempt
    requester_class: JobClass
    admitted_by: str | None = None
    #: the requester's queue under its queue manager, where the snapshot has its rules
    queue: QueueStanding | None = None
    classes: dict[str, JobClass] = field(default_factory=dict)
    victims: dict[str, _Victim] = field(default_factory=dict)
    quick: dict[str, tuple[float, bool]] = field(default_factory=dict)
    fast_rules: bool = False
    #: whether the cluster limits whom the requester may preempt beyond priority
    native_rules: bool = False

    def __post_init__(self) -> None:
        self.native_rules = (self.admitted_by is not None or self.queue is not None
                             or isinstance(self.requester_class.may_preempt, tuple))  # fmt: skip
        # Without min-runtime and cap rules, a job is protected only by exemption, class or delta.
        self.fast_rules = (self.policy.min_runtime_s <= 0 and self.policy.max_preemptions_per_day <= 0
                           and not self.native_rules)  # fmt: skip

    def protection(self, job: Job) -> tuple[Reason, str] | None:
        """Every rule that can protect `job` from this requester (gpuq's policy, the cluster's)."""
        return protection(job, self.cls(job.job_class), self.requester_priority, self.policy, self.now,
                          requester=self.requester_class, admitted_by=self.admitted_by,
                          queue=self.queue)  # fmt: skip

    def cls(self, name: str) -> JobClass:
        found = self.classes.get(name)
        if found is None:
            found = self.classes[name] = class_of(self.snapshot, self.policy, name)
        return found

    def running_priority(self, job: Job) -> float:
        """A victim's effective priority (what it had earned by its start)."""
        return effective_priority(job, self.cls(job.job_class), self.policy, self.now)

    def quick_numbers(self, job: Job) -> tuple[float, bool]:
        """(cost, unprotected) for a running job, without building a _Victim."""
        found = self.quick.get(job.id)
        if found is None:
            policy = self.policy
            priority = self.running_priority(job)
            cost = victim_cost_of(gpu_seconds_lost(job, policy, self.now), priority, policy.lost_work_weight,
                                  policy.priority_weight)  # fmt: skip
            if job.exempt_until is None and self.fast_rules and self.cls(job.job_class).preemptible:
                # Only the priority gap can protect it; the reason's sentence is built later,
                # for the few protected jobs a plan lists.
                ok = outranks(self.requester_priority, priority, policy.delta)
            else:
                ok = self.protection(job) is None
            found = self.quick[job.id] = (cost, ok)
        return found

    def victim(self, job: Job) -> _Victim:
        """A running job as a candidate, built once; cost and protection come from
        `quick_numbers`, and the protection's sentence only when it is protected."""
        found = self.victims.get(job.id)
        if found is None:
            cost, unprotected = self.quick_numbers(job)
            found = _Victim(
                job=job,
                cost=cost,
                lost=gpu_seconds_lost(job, self.policy, self.now),
                priority=self.running_priority(job),
                protected=None if unprotected else self.protection(job),
                idkey=job_id_key(job.id),
                on_node={node: len(idx) for node, idx in job.allocation.items()},
            )
            self.victims[job.id] = found
        return found


def _requester_priority(
    snapshot: Snapshot, policy: Policy, request: PreviewRequest, now: float, notes: list[str]
) -> float:
    cls = class_of(snapshot, policy, request.job_class or "")
    base = request.priority if request.priority is not None else cls.priority
    queued = request.queued_since if request.queued_since is not None else now
    without_urgency = effective_priority_of(
        float(base), urgent=False, urgent_priority=float(policy.urgent_priority), waited_s=now - queued,
        max_wait_s=cls.max_wait_s, rate_per_min=policy.aging_rate(cls.name),
    )  # fmt: skip
    if not request.urgent:
        return without_urgency
    tenant = request.tenant or ""
    quota = policy.tenant_urgent_quota(tenant)
    held = 0
    if quota > 0:
        held = sum(
            j.gpus
            for j in snapshot.jobs
            if j.urgent and j.holds_gpus and j.tenant == request.tenant and j.id != request.job_id
        )
    if over_urgent_quota(quota, held, request.gpus):
        notes.append(
            f"tenant {request.tenant} already holds {held} urgent GPUs; {request.gpus} more exceed "
            f"its urgent quota of {quota}, so the request counts at priority {without_urgency:g}, not as urgent"
        )
    return requester_priority_of(
        without_urgency, urgent=True, urgent_priority=float(policy.urgent_priority), quota=quota,
        urgent_gpus_held=held, gpus=request.gpus,
    )  # fmt: skip


def _candidate(v: _Victim, reason: Reason, detail: str) -> Candidate:
    return Candidate(
        job_id=v.job.id,
        reason=reason,
        detail=detail,
        nodes=tuple(v.job.allocation),
        gpus=v.job.gpus,
        gpu_seconds_lost=v.lost,
        cost=v.cost,
        effective_priority=v.priority,
    )


def _item(v: _Victim, node: str) -> Item:
    """A victim as the shared exact search sees it."""
    start = v.job.start_time
    return (v.cost, v.idkey, v.on_node[node], v.priority, 0.0 if start is None else start.timestamp(), v.job.id)


def _spare_reason(v: _Victim, why: str) -> Candidate:
    if v.protected is not None:
        return _candidate(v, v.protected[0], v.protected[1])
    return _candidate(v, Reason.NOT_NEEDED, why)


def _running_by_node(ctx: _Context, usable: Iterable[str]) -> dict[str, list[_Victim]]:
    on = ctx.snapshot.running_on()
    exclude = ctx.exclude
    victim = ctx.victim
    by_node: dict[str, list[_Victim]] = {}
    for node in usable:
        jobs = on.get(node)
        if jobs:
            by_node[node] = [victim(job) for job in jobs if job.id != exclude]
    return by_node


def _make_plan(
    ctx: _Context,
    request: PreviewRequest,
    *,
    fits: bool,
    nodes: tuple[str, ...],
    victims: tuple[Candidate, ...],
    spared: tuple[Candidate, ...],
    freed_gpus: int,
    total_cost: float,
    blocked: str | None = None,
) -> Plan:
    return Plan(request=request, effective_priority=ctx.requester_priority, feasible=True,
                fits_without_preemption=fits, would_preempt=bool(victims), nodes=nodes, victims=victims,
                spared=spared, freed_gpus=freed_gpus, total_cost=total_cost, blocked=blocked)


#: below this many candidate nodes the plain scan of every node is as quick as pruning
_PRUNE_MIN_NODES = 64


def _plan_single(ctx: _Context, request: PreviewRequest, nodes: list[Node], free: dict[str, int]) -> Plan:
    g = request.gpus
    big_enough = [n for n in nodes if n.state.takes_work and n.gpus >= g]
    fitting = [n for n in big_enough if free[n.name] >= g]
    if fitting:
        # Best fit keeps large holes open for large jobs.
        node = min(fitting, key=lambda n: (free[n.name], n.name))
        return _make_plan(ctx, request, fits=True, nodes=(node.name,),
                    victims=(), spared=(), freed_gpus=0, total_cost=0.0)
    if not big_enough:
        return _make_plan(ctx, request, fits=False, nodes=(), victims=(),
                    spared=(), freed_gpus=0, total_cost=0.0,
                    blocked=f"no node that takes work has {g} GPUs (nodes with enough GPUs are down or draining)")
    # Lower bound per node: every missing GPU costs at least the cheapest eligible cost per GPU.
    # Costing a node touches each of its running jobs, so it works on plain numbers; _Victim
    # objects are built only for the few nodes the exact search then examines. On large clusters
    # `PrunedOrder` costs only the nodes that can matter.
    on = ctx.snapshot.running_on()
    numbers = ctx.quick_numbers
    inf = float("inf")
    protected_seen: dict[str, tuple[Job, float]] = {}
    quick, now, policy, exclude = ctx.quick, ctx.now, ctx.policy, ctx.exclude

    def bound(name: str) -> tuple[float, str, int]:
        """(lower bound of the node's cheapest plan, node, GPUs still missing there)."""
        need = g - free[name]
        eligible_gpus, per_gpu = 0, inf
        for job in on.get(name, ()):
            job_id = job.id
            if job_id == exclude:
                continue
            hit = quick.get(job_id)
            if hit is None:
                hit = numbers(job)
            cost, ok = hit
            if ok:
                count = len(job.allocation[name])
                eligible_gpus += count
                if cost < per_gpu * count:
                    per_gpu = cost / count
            else:
                protected_seen[job.id] = (job, cost)
        return (need * per_gpu if eligible_gpus >= need else inf, name, need)

    def search_nodes(ordered: Iterable[tuple[float, str, int]]) -> tuple[Best, list[str]]:
        search = Best()
        examined: list[str] = []
        for lower, name, need in ordered:
            if lower == inf:
                if search.key is None:
                    examined.append(name)
                continue
            if search.key is not None and lower > search.limit + _EPS:
                break
            examined.append(name)
            eligible = [v for v in _running_by_node(ctx, (name,)).get(name, ()) if v.protected is None]
            search_node(name, need, [_item(v, name) for v in eligible], search)
        return search, examined

    pruned = None
    if len(big_enough) > _PRUNE_MIN_NODES:
        pruned = PrunedOrder.build(ctx.snapshot, policy, now, big_enough, free, g)
    if pruned is not None:
        search, examined = search_nodes(pruned.ascending(bound))
        if search.key is not None:
            # Protected jobs cheaper than the plan are listed below: visit every node that can
            # hold one, then list them in node order as the full scan would.
            pruned.visit_up_to(cast(float, search.key[0]), bound)
            protected_seen = pruned.in_node_order(big_enough, on, protected_seen)
        else:  # no plan: the answer explains every node, so look at all of them
            protected_seen = {}
            pruned = None
    if pruned is None:
        bounds = sorted(bound(node.name) for node in big_enough)
        search, examined = search_nodes(bounds)
    best: tuple[tuple[Any, ...], list[_Victim]] | None = None
    if search.key is not None and search.choice is not None:
        items, _ = search.choice
        best = (search.key, [ctx.victims[item[5]] for item in items])

    by_node = _running_by_node(ctx, examined)
    chosen_ids = {v.job.id for v in best[1]} if best else set()
    spared: dict[str, Candidate] = {}
    for name in examined:
        for v in by_node.get(name, ()):
            if v.job.id in chosen_ids or v.job.id in spared:
                continue
            if best is not None and name == best[0][-1]:
                why = "not needed: a cheaper set on this node frees enough GPUs"
            elif best is not None:
                why = f"cheaper alternative found on {best[0][-1]}"
            else:
                why = "not needed: no plan possible on its node"
            spared[v.job.id] = _spare_reason(v, why)
    # Protected jobs elsewhere matter when they would have been cheaper than the plan (or when
    # there is no plan): they explain why the obvious choice was not taken.
    ceiling = best[0][0] if best else inf
    for job_id, (protected_job, cost) in protected_seen.items():
        if job_id not in spared and cost <= ceiling + _EPS:
            spared[job_id] = _spare_reason(ctx.victim(protected_job), "")
    if best is None:
        counts: dict[str, int] = defaultdict(int)
        for cand in spared.values():
            counts[cand.reason.value] += 1
        summary = ", ".join(f"{n} {r}" for r, n in sorted(counts.items())) or "no running jobs"
        most = max(big_enough, key=lambda n: (free[n.name], n.name))
        return _make_plan(ctx, request, fits=False, nodes=(), victims=(),
                    spared=tuple(spared.values()), freed_gpus=0, total_cost=0.0,
                    blocked=f"no node can free {g} GPUs without touching protected jobs "
                    f"(most free: {free[most.name]} on {most.name}; candidates: {summary})")
    key, victims = best
    node = key[-1]
    victims.sort(key=lambda v: (v.cost, v.idkey))
    chosen = tuple(_candidate(v, Reason.CHOSEN, f"chosen (cost {v.cost:.0f})") for v in victims)
    return _make_plan(ctx, request, fits=False, nodes=(node,), victims=chosen,
                spared=tuple(spared.values()), freed_gpus=sum(v.on_node[node] for v in victims),
                total_cost=sum(v.cost for v in victims))


def _widest(ctx: _Context, usable: list[Node], free: dict[str, int], limit: int) -> list[Node]:
    """The `limit` nodes where the most GPUs could be had (free, or held by jobs the requester
    may preempt): a job that may span only so many nodes is planned on those alone."""
    exclude = ctx.exclude
    on = ctx.snapshot.running_on()

    def room(node: Node) -> tuple[int, str]:
        takeable = sum(len(job.allocation[node.name]) for job in on.get(node.name, ())
                       if job.id != exclude and ctx.quick_numbers(job)[1])  # fmt: skip
        return (-(free[node.name] + takeable), node.name)

    return sorted(usable, key=room)[:limit]


def _plan_multi(ctx: _Context, request: PreviewRequest, nodes: list[Node], free: dict[str, int]) -> Plan:
    g = request.gpus
    usable = [n for n in nodes if n.state.takes_work]
    limit = request.max_nodes
    if limit is not None and len(usable) > limit:
        usable = _widest(ctx, usable, free, limit)

    def take(freed_by_node: dict[str, int]) -> tuple[str, ...]:
        # Fewest nodes: the emptiest nodes first.
        avail = sorted(((free[n.name] + freed_by_node.get(n.name, 0), n.name) for n in usable),
                       key=lambda a: (-a[0], a[1]))
        picked, total = [], 0
        for count, name in avail:
            if total >= g or count == 0:
                break
            picked.append(name)
            total += count
        return tuple(sorted(picked))

    total_free = sum(free[n.name] for n in usable)
    if total_free >= g:
        return _make_plan(ctx, request, fits=True, nodes=take({}),
                    victims=(), spared=(), freed_gpus=0, total_cost=0.0)
    need = g - total_free
    by_node = _running_by_node(ctx, (n.name for n in usable))
    everyone = {v.job.id: v for vs in by_node.values() for v in vs}
    usable_names = {n.name for n in usable}

    def frees(v: _Victim) -> int:
        return sum(c for node, c in v.on_node.items() if node in usable_names)

    eligible: list[Share] = [(v.cost, frees(v), v.idkey, v.job.id) for v in everyone.values() if v.protected is None]
    greedy = greedy_cover(eligible, need)
    spared_list = [_spare_reason(v, "not needed") for v in everyone.values() if v.protected is not None]
    if greedy is None:
        freed = sum(share[1] for share in eligible)
        return _make_plan(ctx, request, fits=False, nodes=(), victims=(),
                    spared=tuple(_spare_reason(v, "not enough eligible GPUs to help") for v in everyone.values()),
                    freed_gpus=0, total_cost=0.0,
                    blocked=f"only {total_free + freed} of {g} GPUs could be freed without touching protected jobs")
    shares, freed = greedy
    picked = [everyone[share[3]] for share in shares]  # (cheapest first, then by id)
    picked_ids = {v.job.id for v in picked}
    spared_list += [_spare_reason(everyone[share[3]], "not needed: cheaper GPUs elsewhere")
                    for share in sorted(eligible, key=per_gpu_order) if share[3] not in picked_ids]  # fmt: skip
    freed_by_node: dict[str, int] = defaultdict(int)
    for v in picked:
        for node, count in v.on_node.items():
            freed_by_node[node] += count
    return _make_plan(ctx, request, fits=False, nodes=take(freed_by_node),
                victims=tuple(_candidate(v, Reason.CHOSEN, f"chosen (cost {v.cost:.0f})") for v in picked),
                spared=tuple(spared_list), freed_gpus=freed, total_cost=sum(v.cost for v in picked))


def _queue_standing(
    snapshot: Snapshot, request: PreviewRequest, cls: JobClass, priority: float
) -> QueueStanding | None:
    """The requester's queue and its rules, for a request its queue manager holds back (Kueue:
    a Workload waiting in a ClusterQueue the snapshot has); None where there are none to apply."""
    if request.admitted_by is None or request.queue is None:
        return None
    queue = snapshot.queue(request.queue)
    if queue is None:
        return None
    # Kueue compares Workload priorities: the request's own (a bump's new one), not gpuq's aged
    # one; an urgent request at gpuq's urgent priority (the bump writes the highest class)
    base = request.priority if request.priority is not None else cls.priority
    cohorts = snapshot.derived("policy.cohorts", lambda: {q.name: q.cohort for q in snapshot.queues})
    return QueueStanding(queue, priority if request.urgent else float(base), cohorts)


def plan_preemption(snapshot: Snapshot, policy: Policy, request: PreviewRequest, now: float) -> Plan:
    """Which running jobs `request` would preempt under `policy` at `now`, and why."""
    notes: list[str] = []
    priority = _requester_priority(snapshot, policy, request, now, notes)
    nodes = list(snapshot.nodes)
    largest = max((n.gpus for n in nodes), default=0)
    total = sum(n.gpus for n in nodes)
    if request.gpus > total or request.gpus <= 0:
        why = (f"asks for {request.gpus} GPUs but the cluster has {total} in all"
               if request.gpus > 0 else "asks for no GPUs")
        return Plan(request=request, effective_priority=priority, feasible=request.gpus <= 0,
                    fits_without_preemption=request.gpus <= 0, would_preempt=False, nodes=(), victims=(),
                    spared=(), freed_gpus=0, total_cost=0.0, blocked=why if request.gpus > 0 else None,
                    notes=tuple(notes))
    limit = request.max_nodes
    if limit is not None and request.gpus > largest * limit:
        # (the cluster's placement rule: a Kubernetes pod runs on one node, a Slurm job on the nodes it asked for)
        on = "one node" if limit == 1 else f"at most {limit} nodes"
        return Plan(request=request, effective_priority=priority, feasible=False, fits_without_preemption=False,
                    would_preempt=False, nodes=(), victims=(), spared=(), freed_gpus=0, total_cost=0.0,
                    blocked=f"asks for {request.gpus} GPUs on {on}, but the largest node has {largest}",
                    notes=tuple(notes))  # fmt: skip
    requester_class = class_of(snapshot, policy, request.job_class or "")
    standing = _queue_standing(snapshot, request, requester_class, priority)
    ctx = _Context(snapshot=snapshot, policy=policy, now=now, requester_priority=priority, exclude=request.job_id,
                   requester_class=requester_class, admitted_by=request.admitted_by, queue=standing)  # fmt: skip
    free = free_gpus(snapshot)
    if request.gpus <= largest:
        plan = _plan_single(ctx, request, nodes, free)
    else:
        plan = _plan_multi(ctx, request, nodes, free)
    if plan.blocked is not None and plan.feasible and ctx.requester_class.may_preempt == ():
        # (say the one reason that matters rather than every candidate's)
        plan = msgspec.structs.replace(
            plan, blocked=f"the cluster lets class {ctx.requester_class.name} preempt no job (it waits for free GPUs)")
    elif plan.blocked is not None and plan.feasible and standing is not None and standing.queue.preempts_nothing:
        queue = standing.queue
        rules = "withinClusterQueue: Never" + (", reclaimWithinCohort: Never" if queue.cohort else ", no cohort")
        blocked = f"the cluster lets it preempt no job: Kueue's ClusterQueue {queue.name} has {rules}"
        plan = msgspec.structs.replace(plan, blocked=f"{blocked} (it waits for free quota)")
    if notes:
        plan = msgspec.structs.replace(plan, notes=tuple(notes))
    return plan
