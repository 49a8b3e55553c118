"""Paths to the real Slurm outputs kept under tests/fixtures/slurm/<version>/, and the clock of
the tests that replay them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from msgspec.structs import replace

from gpuq.backends.slurm import SlurmBackend
from gpuq.backends.slurm.values import text_time
from gpuq.model import Job, JobState, Snapshot
from tests.clock import TickingClock

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "slurm"
VERSIONS = ("22.05", "24.11", "26.05")
LIVE = FIXTURES / "22.05" / "live"

#: A moment just after the 22.05 live captures were taken (their latest times are 19:53-19:54,
#: local time like Slurm's own), so their sacct records fall inside the backend's 24 h window.
CAPTURED_AT = text_time("2026-11-29T19:56:00") or 0.0
#: the wall clock of every backend that replays the captures: from CAPTURED_AT on, ticking
captured_clock = TickingClock(CAPTURED_AT)


def jobs_at_capture(snapshot: Snapshot) -> dict[str, Job]:
    """The snapshot's jobs by id as they stood at CAPTURED_AT: two snapshots of the same
    captures, taken a moment apart on the ticking clock, compare equal. (A job suspended now has
    been suspended up to the snapshot's moment, `Job.suspended_s`: the rest of it is the same.)"""
    later = snapshot.now - CAPTURED_AT
    return {
        j.id: replace(j, suspended_s=round(j.suspended_s - later, 3)) if j.state is JobState.SUSPENDED else j
        for j in snapshot.jobs
    }


def read(version: str, name: str) -> str:
    return (FIXTURES / version / name).read_text()


def live(name: str) -> str:
    return (LIVE / name).read_text()


def stand_in(**options: Any) -> SlurmBackend:
    """A SlurmBackend on the capture's clock (`captured_clock`), for the stand-in CLIs."""
    options.setdefault("clock", captured_clock)
    return SlurmBackend(**options)
