"""GPU counts and indexes from Slurm's GRES/TRES spellings, across 22.05 .. 26.05.

Spellings seen: ``gres:gpu:2`` (22.05 tres_per_node), ``gres/gpu:2`` / ``gres/gpu:h100:2``
(23.02+), ``gres/gpu=4`` and ``gres/gpu:h100=4`` in TRES strings, and the per-node detail
``gpu:h100:4(IDX:0-3)``.
"""

from __future__ import annotations

import re
from functools import lru_cache

from gpuq.backends.slurm.values import expand_indexes, whole
from gpuq.model import MAX_GPUS_PER_NODE, MAX_JOB_GPUS

__all__ = ["gpu_model", "gpus_from_tres", "gpus_from_tres_per", "parse_gres_detail"]

_DETAIL_RE = re.compile(r"gpu(?::([^:(,]+))?(?::(\d+))?\(IDX:([^)]*)\)")


@lru_cache(maxsize=4096)
def parse_gres_detail(text: str) -> tuple[int, ...] | None:
    """GPU indexes from ``gpu:h100:4(IDX:0-3)`` (possibly among other GRES); None if absent."""
    found = False
    indexes: list[int] = []
    for match in _DETAIL_RE.finditer(text):
        idx = match.group(3)
        found = True
        if idx and idx not in ("N/A",):
            indexes.extend(expand_indexes(idx))
    return tuple(indexes) if found else None


@lru_cache(maxsize=4096)
def gpus_from_tres(text: str) -> int | None:
    """GPUs from a TRES string (``cpu=1,...,gres/gpu=4``); None when no gres/gpu entry is there.

    The untyped ``gres/gpu=`` total wins over typed entries, which only split it by model.
    """
    typed = 0
    seen_typed = False
    for item in text.split(","):
        key, sep, value = item.partition("=")
        if not sep or not value.isdigit():
            continue
        if key == "gres/gpu":
            return whole(value, "gres/gpu", MAX_JOB_GPUS)
        if key.startswith("gres/gpu:"):
            typed += whole(value, key, MAX_JOB_GPUS)
            seen_typed = True
    if typed > MAX_JOB_GPUS:
        raise ValueError(f"TRES {text[:40]!r}: more GPUs than any cluster has")
    return typed if seen_typed else None


@lru_cache(maxsize=4096)
def gpus_from_tres_per(text: str) -> int | None:
    """GPUs from a tres_per_node/job/task value: ``gres:gpu:2``, ``gres/gpu:h100:2``, ``gpu:2``."""
    total = 0
    seen = False
    for item in text.split(","):
        item = item.strip()
        for prefix in ("gres:", "gres/"):
            if item.startswith(prefix):
                item = item[len(prefix) :]
                break
        if not (item == "gpu" or item.startswith("gpu:") or item.startswith("gpu=")):
            continue
        seen = True
        last = re.split(r"[:=]", item)[-1]
        total += whole(last, "GPU count", MAX_JOB_GPUS) if last.isdigit() else 1  # bare "gpu" / "gpu:h100": one
    if total > MAX_JOB_GPUS:
        raise ValueError(f"TRES {text[:40]!r}: more GPUs than any cluster has")
    return total if seen else None


def gpu_model(gres: str) -> str | None:
    """GPU type from a node's GRES (``gpu:h100:4`` -> h100); None when untyped."""
    for item in gres.split(","):
        parts = item.split("(")[0].split(":")
        if parts[0] == "gpu" and len(parts) >= 3:
            return parts[1]
    return None


def node_gpu_total(gres: str) -> int:
    """GPU count from a node's configured GRES (``gpu:h100:4,mps:100`` -> 4)."""
    total = 0
    for item in gres.split(","):
        parts = item.split("(")[0].split(":")
        if parts[0] == "gpu":
            last = parts[-1]
            total += whole(last, "GPUs of a node", MAX_GPUS_PER_NODE) if last.isdigit() else 1
    if total > MAX_GPUS_PER_NODE:
        raise ValueError(f"GRES {gres[:40]!r}: more than {MAX_GPUS_PER_NODE} GPUs on one node")
    return total
