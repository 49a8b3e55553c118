"""The simulator's event kinds, the shape of its event heap's entries, and the line of arrivals
that come in time order.

A module of their own so that the event loop (`gpuq.sim.simulator`), the operator actions that
schedule events (`gpuq.sim.actions`) and the saved state that names them (`gpuq.sim.state`)
share one definition without importing one another's internals.
"""

from __future__ import annotations

import math
from typing import Any, Final, cast

from gpuq.sim.jobs import SimJob

__all__ = [
    "AGE", "AGES", "ARRIVE", "DRAIN", "FINISH", "GENERATE", "KIND_NAMES", "PASS", "RECHECK", "ArrivalLine", "Event",
    "heap_make", "heap_pop", "heap_push", "let_taken_go",
]  # fmt: skip

# Small ints: compared only for equality in the loop; Final, so the compiled loop uses the numbers
# themselves instead of looking the names up.
ARRIVE: Final = 0
FINISH: Final = 1
AGE: Final = 2
DRAIN: Final = 3
RECHECK: Final = 4
GENERATE: Final = 5
PASS: Final = 6
#: the wake-up for the jobs lined up to start aging (`gpuq.sim.aging`); never saved
AGES: Final = 7
#: The event kinds by name, in the order of their numbers (saved state names them).
KIND_NAMES: Final = ("arrive", "finish", "age", "drain", "recheck", "generate", "pass", "ages")

#: (time, sequence number, kind, job, version): a job's events are stale once its version moved.
Event = tuple[float, int, int, "SimJob | None", int]

# ---- the event heap: `heapq`'s algorithm, ordered by (time, sequence number) ------------------
# No two events share both, so this is exactly the order `heapq` gives the tuples. `heapq`
# compares tuples through the interpreter's generic comparison, an equality test and an order
# test per level; compiled, these compare two floats (the sequence numbers only on a tie). The
# entries are handled as tuples of any length (`_Entry`): typed as the five-field `Event`,
# compiled code would take each apart on reading it and build it anew to store it.

_Entry = tuple[Any, ...]


def _sift_down(heap: list[_Entry], start: int, pos: int) -> None:
    """`heapq._siftdown`: the entry at `pos` moves up towards `start` to its place."""
    item = heap[pos]
    t = cast(float, item[0])
    while pos > start:
        parent_pos = (pos - 1) >> 1
        parent = heap[parent_pos]
        pt = cast(float, parent[0])
        if t < pt or (t == pt and cast(int, item[1]) < cast(int, parent[1])):
            heap[pos] = parent
            pos = parent_pos
            continue
        break
    heap[pos] = item


def _sift_up(heap: list[_Entry], pos: int) -> None:
    """`heapq._siftup(heap, pos)`: the lesser child moves up, down to a leaf; then the entry that
    was at `pos` moves up from there to its place."""
    end = len(heap)
    start = pos
    item = heap[pos]
    child = 2 * pos + 1
    while child < end:
        right = child + 1
        if right < end:
            a = heap[child]
            b = heap[right]
            ta = cast(float, a[0])
            tb = cast(float, b[0])
            if not (ta < tb or (ta == tb and cast(int, a[1]) < cast(int, b[1]))):
                child = right
        heap[pos] = heap[child]
        pos = child
        child = 2 * pos + 1
    heap[pos] = item
    _sift_down(heap, start, pos)


def heap_push(heap: list[Event], event: Event) -> None:
    """`heapq.heappush` for the event heap."""
    entries = cast("list[_Entry]", heap)
    entries.append(event)
    _sift_down(entries, 0, len(entries) - 1)


def heap_pop(heap: list[Event]) -> Event:
    """`heapq.heappop` for the event heap (IndexError when it is empty)."""
    entries = cast("list[_Entry]", heap)
    last = entries.pop()
    if entries:
        top = entries[0]
        entries[0] = last
        _sift_up(entries, 0)
        return cast(Event, top)
    return cast(Event, last)


def heap_make(heap: list[Event]) -> None:
    """`heapq.heapify` for the event heap."""
    entries = cast("list[_Entry]", heap)
    for pos in reversed(range(len(entries) // 2)):
        _sift_up(entries, pos)


def let_taken_go(items: list[Any], head: int) -> int:
    """For a list read from the front by moving an index (`head`: the first entry still to come):
    let the entries taken go once they are all, or most, of the list; returns the new index."""
    if head == len(items):
        items.clear()
        return 0
    if head > 1024 and 2 * head > len(items):
        del items[:head]
        return 0
    return head


class ArrivalLine:
    """Arrival events submitted in time order, waiting outside the event heap.

    A trace is submitted in time order, a stretch at a time, so its arrivals need no heap: the
    event loop takes the earlier of this line's first event and the heap's top, comparing
    (time, sequence number) as the heap does, so events come in the very same order. Half of
    a replay's events are arrivals, and a pop from the heap costs a tuple comparison per level.
    A batch that would not continue the line in order goes to the heap instead.
    """

    def __init__(self) -> None:
        #: events from `head` on are still to come, in (time, sequence number) order
        self.items: list[Event] = []
        self.head = 0

    def __len__(self) -> int:
        return len(self.items) - self.head

    def last_time(self) -> float:
        """When the last arrival in the line comes (-inf: none): a batch from then on continues it."""
        return self.items[-1][0] if self.head < len(self.items) else -math.inf

    def extend(self, batch: list[Event]) -> None:
        """Line up `batch`: in (time, sequence number) order, its first no earlier than
        `last_time()` and its sequence numbers above any in the line (the caller makes sure)."""
        self.head = let_taken_go(self.items, self.head)
        self.items.extend(batch)

    def first_time(self) -> float:
        """When the next arrival in the line comes (inf: none)."""
        return self.items[self.head][0] if self.head < len(self.items) else math.inf

    def pending(self) -> list[Event]:
        """The arrivals still to come, in order."""
        return self.items[self.head :]
