"""Victim choice: which running jobs a request would preempt, and why each candidate was spared.

Pure: takes (snapshot, policy, request, now) and returns a Plan; never reads the clock.

- Single-node requests (at most the GPUs of the largest node) get the exact minimum-cost victim
  set over all nodes, with the tie-breaks of the policy model. Each node has at most a few dozen
  jobs, so an exhaustive branch-and-bound over minimal covers per node is cheap; nodes are visited
  in order of a cost lower bound so that large clusters examine only a handful, and on large
  clusters only the nodes whose bound can matter are costed at all (`_PrunedOrder`).
- Multi-node requests get a valid cost-greedy plan: cheapest GPUs first, then redundant victims
  dropped, most expensive first.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, cast

from gpuq.model import Job, JobClass, JobState, Node, Snapshot
from gpuq.policy.config import Policy
from gpuq.policy.cover import Best, Item, search_node
from gpuq.policy.rules import (
    Reason,
    effective_priority,
    gpu_seconds_lost,
    loss_start,
    protection,
)

__all__ = [
    "Candidate",
    "Plan",
    "Reason",
    "Request",
    "class_of",
    "free_gpus",
    "plan_preemption",
    "request_for_job",
]

_EPS = 1e-6


@dataclass(frozen=True, slots=True)
class Request:
    """What the requester needs. `priority` None means the class's default priority."""

    gpus: int
    priority: int | None = None
    job_class: str | None = None
    tenant: str | None = None
    urgent: bool = False
    job_id: str | None = None
    queued_since: float | None = None


@dataclass(frozen=True, slots=True)
class Candidate:
    job_id: str
    reason: Reason
    detail: str
    nodes: tuple[str, ...]
    gpus: int
    gpu_seconds_lost: float
    cost: float
    effective_priority: float

    def to_dict(self) -> dict[str, Any]:
        if self.reason is Reason.CHOSEN:
            return {
                "id": self.job_id,
                "nodes": list(self.nodes),
                "gpus": self.gpus,
                "gpu_seconds_lost": round(self.gpu_seconds_lost, 3),
                "cost": round(self.cost, 3),
                "effective_priority": self.effective_priority,
                "reason": self.reason.value,
                "detail": self.detail,
            }
        return {"id": self.job_id, "reason": self.reason.value, "detail": self.detail}


