"""Hypothesis profiles for the property-based tests, chosen by ``GPUQ_HYPOTHESIS_PROFILE``.

- ``ci`` (the default, what `scripts/test` and CI run): derandomised — each test's examples
  follow from its own source, not from chance or from a local example database — so a submission
  passes or fails on its own merits, the same way on every machine. A failure prints the
  reproducing blob.
- ``explore``: random examples, ten times as many of each test, and the local example database
  (``.hypothesis/``) so a failure found once is tried first next time. Run it before you stop:
  ``GPUQ_HYPOTHESIS_PROFILE=explore .venv/bin/python -m pytest -m "not slurm" -q``.

Tests give their example counts through `examples`, so the profile scales them.
"""

from __future__ import annotations

import os

from hypothesis import settings

PROFILE_ENV = "GPUQ_HYPOTHESIS_PROFILE"
PROFILES = ("ci", "explore")
#: how many more examples the explore profile tries than the counts the tests name
EXPLORE_FACTOR = 10

settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)


def profile() -> str:
    name = os.environ.get(PROFILE_ENV, "").strip() or "ci"
    if name not in PROFILES:
        raise ValueError(f"{PROFILE_ENV}={name!r}: expected one of {', '.join(PROFILES)}")
    return name


def load() -> None:
    """Load the chosen profile (once, from tests/conftest.py, before any test module is imported)."""
    settings.load_profile(profile())


def examples(count: int) -> int:
    """`count` examples under ``ci``; `EXPLORE_FACTOR` times as many under ``explore``."""
    return count * EXPLORE_FACTOR if profile() == "explore" else count
