"""Fixtures for the real-lab tests: the lab is started once per session (``scripts/slurm-lab``)
and switched between its two preemption set-ups per module. If it cannot start, the tests fail.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.slurm import lab


@pytest.fixture(scope="session")
def slurm_lab() -> Iterator[dict[str, str]]:
    # Leave the machine as found: a lab this session started is stopped at the end; one that was
    # already running (a developer's) stays up for the next run.
    was_running = lab.running()
    env = lab.start("qos")
    yield env
    lab.cancel_all()  # no sleeping jobs left behind either way
    if not was_running:
        lab.stop()


@pytest.fixture(scope="module")
def qos_lab(slurm_lab: dict[str, str]) -> dict[str, str]:
    env = lab.start("qos")
    lab.cancel_all()
    return env


@pytest.fixture(scope="module")
def partition_lab(slurm_lab: dict[str, str]) -> dict[str, str]:
    env = lab.start("partition")
    lab.cancel_all()
    return env


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    # The backend keeps its slowly changing reads under $XDG_CACHE_HOME/gpuq between invocations:
    # each test starts with an empty one (and never touches the developer's ~/.cache).
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))