@dataclass(frozen=True, slots=True)
class Plan:
    request: Request
    effective_priority: float
    feasible: bool
    fits_without_preemption: bool
    would_preempt: bool
    nodes: tuple[str, ...]
    victims: tuple[Candidate, ...]
    spared: tuple[Candidate, ...]
    freed_gpus: int
    total_cost: float
    blocked: str | None = None
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The `gpuq preview -o json` document (stable interface)."""
        return {
            "would_preempt": self.would_preempt,
            "fits_without_preemption": self.fits_without_preemption,
            "feasible": self.feasible,
            "request": {
                "job_id": self.request.job_id,
                "gpus": self.request.gpus,
                "priority": self.request.priority,
                "class": self.request.job_class,
                "tenant": self.request.tenant,
                "urgent": self.request.urgent,
                "effective_priority": self.effective_priority,
            },
            "nodes": list(self.nodes),
            "victims": [v.to_dict() for v in self.victims],
            "spared": [s.to_dict() for s in self.spared],
            "freed_gpus": self.freed_gpus,
            "total_cost": round(self.total_cost, 3),
            "blocked": self.blocked,
            "notes": list(self.notes),
        }


def class_of(snapshot: Snapshot, policy: Policy, name: str) -> JobClass:
    return policy.resolve_class(snapshot.job_class(name), name)


def free_gpus(snapshot: Snapshot) -> dict[str, int]:
    """Free GPUs per node that takes work (down/draining nodes are left out)."""
    used = snapshot.used_gpus()
    return {n.name: max(0, n.gpus - used.get(n.name, 0)) for n in snapshot.nodes if n.state.takes_work}


def request_for_job(job: Job) -> Request:
    return Request(
        gpus=job.gpus,
        priority=job.priority,
        job_class=job.job_class,
        tenant=job.tenant,
        urgent=job.urgent,
        job_id=job.id,
        queued_since=job.queued_since if job.state is JobState.PENDING else None,
    )


@dataclass(slots=True)
class _Victim:
    """A running job considered as a victim, with its numbers computed once."""

    job: Job
    cost: float
    lost: float
    priority: float
    protected: tuple[Reason, str] | None
    on_node: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class _Context:
    snapshot: Snapshot
    policy: Policy
    now: float
    requester_priority: float
    exclude: str | None
    classes: dict[str, JobClass] = field(default_factory=dict)
    victims: dict[str, _Victim] = field(default_factory=dict)
    quick: dict[str, tuple[float, bool]] = field(default_factory=dict)
    fast_rules: bool = False

    def __post_init__(self) -> None:
        # Without min-runtime and cap rules, a job is protected only by exemption, class or delta.
        self.fast_rules = self.policy.min_runtime_s <= 0 and self.policy.max_preemptions_per_day <= 0

    def cls(self, name: str) -> JobClass:
        found = self.classes.get(name)
        if found is None:
            found = self.classes[name] = class_of(self.snapshot, self.policy, name)
        return found

    def running_priority(self, job: Job) -> float:
        """A victim's effective priority; cheap when its class does not age."""
        if job.urgent:
            return float(self.policy.urgent_priority)
        cls = self.cls(job.job_class)
        start, max_wait = job.start_time, cls.max_wait_s
        if max_wait is None or start is None or start - job.queued_since <= max_wait:
            return float(job.priority)  # earned no aging before it started
        return effective_priority(job, cls, self.policy, self.now)

    def quick_numbers(self, job: Job) -> tuple[float, bool]:
        """(cost, unprotected) for a running job, without building a _Victim."""
        found = self.quick.get(job.id)
        if found is None:
            policy = self.policy
            priority = self.running_priority(job)
            cost = policy.lost_work_weight * gpu_seconds_lost(job, policy, self.now)
            if policy.priority_weight:
                cost += policy.priority_weight * priority
            if job.exempt_until is None and self.fast_rules and self.cls(job.job_class).preemptible:
                # Only the priority gap can protect it; the reason's sentence is built later,
                # for the few protected jobs a plan lists.
                ok = self.requester_priority - priority > policy.delta
            else:
                ok = protection(job, self.cls(job.job_class), self.requester_priority, policy, self.now) is None
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
                protected=None
                if unprotected
                else protection(job, self.cls(job.job_class), self.requester_priority, self.policy, self.now),
                on_node={node: len(idx) for node, idx in job.allocation.items()},
            )
            self.victims[job.id] = found
        return found


def _requester_priority(
    snapshot: Snapshot, policy: Policy, request: Request, now: float, notes: list[str]
) -> float:
    cls = class_of(snapshot, policy, request.job_class or "")
    base = request.priority if request.priority is not None else cls.priority
    as_job = Job(
        id=request.job_id or "<request>",
        name="",
        user="",
        tenant=request.tenant or "",
        job_class=cls.name,
        priority=base,
        state=JobState.PENDING,
        submit_time=request.queued_since if request.queued_since is not None else now,
        gpus=request.gpus,
    )
    without_urgency = effective_priority(as_job, cls, policy, now)
    if not request.urgent:
        return without_urgency
    tenant = request.tenant or ""
    if policy.tenant_urgent_quota(tenant) > 0:
        held = sum(
            j.gpus
            for j in snapshot.jobs
            if j.urgent and j.holds_gpus and j.tenant == request.tenant and j.id != request.job_id
        )
        if policy.exceeds_urgent_quota(tenant, held, request.gpus):
            notes.append(
                f"tenant {request.tenant} already holds {held} urgent GPUs; {request.gpus} more exceed "
                f"its urgent quota of {policy.tenant_urgent_quota(tenant)}, so the request counts at "
                f"priority {without_urgency:g}, not as urgent"
            )
            return without_urgency
    return float(policy.urgent_priority)


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
    return (v.cost, v.job.id, v.on_node[node], v.priority, v.job.start_time or 0.0)


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
    request: Request,
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


