"""`Gpus` placement against a plain reference: best fit (the node with the fewest free GPUs that
still fit, ties to the first node), the lowest free indexes, over random takes and releases.
`Gpus.first` lets the scan start late; a wrong start would pick a later node than the reference."""

from __future__ import annotations

import random

import pytest

from gpuq.sim.cluster import Gpus, Placement


def _reference(free: list[list[int]], gpus: int, per_node: int) -> Placement | None:
    """Best fit for one node's worth or less; the emptiest nodes first (then by index) beyond."""
    if gpus > sum(len(f) for f in free):
        return None
    if gpus <= per_node:
        fitting = [i for i, f in enumerate(free) if len(f) >= gpus]
        if not fitting:
            return None
        i = min(fitting, key=lambda i: (len(free[i]), i))
        return [(i, sorted(free[i])[:gpus])]
    placement: Placement = []
    need = gpus
    for i in sorted(range(len(free)), key=lambda i: (-len(free[i]), i)):
        take = min(need, len(free[i]))
        if take:
            placement.append((i, sorted(free[i])[:take]))
            need -= take
        if need == 0:
            break
    return placement


@pytest.mark.parametrize("seed", range(6))
def test_placement_matches_best_fit_over_random_takes_and_releases(seed: int) -> None:
    rng = random.Random(seed)
    nodes, per_node = rng.choice([(5, 4), (16, 8), (40, 8)])
    gpus = Gpus([f"n{i:02d}" for i in range(nodes)], per_node)
    free = [list(range(per_node)) for _ in range(nodes)]
    held: list[dict[str, list[int]]] = []
    placed = 0
    for _ in range(600):
        if held and rng.random() < 0.45:
            alloc = held.pop(rng.randrange(len(held)))
            gpus.release(alloc)
            for name, idx in alloc.items():
                free[int(name[1:])].extend(idx)
            continue
        want = rng.choice([1, 1, 1, 2, 3, per_node, per_node + 1, 2 * per_node])
        got = gpus.place(want)
        assert got == _reference(free, want, per_node), f"{want} GPUs after {placed} placements"
        if got is not None:
            held.append(gpus.take(got))
            for i, idx in got:
                free[i] = [g for g in free[i] if g not in idx]
            placed += 1
        assert gpus.free_n == [len(f) for f in free]
    assert placed > 100  # (the cluster filled and emptied many times over)
