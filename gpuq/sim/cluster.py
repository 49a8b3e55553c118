"""Free-GPU bookkeeping per node: placement (best fit, lowest indexes) and release."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["Gpus", "Placement"]

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
        self.index = {name: i for i, name in enumerate(self.names)}
        self.per_node = gpus_per_node
        self.free: list[list[int]] = [list(range(gpus_per_node)) for _ in self.names]
        self.free_n = [gpus_per_node] * len(self.names)
        self.total_free = gpus_per_node * len(self.names)
        self.capacity = self.total_free

    def max_free(self) -> int:
        return max(self.free_n) if self.free_n else 0

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
            for name in prefer:
                i = self.index.get(name)
                if i is not None and free_n[i] >= gpus:
                    return [(i, self.free[i][:gpus])]
            if gpus in free_n:  # an exact fit is the best fit (C-speed scan)
                i = free_n.index(gpus)
                return [(i, self.free[i][:gpus])]
            best = -1
            best_n = self.per_node + 1
            for i, n in enumerate(free_n):
                if gpus <= n < best_n:
                    best, best_n = i, n
                    if n == gpus:
                        break
            return None if best < 0 else [(best, self.free[best][:gpus])]
        if self.total_free < gpus:
            return None
        preferred = [self.index[p] for p in prefer if p in self.index]
        rest = sorted((i for i in range(len(free_n)) if i not in preferred), key=lambda i: (-free_n[i], i))
        placement: Placement = []
        need = gpus
        for i in preferred + rest:
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
            self.free_n[i] -= len(idx)
            self.total_free -= len(idx)
            alloc[self.names[i]] = idx
        return alloc

    def release(self, alloc: dict[str, list[int]]) -> None:
        for name, idx in alloc.items():
            i = self.index[name]
            free = self.free[i]
            free.extend(idx)
            free.sort()
            self.free_n[i] += len(idx)
            self.total_free += len(idx)

    def claim(self, alloc: dict[str, list[int]]) -> None:
        """Mark an existing allocation as used (when restoring saved state)."""
        for name, idx in alloc.items():
            i = self.index[name]
            free = self.free[i]
            for gpu in idx:
                free.remove(gpu)  # raises ValueError on a double booking
            self.free_n[i] -= len(idx)
            self.total_free -= len(idx)
