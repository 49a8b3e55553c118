"""Input first: a worker that computes a view steps aside for a moment after each key or click.

Python runs one thread at a time. While a worker computes, the UI thread gets the interpreter
only when the worker is made to hand it over (every switch interval, 5 ms), and loses it again
each time it waits on the terminal; a key's handling and the frame after it are spread over many
such turns. So the console notes each input event (`InputGate.note_input`, UI thread) and the
worker calls `pause` between bounded steps of its compute: within `hold_s` of an input it sleeps,
and the UI thread runs alone. A worker that paused always takes at least one step before it
pauses again, so a held-down key slows a compute but never stops it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from textual import events

if TYPE_CHECKING:
    from textual.driver import Driver
    from textual.message import Message

__all__ = ["HOLD_S", "InputGate"]

#: how long a worker stays out of the way after an input event: a key's handling and two frames
HOLD_S = 0.05


class InputGate:
    """When the UI thread last had input, and a `pause` for workers (thread-safe: two numbers
    written by the UI thread, read by workers; a worker's own mark is its thread's)."""

    def __init__(self, hold_s: float = HOLD_S, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:  # fmt: skip
        self.hold_s = hold_s
        self._clock = clock
        self._sleep = sleep
        self._until = 0.0
        self._inputs = 0
        #: per worker thread: the input it last stepped aside for (once per input each)
        self._paused_for = threading.local()

    def note_input(self) -> None:
        """An input event arrived (UI thread)."""
        self._until = self._clock() + self.hold_s
        self._inputs += 1

    def watch(self, driver: Driver) -> None:
        """Note each key or mouse event in `driver`'s input thread, as it is handed over: the
        computing worker then steps aside while the UI thread is still waking up for it.
        (`Driver.send_message` is where every driver's input ends; the app notes it too.)"""
        send, note = driver.send_message, self.note_input

        def send_message(message: Message) -> None:
            if isinstance(message, events.InputEvent):
                note()
            send(message)

        driver.send_message = send_message  # type: ignore[method-assign]

    def pause(self) -> None:
        """Sleep while the UI thread has recent input (worker thread, between steps)."""
        inputs = self._inputs
        if getattr(self._paused_for, "inputs", 0) == inputs:
            return  # (no input since, or already stepped aside for it: take a step first)
        left = self._until - self._clock()
        if left > 0:
            self._paused_for.inputs = inputs
            self._sleep(min(left, self.hold_s))
