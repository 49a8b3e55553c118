"""Slurm version detection: from ``sinfo -V`` (``slurm 22.05.8``) or a JSON ``meta`` block."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["SUPPORTED", "SlurmVersion", "parse_version_text", "version_from_meta"]


@dataclass(frozen=True, order=True, slots=True)
class SlurmVersion:
    major: int
    minor: int
    micro: int = 0

    def __str__(self) -> str:
        return f"{self.major}.{self.minor:02d}.{self.micro}"

    @property
    def json_numbers_wrapped(self) -> bool:
        """23.02+ JSON wraps numbers in {set, infinite, number} and lists job states."""
        return (self.major, self.minor) >= (23, 2)


#: Oldest and newest release lines whose output shapes are tested on real samples.
SUPPORTED = (SlurmVersion(22, 5), SlurmVersion(26, 5, 99))

_TEXT_RE = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


def parse_version_text(text: str) -> SlurmVersion:
    """``slurm 22.05.8`` / ``slurm-wlm 24.11.5`` -> SlurmVersion; ValueError otherwise."""
    match = _TEXT_RE.search(text)
    if not match:
        raise ValueError(f"no Slurm version in {text.strip()[:60]!r}")
    return SlurmVersion(int(match.group(1)), int(match.group(2)), int(match.group(3) or 0))


def version_from_meta(meta: Mapping[str, Any]) -> SlurmVersion:
    """From JSON ``meta.Slurm`` (22.05) or ``meta.slurm`` (23.02+); ValueError for unknown shapes."""
    block = meta.get("Slurm") or meta.get("slurm")
    if not isinstance(block, Mapping):
        raise ValueError("unknown JSON version: no meta.slurm block")
    ver = block.get("version")
    if isinstance(ver, Mapping):
        try:
            found = SlurmVersion(int(ver["major"]), int(ver["minor"]), int(ver.get("micro", 0)))
        except (KeyError, TypeError, ValueError):
            found = None
        if found is not None:
            return _check(found)
    release = block.get("release")
    if isinstance(release, str):
        return _check(parse_version_text(release))
    raise ValueError("unknown JSON version: meta.slurm has no version")


def _check(version: SlurmVersion) -> SlurmVersion:
    lo, hi = SUPPORTED
    if not lo <= version <= hi:
        raise ValueError(f"unsupported Slurm JSON version {version} (supported 22.05 .. 26.05)")
    return version
