"""Exact single-node victim choice on plain numbers: the one search the engine and simulator share.

Over the candidate nodes, the victim set of least key

    (total cost, number of victims, highest victim priority, −Σ start times, sorted ids, node)

(policy model, "Victim choice"; costs rounded to 6 decimals so float sums compare stably; ids
compare in gpuq's one job-id order, `model.job_id_key`). The
policy engine wraps it with protections and explanations; the simulator calls it directly in its
hot loop, on numbers it keeps up to date, so both always pick the same victims.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from gpuq.model import JobIdKey

__all__ = ["Best", "Item", "best_single_node", "search_node"]

_EPS = 1e-6

#: (cost, job-id key, GPUs the job holds on this node, effective priority, start time, job id)
Item = tuple[float, JobIdKey, int, float, float, str]


class Best:
    """The least key found so far, over all nodes, and the cost bound it sets."""

    __slots__ = ("key", "choice", "limit")

    def __init__(self) -> None:
        self.key: tuple[object, ...] | None = None
        self.choice: tuple[list[Item], str] | None = None
        self.limit = float("inf")


def search_node(node: str, need: int, eligible: Sequence[Item], best: Best) -> None:
    """Every set of victims on `node` that just covers `need` GPUs, pruned by cost (as the engine)."""
    items = sorted(eligible, key=lambda item: (item[0], item[1]))
    count = len(items)
    suffix = [0] * (count + 1)
    for i in range(count - 1, -1, -1):
        suffix[i] = suffix[i + 1] + items[i][2]
    if suffix[0] < need:
        return
    chosen: list[Item] = []

    def search(i: int, freed: int, cost: float) -> None:
        if freed >= need:
            key = (
                round(sum(item[0] for item in chosen), 6),
                len(chosen),
                max(item[3] for item in chosen),
                -sum(item[4] for item in chosen),
                tuple(sorted(item[1] for item in chosen)),
                node,
            )
            if best.key is None or key < best.key:
                best.key, best.choice = key, (list(chosen), node)
                best.limit = min(best.limit, key[0])
            return
        if i == count or freed + suffix[i] < need:
            return
        item = items[i]
        if cost + item[0] > best.limit + _EPS:  # sorted by cost: no later item is cheaper
            return
        chosen.append(item)
        search(i + 1, freed + item[2], cost + item[0])
        chosen.pop()
        search(i + 1, freed, cost)

    search(0, 0, 0.0)
    search = _searched  # (it refers to itself: the cycle would outlive the call where gc is off)


def _searched(i: int, freed: int, cost: float) -> None:
    """What `search_node`'s recursive search is set to once it is done."""


def best_single_node(nodes: Iterable[tuple[str, int, Sequence[Item]]]) -> tuple[list[Item], str] | None:
    """The least-key victim set over `(node, GPUs missing there, eligible victims there)`."""
    best = Best()
    for node, need, eligible in nodes:
        search_node(node, need, eligible, best)
    return best.choice