def _loss_order(snapshot: Snapshot, policy: Policy) -> tuple[tuple[float, str], ...]:
    """Nodes holding running jobs, as (latest `loss_start` of their jobs, node), most recent first.

    Every running job on a node costs at least `lost_work_weight × (now − that moment)` per GPU it
    holds there. Kept on the snapshot per sign of the default checkpoint interval, the only part
    of the policy `loss_start` reads.
    """

    def build() -> tuple[tuple[float, str], ...]:
        order = sorted(
            (-max(loss_start(job, policy) for job in jobs), name) for name, jobs in snapshot.running_on().items()
        )
        return tuple((-neg, name) for neg, name in order)

    return snapshot.derived(("engine.loss_order", policy.default_checkpoint_interval_s > 0), build)


class _PrunedOrder:
    """Nodes in ascending order of the exact lower bound, computing bounds only where needed.

    `_loss_order` gives a cheaper, weaker bound per node (need × cost per GPU ≥ its lower
    bound); nodes are pulled in that order into a heap keyed by the exact bound, and a node
    leaves the heap only when every node whose weak bound is not above its exact bound has been
    pulled. The sequence is exactly that of sorting every node's exact bound, so the search and its
    tie-breaks are unchanged; only nodes that cannot matter are never costed. Valid when the cost
    is lost work alone (`priority_weight` 0).
    """

    def __init__(self, order: list[tuple[float, str]], need_min: int) -> None:
        self.order = order  # (weak cost per GPU, node), ascending
        self.need_min = need_min
        self.next = 0
        self.visited: set[str] = set()

    @classmethod
    def build(cls, ctx: _Context, candidates: list[Node], free: dict[str, int], g: int) -> _PrunedOrder | None:
        policy = ctx.policy
        lw = policy.lost_work_weight
        if policy.priority_weight != 0 or lw < 0:
            return None
        now = ctx.now
        wanted = {n.name for n in candidates}
        order = [
            (lw * (now - latest) if now > latest else 0.0, name)
            for latest, name in _loss_order(ctx.snapshot, policy)
            if name in wanted
        ]
        need_min = max(1, g - max(free[n.name] for n in candidates))
        return cls(order, need_min)

    def _cost_next(self, bound: Callable[[str], tuple[float, str, int]]) -> tuple[float, str, int]:
        """Cost the next node in weak-bound order."""
        name = self.order[self.next][1]
        self.next += 1
        self.visited.add(name)
        return bound(name)

    def ascending(self, bound: Callable[[str], tuple[float, str, int]]) -> Iterator[tuple[float, str, int]]:
        heap: list[tuple[float, str, int]] = []
        order, need_min = self.order, self.need_min
        while True:
            if not heap:
                if self.next >= len(order):
                    return
                heapq.heappush(heap, self._cost_next(bound))
                continue
            top = heap[0][0]
            # (a hair of slack: pulling one node too many is harmless, one too few is not)
            limit = top * (1 + 1e-9) + 1e-9
            if self.next < len(order) and need_min * order[self.next][0] <= limit:
                heapq.heappush(heap, self._cost_next(bound))
                continue
            yield heapq.heappop(heap)

    def visit_up_to(self, ceiling: float, bound: Callable[[str], tuple[float, str, int]]) -> None:
        """Cost every node that may hold a protected job costing at most `ceiling`."""
        order = self.order
        limit = ceiling * (1 + 1e-9) + _EPS
        while self.next < len(order) and order[self.next][0] <= limit:
            self._cost_next(bound)

    def in_node_order(
        self, candidates: list[Node], on: Mapping[str, tuple[Job, ...]], seen: dict[str, tuple[Job, float]]
    ) -> dict[str, tuple[Job, float]]:
        """`seen` in the order a scan of every node (in snapshot order) would have found them."""
        ordered: dict[str, tuple[Job, float]] = {}
        for node in candidates:
            if node.name in self.visited:
                for job in on.get(node.name, ()):
                    found = seen.get(job.id)
                    if found is not None and job.id not in ordered:
                        ordered[job.id] = found
        return ordered


