"""Victims for a blocked head: the policy engine's own choice, mostly computed on plain numbers.

The simulator asks `decide` only when a preemption is possible at all (the head outranks the
lowest possible victim by more than Δ). Single-node requests are then decided by the engine's
rule on the numbers `Simulator.arm` fixed at each job's start: one GPU by the cheapest single
victim (`cheapest_single`), more by the exact search the engine itself runs
(`cover.best_single_node`) over the nodes that can hold the optimum (`candidate_nodes`);
multi-node requests by the engine's greedy plan (`greedy_multi_node`). Without `fast_path` the
policy engine plans on a snapshot of the candidate nodes. With `check_fast_path` (the tests)
every decision is compared with the engine's on the whole cluster (`check_against_engine`).

The rules these apply are the kernel's (`gpuq.policy.kernel`, compiled with this module), through
`FastRules` on a SimJob's fields; the protections are the moment `FastRules.protection_end`
computed with the kernel.

A "no" is remembered (`block`, `still_blocked`): until a job starts that may be a victim at
once, the head changes, or — for a single-node request — jobs stop on a node that could then
hold it (`freed_node_holds`); protections that lapse and heads that age past a victim are
rechecks. With `check_fast_path` every remembered "no" is asked of `decide` again.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from heapq import heapify, heappop, heappush
from typing import TYPE_CHECKING, Final

from gpuq.model import JobIdKey
from gpuq.policy.cover import Item, best_single_node, greedy_cover
from gpuq.policy.kernel import aged_to, outranks
from gpuq.sim.cluster import emptiest_first
from gpuq.sim.convert import Why, for_job, model_job, planner_snapshot
from gpuq.sim.fastrules import FastRules
from gpuq.sim.jobs import RepCount, SimJob, first_tick_past, strictly_after
from gpuq.sim.planner import engine_planner

if TYPE_CHECKING:
    from gpuq.sim.simulator import Simulator

__all__ = [
    "Choice",
    "PerNode",
    "VictimIndex",
    "block",
    "candidate_nodes",
    "cheapest_single",
    "check_against_engine",
    "crossing",
    "decide",
    "exact_single_node",
    "freed_node_holds",
    "greedy_multi_node",
    "holding",
    "outranks_nobody",
    "scan",
    "still_blocked",
]

_INF: Final = math.inf

#: Victims for a blocked head, each with why, and the nodes the head should start on.
Choice = tuple[list[tuple[SimJob, Why]], tuple[str, ...]]
#: Per node index, its eligible victims as (cost, GPUs on the node, job); None on a node that
#: cannot hold the head (a list by index: a dict keyed by node boxes and hashes every index).
PerNode = list[list[tuple[float, int, SimJob]] | None]

#: A bound, not a rule: the slack only keeps a node whose lower bound ties the best plan's cost.
_SLACK: Final = 1e-5

#: Two costs this far apart (GPU-seconds) compare the same rounded to 6 decimals as the engine
#: rounds them (rounding moves each by at most 0.5e-6).
_NEAR: Final = 2e-6


class VictimIndex:
    """Possible victims (running, preemptible, not saving) counted per effective priority, and
    those priorities in a heap: the lowest one is all the quick checks need."""

    __slots__ = ("count", "reps")

    def __init__(self) -> None:
        self.count: dict[float, RepCount] = {}  # a key is in the heap exactly while it is here
        self.reps: list[float] = []

    def add(self, job: SimJob, running: int) -> None:
        """Count a running job at its effective priority (`running`: how many jobs run)."""
        count = self.count
        rep = job.rep
        counted = count.get(rep)
        if counted is None:
            counted = count[rep] = RepCount()
            heappush(self.reps, rep)
            if len(count) > 4 * running + 64:  # drop priorities nobody holds any more
                self.count = count = {r: c for r, c in count.items() if c.count or r == rep}
                self.reps = list(count)
                heapify(self.reps)
        counted.count += 1
        job.counted = counted

    def remove(self, job: SimJob) -> None:
        """No longer a possible victim (stopped, saving, or about to be counted anew)."""
        counted = job.counted
        if counted is not None:
            counted.count -= 1
            job.counted = None

    def lowest(self) -> float | None:
        """The lowest effective priority among possible victims (None: there are none)."""
        reps = self.reps
        count = self.count
        while reps:
            rep = reps[0]
            if count[rep].count:
                return rep
            del count[heappop(reps)]
        return None


def crossing(rules: FastRules, head: SimJob, victim_priority: float, now: float, running: Iterable[SimJob]) -> float:
    """The first tick after `now` at which an aging head outranks a victim of `victim_priority`
    by more than Δ as a requester (inf when it does not age; `running`: the jobs holding GPUs,
    for an urgent head's quota). The straight line's arithmetic may land a tick or so off; the
    kernel's own Δ trigger on the head's priority settles the tick, so the moment is the same
    whenever it is worked out."""
    delta = rules.delta
    threshold = victim_priority + delta
    unurgent = head.urgent and not rules.urgency_counts(head, running)
    if unurgent:
        # Over its tenant's quota an urgent head is ranked without its urgency, and that
        # priority ages from qs + max_wait (no aging event marks it: the queue ranks the job as
        # urgent).
        info = rules.cinfo[head.cls]
        if info.max_wait is None or info.rate <= 0:
            return _INF
        line = aged_to(head.priority, head.qs + info.max_wait, info.rate, threshold)
        when = strictly_after(max(line, now))
    else:
        head_rate = rules.rate_now(head)
        if head_rate <= 0:
            return _INF
        head_ep = rules.queued_priority(head, now)
        when = strictly_after(max(aged_to(head_ep, now, head_rate, threshold), now))
    return first_tick_past(when, now, lambda t: outranks(_ranked(rules, head, t, unurgent), victim_priority, delta))


def _ranked(rules: FastRules, head: SimJob, when: float, unurgent: bool) -> float:
    """The head's priority as a requester at `when`, its urgency counted or not."""
    return rules.unurgent_priority(head, when) if unurgent else rules.queued_priority(head, when)


def holding(sim: Simulator) -> Iterable[SimJob]:
    """The jobs holding GPUs, as the engine counts a tenant's urgent GPUs: the running ones and
    those an operator suspended (`Simulator.held`: they keep their GPUs)."""
    if not sim.held:
        return sim.running.values()
    return [*sim.running.values(), *[sim.jobs[job_id] for job_id in sim.held]]


def _single_key(cost: float, job: SimJob) -> tuple[float, float, float, JobIdKey]:
    """The engine's order of single victims: cost to 6 decimals, priority, later start, id (its
    last tie-break, the node, never decides: no two jobs share an id)."""
    return (round(cost, 6), job.rep, -job.began, job.idkey)


def scan(sim: Simulator, head: SimJob, head_ep: float, now: float) -> tuple[list[SimJob], float]:
    """Running jobs the head may preempt now; and the next time that may change.

    `rules.protection` on the numbers `_arm` fixed at each job's start: not saving for a
    graceful preemption, a preemptible class, outranked by more than Δ (`rules.outranks`), and
    past the end of its time-limited protections (`FastRules.protection_end`).
    """
    delta = sim.rules.delta
    eligible: list[SimJob] = []
    unlock = _INF
    nearest = _INF  # the lowest priority among those it does not outrank (yet)
    # (over a list of them: compiled, each step through the dict itself builds a tuple)
    for job in list(sim.running.values()):
        if job.counted is None:  # (saving for a graceful preemption, or of a class not preemptible)
            continue
        job_ep = job.rep
        if not outranks(head_ep, job_ep, delta):
            if job_ep < nearest:
                nearest = job_ep
            continue
        prot = job.prot if job.prot >= 0 else sim.rules.prot_of(job, now)
        if prot > now:
            if prot < unlock:
                unlock = prot
            continue
        eligible.append(job)
    if nearest < _INF:  # (an aging head passes the lowest of them first)
        unlock = min(unlock, crossing(sim.rules, head, nearest, now, holding(sim)))
    return eligible, unlock


def cheapest_single(sim: Simulator, head_ep: float, now: float) -> tuple[SimJob, float] | None:
    """The engine's choice for a one-GPU request when no GPU is free: the single eligible
    victim with the least (cost, priority, -start, id, node) — any larger set costs more.

    Running jobs are kept in start order; when lost work is simply GPUs × run time, a job
    started earlier than the best found so far cannot be cheaper, so the scan stops early.
    """
    rules = sim.rules
    delta = rules.delta
    lw, pw = rules.lw, rules.pw
    early = pw == 0 and lw > 0 and sim.ckpt_running == 0 and rules.default_ckpt <= 0
    best: SimJob | None = None
    best_cost = 0.0
    for job in reversed(sim.running.values()):
        start: float = job.run_start  # type: ignore[assignment]
        if early and best is not None and lw * (now - start) > best_cost + _NEAR:
            break
        job_ep = job.rep
        if job.counted is None or not outranks(head_ep, job_ep, delta):
            continue
        if (job.prot if job.prot >= 0 else sim.rules.prot_of(job, now)) > now:
            continue
        cost = rules.cost(job, now)
        # Costs further apart than _NEAR order the same rounded (rounding is slow); nearer
        # ones are ordered by the engine's whole key.
        if best is None or cost < best_cost - _NEAR or (
            cost <= best_cost + _NEAR and _single_key(cost, job) < _single_key(best_cost, best)
        ):
            best, best_cost = job, cost
    return None if best is None else (best, best_cost)


def _per_gpu_cost(item: tuple[float, int, SimJob]) -> float:
    return item[0] / item[1]


def candidate_nodes(sim: Simulator, eligible: list[SimJob], need_gpus: int, now: float) -> tuple[list[int], PerNode]:
    """Nodes that can hold the optimum: enough eligible GPUs, and a cost lower bound (the
    engine's own: missing GPUs × cheapest cost per GPU) no higher than the best greedy plan.
    Also, per node that has enough eligible GPUs, its eligible victims as (cost, GPUs on the
    node, job)."""
    free_n = sim.gpus.free_n
    count = len(free_n)
    extra = [0] * count
    touched: list[int] = []  # (the nodes with eligible victims: most hold none)
    for job in eligible:
        for i, n in job.place:
            have = extra[i]
            if not have:
                touched.append(i)
            extra[i] = have + n
    usable = [i for i in touched if free_n[i] + extra[i] >= need_gpus]
    if not usable:
        return [], []
    fits = [False] * count
    for i in usable:
        fits[i] = True
    rules = sim.rules
    per_node: PerNode = [None] * count
    for job in eligible:
        cost = -1.0
        for i, n in job.place:
            if fits[i]:
                if cost < 0:  # costs only for jobs that matter
                    cost = rules.cost(job, now)
                listed = per_node[i]
                if listed is None:
                    per_node[i] = [(cost, n, job)]
                else:
                    listed.append((cost, n, job))
    # A node can hold the optimum only if its lower bound is within the cheapest greedy plan of
    # any node (`best_upper`; every plan costs at least its node's bound). Any order of looking
    # finds that cheapest plan while it skips the nodes whose bound is above the best so far:
    # the node of the least bound first, the others as they come (no sort of the bounds).
    lowers: list[float] = []
    first, first_lower = usable[0], _INF
    for i in usable:
        items = per_node[i]
        assert items is not None  # (every usable node holds an eligible victim)
        cheapest = items[0]  # (the first of the least cost per GPU)
        for item in items:
            if item[0] / item[1] < cheapest[0] / cheapest[1]:
                cheapest = item
        lower = (need_gpus - free_n[i]) * cheapest[0] / cheapest[1]
        lowers.append(lower)
        if lower < first_lower:
            first, first_lower = i, lower
    first_items = per_node[first]
    assert first_items is not None
    best_upper = _greedy_upper(first_items, need_gpus - free_n[first])
    for k, i in enumerate(usable):
        if i != first and lowers[k] <= best_upper + _SLACK:
            items = per_node[i]
            assert items is not None
            upper = _greedy_upper(items, need_gpus - free_n[i])
            if upper < best_upper:
                best_upper = upper
    bound = best_upper + _SLACK
    return sorted([i for k, i in enumerate(usable) if lowers[k] <= bound]), per_node


def _greedy_upper(items: list[tuple[float, int, SimJob]], need: int) -> float:
    """The cost of the greedy plan on one node: its victims in order of cost per GPU (`items`
    sorted so, in place) until `need` GPUs are freed."""
    if len(items) > 1:
        items.sort(key=_per_gpu_cost)
    upper, freed = 0.0, 0
    for cost, n, _ in items:
        if freed >= need:
            break
        upper += cost
        freed += n
    return upper


def exact_single_node(sim: Simulator, head: SimJob, nodes: list[int], per_node: PerNode, now: float) -> Choice | None:
    """The engine's single-node choice (`cover.best_single_node`) on plain numbers."""
    gpus = sim.gpus
    candidates: list[tuple[str, int, list[Item]]] = []
    for i in nodes:
        there = per_node[i]
        assert there is not None  # (`candidate_nodes` lists its victims on every node it names)
        victims: list[Item] = [(cost, job.idkey, n, job.rep, job.began, job.id)
                               for cost, n, job in there]  # fmt: skip
        candidates.append((gpus.names[i], head.gpus - gpus.free_n[i], victims))
    found = best_single_node(candidates)
    choice: Choice | None = None
    if found is not None:
        items, node = found
        items.sort()  # the engine lists victims by cost, then id (ids are unique: nothing after decides)
        running = sim.running
        choice = ([(running[item[5]], item[0]) for item in items], (node,))
    if sim.check_fast_path:
        check_against_engine(sim, head, now, choice)
    return choice


def greedy_multi_node(sim: Simulator, head: SimJob, eligible: list[SimJob], now: float) -> Choice:
    """The engine's multi-node plan (`engine._plan_multi`: the greedy plan of `cover.greedy_cover`)
    on plain numbers; the caller has made sure the eligible victims free enough GPUs. The job
    goes to the nodes with the most free GPUs. Every node takes work in the simulator, so a victim
    frees all its GPUs."""
    gpus = sim.gpus
    rules = sim.rules
    greedy = greedy_cover([(rules.cost(job, now), job.gpus, job.idkey, job.id) for job in eligible],
                          head.gpus - gpus.total_free)  # fmt: skip
    assert greedy is not None  # (the caller has made sure)
    running = sim.running
    picked = [(share[0], running[share[3]]) for share in greedy[0]]  # (cheapest first, then by id)
    free_after = list(gpus.free_n)
    for _, job in picked:
        for i, n in job.place:
            free_after[i] = free_after[i] + n
    nodes: list[str] = []
    total = 0
    for i in emptiest_first(free_after, gpus.per_node):  # (by free GPUs, then name: the engine's order)
        if total >= head.gpus:
            break
        nodes.append(gpus.names[i])
        total += free_after[i]
    choice: Choice = ([(job, cost) for cost, job in picked], tuple(sorted(nodes)))
    if sim.check_fast_path:
        check_against_engine(sim, head, now, choice)
    return choice


def outranks_nobody(sim: Simulator, head: SimJob) -> bool:
    """True when no running job is a victim for `head` and none can become one by time alone
    (the head does not age, no queued job ages past it): a cheap, certain "no"."""
    if head.urgent or head.aging or sim.queue.aging_groups:
        return False
    lowest = sim.victims.lowest()
    return lowest is None or not outranks(head.priority, lowest, sim.rules.delta)


def block(sim: Simulator, head: SimJob) -> None:
    """Remember that the engine said no to `head` as things are (every node looked at)."""
    sim.blocked = (head.id, head.qver, sim.rver)
    sim.freed.clear()


def still_blocked(sim: Simulator, head: SimJob) -> bool:
    """Whether `head` is known to be stuck as things are: the engine said no to it, nothing
    has started since that may be a victim now, and — for a single-node request — no node
    where jobs stopped since can hold it now with its possible victims (the other nodes
    could not then and have not changed; their protections' ends are rechecks)."""
    told = sim.blocked  # (compared a field at a time: a tuple built to compare goes through the interpreter)
    if told is None or told[1] != head.qver or told[2] != sim.rver or told[0] != head.id:
        return False
    blocked = not sim.freed or (sim.fast_path and not freed_node_holds(sim, head))
    if blocked:
        sim.freed.clear()
        if sim.check_fast_path:  # (test hook: the engine must still say no)
            assert decide(sim, head, sim.now)[0] is None, f"job {head.id} is not blocked at {sim.now}"  # noqa: S101
    return blocked


def freed_node_holds(sim: Simulator, head: SimJob) -> bool:
    """Whether a node where jobs stopped since the head was last refused (`Simulator.freed`)
    could now hold it, free GPUs and possible victims together (`scan`'s conditions): the
    one way a single-node request refused before may be granted without anything starting
    (a multi-node request: always True, the free GPUs of every node count)."""
    need = head.gpus
    if need > sim.gpus.per_node:
        return True
    rules = sim.rules
    now = sim.now
    head_ep = rules.requester_priority(head, now, holding(sim))
    delta = rules.delta
    free_n = sim.gpus.free_n
    for i in sim.freed:
        room = free_n[i]
        for job, n in sim.on_node[i].items():
            if job.counted is not None and outranks(head_ep, job.rep, delta) and sim.rules.prot_of(job, now) <= now:
                room += n
        if room >= need:
            return True
    return False


def decide(sim: Simulator, head: SimJob, now: float) -> tuple[Choice | None, float]:
    """Victims for a blocked head (None when there are none now) and when to ask again."""
    rules = sim.rules
    head_ep = rules.requester_priority(head, now, holding(sim))
    lowest = sim.victims.lowest()
    if lowest is None:
        return None, _INF
    if not outranks(head_ep, lowest, rules.delta):  # nobody running is low enough
        return None, crossing(rules, head, lowest, now, holding(sim))
    gpus = sim.gpus
    need = head.gpus
    if need == 1 and sim.fast_path:
        found = cheapest_single(sim, head_ep, now)
        if found is not None:
            victim, cost = found
            single: Choice = ([(victim, cost)], (min(victim.alloc),))
            if sim.check_fast_path:
                check_against_engine(sim, head, now, single)
            return single, _INF
    eligible, unlock = scan(sim, head, head_ep, now)
    if need > gpus.per_node:
        if gpus.total_free + sum(j.gpus for j in eligible) < need:
            return None, unlock
        if sim.fast_path:
            return greedy_multi_node(sim, head, eligible, now), unlock
        nodes = list(range(len(gpus.names)))
    else:
        nodes, per_node = candidate_nodes(sim, eligible, need, now)
        if not nodes:
            return None, unlock
        if sim.fast_path:
            return exact_single_node(sim, head, nodes, per_node, now), unlock
        if head.urgent:  # (the engine counts the tenant's urgent GPUs in what it is shown: show it all)
            nodes = list(range(len(gpus.names)))
    sim.plans += 1
    snapshot = planner_snapshot(sim, head, now, nodes)
    planned = sim.planner(snapshot, rules.policy, model_job(head, now), now)
    choice: Choice | None = None
    if planned is not None:
        running = sim.running
        choice = ([(running[v], for_job(head.id, planned.details.get(v, ""))) for v in planned.victims
                   if v in running], planned.nodes)  # fmt: skip
    if sim.check_fast_path and len(nodes) < len(gpus.names):
        check_against_engine(sim, head, now, choice)
    return choice, unlock


def check_against_engine(sim: Simulator, head: SimJob, now: float, choice: Choice | None) -> None:
    """Test hook: shortcuts (fast paths, fewer nodes) must choose exactly what the engine
    chooses on the whole cluster."""
    snapshot = planner_snapshot(sim, head, now, range(len(sim.gpus.names)))
    engine = engine_planner(snapshot, sim.rules.policy, model_job(head, now), now)
    got = None if choice is None else ({job.id for job, _ in choice[0]}, choice[1])
    want = None if engine is None else (set(engine.victims), engine.nodes)
    if got != want:
        raise AssertionError(f"fast path chose {got}, the engine {want} for job {head.id} at {now}")
