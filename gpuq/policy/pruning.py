"""The order in which the exact single-node search visits nodes on large clusters.

Every running job on a node costs at least `lost_work_weight × (now − its loss start)` per GPU
it holds there (`rules.loss_start_of`), so the latest loss start on a node bounds the cost per GPU
of any plan there from below. `PrunedOrder` hands out nodes in ascending order of the engine's
exact lower bound while computing that exact bound only for nodes whose weak bound can compete.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator, Mapping, Sequence

from gpuq.model import Job, Node, Snapshot
from gpuq.policy.config import Policy
from gpuq.policy.rules import loss_start

__all__ = ["PrunedOrder", "loss_order"]

#: (exact lower bound of a node's cheapest plan, node, GPUs still missing there)
Bound = tuple[float, str, int]

_EPS = 1e-6


def loss_order(snapshot: Snapshot, policy: Policy) -> tuple[tuple[float, str], ...]:
    """Nodes holding running jobs, as (latest loss start of their jobs, node), most recent first.

    Kept on the snapshot per sign of the default checkpoint interval, the only part of the policy
    `loss_start` reads.
    """

    def build() -> tuple[tuple[float, str], ...]:
        order = sorted(
            (-max(loss_start(job, policy) for job in jobs), name) for name, jobs in snapshot.running_on().items()
        )
        return tuple((-neg, name) for neg, name in order)

    return snapshot.derived(("engine.loss_order", policy.default_checkpoint_interval_s > 0), build)


class PrunedOrder:
    """Nodes in ascending order of the exact lower bound, computing bounds only where needed.

    `loss_order` gives a cheaper, weaker bound per node (need × cost per GPU ≥ its lower bound);
    nodes are pulled in that order into a heap keyed by the exact bound, and a node leaves the heap
    only when every node whose weak bound is not above its exact bound has been pulled. The
    sequence is exactly that of sorting every node's exact bound, so the search and its tie-breaks
    are unchanged; only nodes that cannot matter are never costed. Valid when the cost is lost work
    alone (`priority_weight` 0).
    """

    def __init__(self, order: list[tuple[float, str]], need_min: int) -> None:
        self.order = order  # (weak cost per GPU, node), ascending
        self.need_min = need_min
        self.next = 0
        self.visited: set[str] = set()

    @classmethod
    def build(
        cls, snapshot: Snapshot, policy: Policy, now: float, candidates: Sequence[Node], free: Mapping[str, int], g: int
    ) -> PrunedOrder | None:
        lw = policy.lost_work_weight
        if policy.priority_weight != 0 or lw < 0:
            return None
        wanted = {n.name for n in candidates}
        order = [
            (lw * (now - latest) if now > latest else 0.0, name)
            for latest, name in loss_order(snapshot, policy)
            if name in wanted
        ]
        need_min = max(1, g - max(free[n.name] for n in candidates))
        return cls(order, need_min)

    def _cost_next(self, bound: Callable[[str], Bound]) -> Bound:
        """Cost the next node in weak-bound order."""
        name = self.order[self.next][1]
        self.next += 1
        self.visited.add(name)
        return bound(name)

    def ascending(self, bound: Callable[[str], Bound]) -> Iterator[Bound]:
        heap: list[Bound] = []
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

    def visit_up_to(self, ceiling: float, bound: Callable[[str], Bound]) -> None:
        """Cost every node that may hold a protected job costing at most `ceiling`."""
        order = self.order
        limit = ceiling * (1 + 1e-9) + _EPS
        while self.next < len(order) and order[self.next][0] <= limit:
            self._cost_next(bound)

    def in_node_order(
        self, candidates: Sequence[Node], on: Mapping[str, tuple[Job, ...]], seen: dict[str, tuple[Job, float]]
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
