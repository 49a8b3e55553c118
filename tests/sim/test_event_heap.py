"""The simulator's event heap (`gpuq.sim.events.heap_*`, compiled with the event loop) gives events
in exactly the order `heapq` gives the same tuples."""

from __future__ import annotations

import heapq
import random

import pytest

from gpuq.sim.events import Event, heap_make, heap_pop, heap_push


def _events(rng: random.Random, count: int, first_seq: int) -> list[Event]:
    # Few distinct times, so that ties on the time (decided by the sequence number) are common;
    # negative sequence numbers as the aging wake-ups use.
    return [
        (float(rng.choice((0.0, 1.5, 2.0, 2.000001, 7.25, 1e9))), seq if rng.random() < 0.8 else -seq,
         rng.randrange(8), None, rng.randrange(3))
        for seq in range(first_seq, first_seq + count)
    ]  # fmt: skip


@pytest.mark.parametrize("seed", range(6))
def test_pushes_and_pops_come_out_as_heapq_gives_them(seed: int) -> None:
    rng = random.Random(seed)
    ours: list[Event] = []
    theirs: list[Event] = []
    seq = 1
    popped_ours: list[Event] = []
    popped_theirs: list[Event] = []
    for _ in range(400):
        if rng.random() < 0.55 or not theirs:
            for event in _events(rng, rng.randrange(1, 4), seq):
                heap_push(ours, event)
                heapq.heappush(theirs, event)
            seq += 4
        else:
            popped_ours.append(heap_pop(ours))
            popped_theirs.append(heapq.heappop(theirs))
        assert ours[:1] == theirs[:1]
    popped_ours += [heap_pop(ours) for _ in range(len(ours))]
    popped_theirs += [heapq.heappop(theirs) for _ in range(len(theirs))]
    assert popped_ours == popped_theirs
    assert len(popped_ours) > 300


@pytest.mark.parametrize("count", [0, 1, 2, 3, 10, 257])
def test_a_heap_made_from_a_list_pops_as_heapq_does(count: int) -> None:
    rng = random.Random(count)
    events = _events(rng, count, 1)
    ours, theirs = list(events), list(events)
    heap_make(ours)
    heapq.heapify(theirs)
    assert [heap_pop(ours) for _ in range(count)] == [heapq.heappop(theirs) for _ in range(count)]
    assert [e[:2] for e in sorted(events)] == [e[:2] for e in sorted(events, key=lambda e: (e[0], e[1]))]


def test_pop_from_an_empty_heap_is_an_index_error() -> None:
    with pytest.raises(IndexError):
        heap_pop([])
