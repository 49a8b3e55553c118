"""Paths to the real Slurm outputs kept under tests/fixtures/slurm/<version>/, and the clock of
the tests that replay them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpuq.backends.slurm import SlurmBackend
from gpuq.backends.slurm.values import text_time
from tests.clock import TickingClock

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "slurm"
VERSIONS = ("22.05", "24.11", "26.05")
LIVE = FIXTURES / "22.05" / "live"

#: A moment just after the 22.05 live captures were taken (their latest times are 19:53-19:54,
#: local time like Slurm's own), so their sacct records fall inside the backend's 24 h window.
CAPTURED_AT = text_time("2026-11-29T19:56:00") or 0.0
#: the wall clock of every backend that replays the captures: from CAPTURED_AT on, ticking
captured_clock = TickingClock(CAPTURED_AT)


def read(version: str, name: str) -> str:
    return (FIXTURES / version / name).read_text()


def live(name: str) -> str:
    return (LIVE / name).read_text()


def stand_in(**options: Any) -> SlurmBackend:
    """A SlurmBackend on the capture's clock (`captured_clock`), for the stand-in CLIs."""
    options.setdefault("clock", captured_clock)
    return SlurmBackend(**options)
