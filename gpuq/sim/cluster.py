"""Free-GPU bookkeeping per node: placement (best fit, lowest indexes) and release."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["Gpus", "Placement", "emptiest_first"]

#: (node index, GPU indexes on that node)
Placement = list[tuple[int, list[int]]]


class Gpus:
    """Which GPU indexes are free on each node.

    Single-node jobs go to the node with the fewest free GPUs that still fit them (best fit keeps
    whole nodes free for big jobs), ties to the first node by name; multi-node jobs take the
    emptiest nodes first so they span as few nodes as possible. Both take the lowest indexes.
    """

    def __init__(self, names: Sequence[str], gpus_per_node: int) -> None:
        self.names = list(names)
        if self.names != sorted(self.names):  # (node order stands for name order in every tie)
            raise ValueError("node names must come in name order")
        self.index = {name: i for i, name in enumerate(self.names)}
        self.per_node = gpus_per_node
        self.free: list[list[int]] = [list(range(gpus_per_node)) for _ in self.names]
        self.free_n = [gpus_per_node] * len(self.names)
        #: how many nodes have exactly k free GPUs, k = 0 … per_node (best fit without a scan)
        self.level = [0] * (gpus_per_node + 1)
        self.level[gpus_per_node] = len(self.names)
        #: per k, an index no later than the first node with exactly k free GPUs (`_first_with`
        #: starts there: a best-fit placement would otherwise look through every node before it)
        self.first = [0] * (gpus_per_node + 1)
        self.total_free = gpus_per_node * len(self.names)
        self.capacity = self.total_free

    def max_free(self) -> int:
        level = self.level
        for k in range(self.per_node, 0, -1):
            if level[k]:
                return k
        return 0

    def fits(self, gpus: int) -> bool:
        if gpus <= self.per_node:
            return any(n >= gpus for n in self.free_n)
        return self.total_free >= gpus

    def place(self, gpus: int, prefer: Sequence[str] = ()) -> Placement | None:
        """Choose GPUs for a job (preferring nodes in `prefer`), or None when it does not fit now."""
        if gpus > self.total_free:
            return None  # the common case on a busy cluster: answer before looking at nodes
        free_n = self.free_n
        if gpus <= self.per_node:
            if prefer:  # (most placements prefer no node: no iterator over an empty sequence)
                for name in prefer:
                    i = self.index.get(name)
                    if i is not None and free_n[i] >= gpus:
                        return [(i, self.free[i][:gpus])]
            level = self.level
            for k in range(gpus, self.per_node + 1):  # the fewest free GPUs that fit, the first such node
                if level[k]:
                    i = _first_with(free_n, k, self.first[k])
                    self.first[k] = i
                    return [(i, self.free[i][:gpus])]
            return None
        if self.total_free < gpus:
            return None
        preferred = [self.index[p] for p in prefer if p in self.index]
        skip = [False] * len(free_n)
        for i in preferred:
            skip[i] = True
        placement: Placement = []
        need = gpus
        for i in preferred + emptiest_first(free_n, self.per_node, skip):
            if need == 0:
                break
            take = min(need, free_n[i])
            if take:
                placement.append((i, self.free[i][:take]))
                need -= take
        return placement

    def take(self, placement: Placement) -> dict[str, list[int]]:
        alloc: dict[str, list[int]] = {}
        for i, idx in placement:
            del self.free[i][: len(idx)]  # placements always take the lowest free indexes
            self._count(i, -len(idx))
            alloc[self.names[i]] = idx
        return alloc

    def release(self, alloc: dict[str, list[int]]) -> None:
        for name, idx in alloc.items():
            i = self.index[name]
            free = self.free[i]
            free.extend(idx)
            free.sort()
            self._count(i, len(idx))

    def claim(self, alloc: dict[str, list[int]]) -> None:
        """Mark an existing allocation as used (when restoring saved state)."""
        for name, idx in alloc.items():
            i = self.index[name]
            free = self.free[i]
            for gpu in idx:
                free.remove(gpu)  # raises ValueError on a double booking
            self._count(i, -len(idx))

    def _count(self, i: int, change: int) -> None:
        """Node `i` has `change` more free GPUs. (No `x[k] += 1` here or in the other compiled
        modules: compiled, an augmented assignment to an item goes through the interpreter's
        generic arithmetic; `x[k] = x[k] + 1` adds machine integers.)"""
        level = self.level
        n = self.free_n[i]
        m = n + change
        level[n] = level[n] - 1
        level[m] = level[m] + 1
        if i < self.first[m]:
            self.first[m] = i
        self.free_n[i] = m
        self.total_free += change


def emptiest_first(free_n: list[int], per_node: int, skip: list[bool] | None = None) -> list[int]:
    """The nodes with free GPUs (but those `skip` marks), the emptiest first, then in node order
    (which is name order). One list per count of free GPUs, filled in node order: a sort keyed on
    (-free, index) builds a tuple per node and compares them as objects."""
    by_free: list[list[int]] = [[] for _ in range(per_node + 1)]
    for i in range(len(free_n)):
        if free_n[i] and (skip is None or not skip[i]):
            by_free[free_n[i]].append(i)
    order: list[int] = []
    for k in range(per_node, 0, -1):
        order.extend(by_free[k])
    return order


def _first_with(free_n: list[int], k: int, start: int) -> int:
    """`free_n.index(k, start)`: the first node from `start` on with exactly `k` free GPUs (one is,
    by `level`, and none before `start`, by `Gpus.first`). A loop of its own so that the compiled
    module compares the counts as machine integers: `list.index` compares each element through
    Python's rich comparison."""
    for i in range(start, len(free_n)):
        if free_n[i] == k:
            return i
    raise ValueError(f"no node has {k} free GPUs")
