"""The simulator's event kinds, the shape of its event heap's entries, and the line of arrivals
that come in time order.

A module of their own so that the event loop (`gpuq.sim.simulator`), the operator actions that
schedule events (`gpuq.sim.actions`) and the saved state that names them (`gpuq.sim.state`)
share one definition without importing one another's internals.
"""

from __future__ import annotations

import math
from typing import Final

from gpuq.sim.jobs import SimJob

__all__ = [
    "AGE", "AGES", "ARRIVE", "DRAIN", "FINISH", "GENERATE", "KIND_NAMES", "PASS", "RECHECK", "ArrivalLine", "Event",
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
        items = self.items
        if self.head > 1024 and 2 * self.head > len(items):  # (the events taken: let them go)
            del items[: self.head]
            self.head = 0
        items.extend(batch)

    def first_time(self) -> float:
        """When the next arrival in the line comes (inf: none)."""
        return self.items[self.head][0] if self.head < len(self.items) else math.inf

    def pending(self) -> list[Event]:
        """The arrivals still to come, in order."""
        return self.items[self.head :]
