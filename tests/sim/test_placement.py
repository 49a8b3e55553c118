"""`Gpus` placement against a plain reference over random takes and releases: preferred nodes
first (an unknown name ignored); then best fit (the node with the fewest free GPUs that still
fit, ties to the first node) or, beyond one node, the emptiest nodes first; the lowest free
indexes. `Gpus.first` lets the best-fit scan start late: a wrong start would pick a later node."""

from __future__ import annotations

import random

import pytest

from gpuq.sim.cluster import Gpus, Placement


def _reference(free: list[list[int]], gpus: int, per_node: int, prefer: list[int]) -> Placement | None:
    """The first preferred node that fits, else best fit, for one node's worth or less; beyond,
    the preferred nodes in their order, then the emptiest (then by index)."""
    if gpus > sum(len(f) for f in free):
        return None
    if gpus <= per_node:
        for i in prefer:
            if len(free[i]) >= gpus:
                return [(i, sorted(free[i])[:gpus])]
        fitting = [i for i, f in enumerate(free) if len(f) >= gpus]
        if not fitting:
            return None
        i = min(fitting, key=lambda i: (len(free[i]), i))
        return [(i, sorted(free[i])[:gpus])]
    placement: Placement = []
    need = gpus
    rest = sorted((i for i in range(len(free)) if i not in prefer), key=lambda i: (-len(free[i]), i))
    for i in prefer + rest:
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
        prefer = rng.sample(range(nodes), rng.choice([0, 0, 0, 1, 2])) if rng.random() < 0.5 else []
        got = gpus.place(want, [f"n{i:02d}" for i in prefer] + ["elsewhere"] * (len(prefer) == 1))
        assert got == _reference(free, want, per_node, prefer), f"{want} GPUs after {placed} placements"
        if got is not None:
            held.append(gpus.take(got))
            for i, idx in got:
                free[i] = [g for g in free[i] if g not in idx]
            placed += 1
        assert gpus.free_n == [len(f) for f in free]
    assert placed > 100  # (the cluster filled and emptied many times over)


def test_node_names_out_of_name_order_are_refused() -> None:
    # (node order stands for name order in every tie: placement's and the victim plans')
    with pytest.raises(ValueError, match="name order"):
        Gpus(["gpu-02", "gpu-01"], 8)
