"""Paths to the real Slurm outputs kept under tests/fixtures/slurm/<version>/."""

from __future__ import annotations

from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "slurm"
VERSIONS = ("22.05", "24.11", "26.05")
LIVE = FIXTURES / "22.05" / "live"


def read(version: str, name: str) -> str:
    return (FIXTURES / version / name).read_text()


def live(name: str) -> str:
    return (LIVE / name).read_text()