def _plan_single(ctx: _Context, request: Request, nodes: list[Node], free: dict[str, int]) -> Plan:
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
    # `_PrunedOrder` costs only the nodes that can matter.
    on = ctx.snapshot.running_on()
    numbers = ctx.quick_numbers
    inf = float("inf")
    protected_seen: dict[str, tuple[Job, float]] = {}
    # The commonest victim (not urgent or exempt, no checkpoint interval, earned no aging, under
    # only the delta rule) is costed right here; anything else goes through quick_numbers.
    quick, classes = ctx.quick, ctx.classes
    now, policy, exclude = ctx.now, ctx.policy, ctx.exclude
    lw, pw, delta, requester = policy.lost_work_weight, policy.priority_weight, policy.delta, ctx.requester_priority
    simple = ctx.fast_rules and policy.default_checkpoint_interval_s <= 0

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
                if simple and not job.urgent and job.exempt_until is None and job.checkpoint_interval_s is None:
                    cls = classes.get(job.job_class) or ctx.cls(job.job_class)
                    start, max_wait = job.start_time, cls.max_wait_s
                    if cls.preemptible and start is not None and (
                        max_wait is None or start - job.queued_since <= max_wait
                    ):
                        priority = float(job.priority)
                        saved = job.last_checkpoint_time
                        since = start if saved is None or saved < start else saved
                        cost = lw * job.gpus * (now - since if now > since else 0.0)
                        if pw:
                            cost += pw * priority
                        hit = quick[job_id] = (cost, requester - priority > delta)
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

    pruned = _PrunedOrder.build(ctx, big_enough, free, g) if len(big_enough) > _PRUNE_MIN_NODES else None
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
        best = (search.key, [ctx.victims[item[1]] for item in items])

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
    victims.sort(key=lambda v: (v.cost, v.job.id))
    chosen = tuple(_candidate(v, Reason.CHOSEN, f"chosen (cost {v.cost:.0f})") for v in victims)
    return _make_plan(ctx, request, fits=False, nodes=(node,), victims=chosen,
                spared=tuple(spared.values()), freed_gpus=sum(v.on_node[node] for v in victims),
                total_cost=sum(v.cost for v in victims))


def _plan_multi(ctx: _Context, request: Request, nodes: list[Node], free: dict[str, int]) -> Plan:
    g = request.gpus
    usable = [n for n in nodes if n.state.takes_work]

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

    eligible = sorted((v for v in everyone.values() if v.protected is None),
                      key=lambda v: (v.cost / frees(v), -frees(v), v.job.id))
    picked: list[_Victim] = []
    freed = 0
    for v in eligible:
        if freed >= need:
            break
        picked.append(v)
        freed += frees(v)
    spared_list = [_spare_reason(v, "not needed") for v in everyone.values() if v.protected is not None]
    if freed < need:
        return _make_plan(ctx, request, fits=False, nodes=(), victims=(),
                    spared=tuple(_spare_reason(v, "not enough eligible GPUs to help") for v in everyone.values()),
                    freed_gpus=0, total_cost=0.0,
                    blocked=f"only {total_free + freed} of {g} GPUs could be freed without touching protected jobs")
    # Drop victims that turned out redundant, most expensive first.
    for v in sorted(picked, key=lambda v: (-v.cost, v.job.id)):
        if freed - frees(v) >= need:
            picked.remove(v)
            freed -= frees(v)
    picked_ids = {v.job.id for v in picked}
    spared_list += [_spare_reason(v, "not needed: cheaper GPUs elsewhere")
                    for v in eligible if v.job.id not in picked_ids]
    freed_by_node: dict[str, int] = defaultdict(int)
    for v in picked:
        for node, count in v.on_node.items():
            freed_by_node[node] += count
    picked.sort(key=lambda v: (v.cost, v.job.id))
    return _make_plan(ctx, request, fits=False, nodes=take(freed_by_node),
                victims=tuple(_candidate(v, Reason.CHOSEN, f"chosen (cost {v.cost:.0f})") for v in picked),
                spared=tuple(spared_list), freed_gpus=freed, total_cost=sum(v.cost for v in picked))


def plan_preemption(snapshot: Snapshot, policy: Policy, request: Request, now: float) -> Plan:
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
    ctx = _Context(snapshot=snapshot, policy=policy, now=now, requester_priority=priority, exclude=request.job_id)
    free = free_gpus(snapshot)
    if request.gpus <= largest:
        plan = _plan_single(ctx, request, nodes, free)
    else:
        plan = _plan_multi(ctx, request, nodes, free)
    if notes:
        plan = replace(plan, notes=tuple(notes))
    return plan
