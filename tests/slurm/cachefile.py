"""The Slurm backend's disk cache as a later gpuq invocation finds it: read it, rewrite it, and
move its reads into the past (as if they were made earlier), for the tests of what is re-read."""

from __future__ import annotations

import json
from typing import Any

from gpuq.backends.slurm.diskcache import SlurmDiskCache


def read() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(SlurmDiskCache("").path.read_text())
    return data


def write(data: dict[str, Any]) -> None:
    SlurmDiskCache("").path.write_text(json.dumps(data))


def age(*, config: float = 0.0, history: float = 0.0) -> None:
    """As if the cached config and/or sacct read were made ``config``/``history`` seconds earlier."""
    data = read()
    if config:
        for key in ("read_at", "checked_at"):
            data["config"][key] -= config
    if history:
        hist = data["history"]
        hist["read_until"] -= history
        hist["fresh_at"] -= history
        if "accounted" in hist:
            hist["accounted"]["at"] -= history
    write(data)
