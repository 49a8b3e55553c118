"""Victim choice on plain numbers: the one search the engine and the simulator share.

A request that fits on one node gets the exact choice: over the candidate nodes, the victim set
of least key

    (total cost, number of victims, highest victim priority, −Σ start times, sorted ids, node)

(policy model, "Victim choice"; costs rounded to 6 decimals so float sums compare stably; ids
compare in gpuq's one job-id order, `model.job_id_key`). The
policy engine wraps it with protections and explanations; the simulator calls it directly in its
hot loop, on numbers it keeps up to date, so both always pick the same victims.

A request larger than any node gets the greedy plan (`greedy_cover`): victims in order of cost per
GPU freed until enough GPUs are free, then the ones that turned out redundant dropped, most
expensive first (policy model, "Victim choice").
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from gpuq.model import JobIdKey

__all__ = ["Best", "Item", "Share", "best_single_node", "greedy_cover", "per_gpu_order", "search_node"]

_EPS = 1e-6
_INF = float("inf")

#: (cost, job-id key, GPUs the job holds on this node, effective priority, start time, job id)
Item = tuple[float, JobIdKey, int, float, float, str]
#: (cost, GPUs preempting the job frees where the request may run, job-id key, job id)
Share = tuple[float, int, JobIdKey, str]


class Best:
    """The least key found so far, over all nodes, and the cost bound it sets."""

    __slots__ = ("key", "choice", "limit")

    def __init__(self) -> None:
        self.key: tuple[object, ...] | None = None
        self.choice: tuple[list[Item], str] | None = None
        self.limit = _INF


def _consider(best: Best, chosen: list[Item], node: str, cost: float, top: float, starts: float) -> None:
    """Keep `chosen` (its costs summing to `cost`, in order; highest priority `top`; start times
    summing to `starts`) if its key is the least so far. The ids are sorted only for a set whose
    other fields do not already lose."""
    head = (round(cost, 6), len(chosen), top, -starts)
    known = best.key
    if known is not None and head > known[:4]:
        return
    key = (*head, tuple(sorted([item[1] for item in chosen])), node)
    if known is None or key < known:
        best.key, best.choice = key, (list(chosen), node)
        best.limit = min(best.limit, head[0])


def search_node(node: str, need: int, eligible: Sequence[Item], best: Best) -> None:
    """Every set of victims on `node` that just covers `need` GPUs, pruned by cost (as the engine)."""
    items = sorted(eligible)  # by (cost, id key): ids are unique, so the later fields never decide
    count = len(items)
    if count == 1:  # (the common case: one set, if that)
        item = items[0]
        if item[2] >= need and not item[0] > best.limit + _EPS:
            _consider(best, items, node, item[0], item[3], item[4])
        return
    suffix = [0] * (count + 1)
    total = 0
    for i in range(count - 1, -1, -1):
        total += items[i][2]
        suffix[i] = total
    if total < need:
        return
    if total == need:
        # Every victim must go (a whole node, say): the one set that covers, with the pruning
        # the search below would apply on its way to it, without a call per victim.
        cost, top, starts = 0.0, -_INF, 0.0
        for item in items:
            item_cost = item[0]
            if cost + item_cost > best.limit + _EPS:
                return
            cost += item_cost
            rep = item[3]
            top = rep if rep > top else top
            starts += item[4]
        _consider(best, items, node, cost, top, starts)
        return
    chosen: list[Item] = []

    # The key's sums and maximum are carried down the recursion (no pass over `chosen` per set).
    def search(i: int, freed: int, cost: float, top: float, starts: float) -> None:
        if freed >= need:
            _consider(best, chosen, node, cost, top, starts)
            return
        if i == count or freed + suffix[i] < need:
            return
        item = items[i]
        item_cost = item[0]
        if cost + item_cost > best.limit + _EPS:  # sorted by cost: no later item is cheaper
            return
        chosen.append(item)
        rep = item[3]
        search(i + 1, freed + item[2], cost + item_cost, rep if rep > top else top,
               starts + item[4])  # fmt: skip
        chosen.pop()
        search(i + 1, freed, cost, top, starts)

    search(0, 0, 0.0, -_INF, 0.0)
    search = _searched  # (it refers to itself: the cycle would outlive the call where gc is off)


def _searched(i: int, freed: int, cost: float, top: float, starts: float) -> None:
    """What `search_node`'s recursive search is set to once it is done."""


def best_single_node(nodes: Iterable[tuple[str, int, Sequence[Item]]]) -> tuple[list[Item], str] | None:
    """The least-key victim set over `(node, GPUs missing there, eligible victims there)`."""
    best = Best()
    for node, need, eligible in nodes:
        search_node(node, need, eligible, best)
    return best.choice


def per_gpu_order(share: Share) -> tuple[float, int, JobIdKey]:
    """The greedy plan's order: cheapest per GPU freed, then more GPUs, then job id."""
    return (share[0] / share[1], -share[1], share[2])


def _dearest(share: Share) -> tuple[float, JobIdKey]:
    return (-share[0], share[2])


def _cheapest(share: Share) -> tuple[float, JobIdKey]:
    return (share[0], share[2])


def greedy_cover(eligible: Iterable[Share], need: int) -> tuple[list[Share], int] | None:
    """The victims of the greedy plan that frees `need` GPUs, cheapest first (then by id), and
    the GPUs they free; None when all of `eligible` (each freeing at least one GPU) free too few."""
    ordered = sorted(eligible, key=per_gpu_order)
    picked: list[Share] = []
    freed = 0
    for share in ordered:
        if freed >= need:
            break
        picked.append(share)
        freed += share[1]
    if freed < need:
        return None
    for share in sorted(picked, key=_dearest):
        if freed - share[1] >= need:
            picked.remove(share)
            freed -= share[1]
    picked.sort(key=_cheapest)
    return picked, freed
