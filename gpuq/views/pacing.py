"""Long view computations in bounded steps. A caller that must not hold the interpreter long (the
console's compute worker, gpuq/tui/gate.py) passes a `pause`, called between steps; everyone
else passes nothing and the computation runs in one go."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

__all__ = ["STEP", "Pause", "no_pause", "paced"]

T = TypeVar("T")

#: called between the steps of a computation (the console's worker may sleep there)
Pause = Callable[[], None]

#: items between two pauses
STEP = 2048


def no_pause() -> None:
    """The pause of a computation nobody waits on (the CLI, tests, benchmarks)."""


def paced(items: Sequence[T], pause: Pause, step: int | None = None) -> Iterator[T]:
    """`items`, with `pause` called before each `step` of them (`STEP` when None; no pause at
    all for `no_pause` or fewer than `step` items)."""
    step = STEP if step is None else step
    if pause is no_pause or len(items) <= step:
        yield from items
        return
    for start in range(0, len(items), step):
        pause()
        yield from items[start : start + step]
