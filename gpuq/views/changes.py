"""An action's change in words: the fields it changes, before and after, as people read them.

Values come as backends report them (epoch floats for times, GPU-seconds, `{node: [indexes]}`),
and read the way the tables show them: times to the second, GPU-hours, `gpu-015:0-3`, priorities
as whole numbers (`1000000`, never `1e+06`), yes/no.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from gpuq.timefmt import format_duration, format_time, parse_time

__all__ = [
    "Change",
    "changes",
    "describe_value",
    "format_gpu_indexes",
    "format_number",
    "format_priority",
    "to_second",
]

#: (field, before, after), each value as text
Change = tuple[str, str, str]


#: fields that hold a moment (epoch seconds or RFC 3339 text), whatever their value looks like
_TIME_FIELDS = frozenset({"exempt_until", "start_time", "end_time", "submit_time", "eligible_time",
                          "last_checkpoint_time", "time"})  # fmt: skip
#: epoch seconds past this (2001-09-09) in a field not named above are read as a moment too
_EPOCH_FLOOR = 1e9


def format_number(value: float) -> str:
    """A whole number without a fraction or an exponent (`1000000`), else two decimals at most."""
    if not math.isfinite(value):
        return str(value)
    if value == int(value):
        return str(int(value))
    return f"{value:.2f}".rstrip("0").rstrip(".")


def format_priority(value: float) -> str:
    """A (effective) priority as the tables show it: `1000000`, `113.5`; never `1e+06`."""
    if not math.isfinite(value):
        return str(value)
    return format_number(round(value, 1))


def _time(value: datetime | float | str) -> str:
    if isinstance(value, str):
        try:
            return format_time(math.floor(parse_time(value)))
        except (ValueError, OverflowError):
            return value
    if isinstance(value, datetime):
        return format_time(value.replace(microsecond=0))
    return format_time(math.floor(value))


def _index_ranges(indexes: list[int]) -> str:
    """`[0, 1, 2, 3, 6]` -> `0-3,6`."""
    parts: list[str] = []
    start = prev = indexes[0]
    for i in [*indexes[1:], None]:
        if i is not None and i == prev + 1:
            prev = i
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if i is not None:
            start = prev = i
    return ",".join(parts)


def format_gpu_indexes(allocation: Mapping[str, Any]) -> str:
    """`{node: [indexes]}` -> `gpu-015:0-3 gpu-016:1` (`gpu-015:2 GPUs` where indexes are unknown)."""
    if not allocation:
        return "none"
    parts = []
    for node, held in allocation.items():
        held = list(held) if isinstance(held, list | tuple) else [held]
        known = sorted(i for i in held if isinstance(i, int) and not isinstance(i, bool))
        if known and len(known) == len(held):
            parts.append(f"{node}:{_index_ranges(known)}")
        else:
            parts.append(f"{node}:{len(held)} GPU{'' if len(held) == 1 else 's'}")
    return " ".join(parts)


def describe_value(value: Any, key: str | None = None) -> str:
    """A before/after value for people, read by what the field `key` holds: times to the second
    (RFC 3339, UTC), GPU-seconds as GPU-hours, other `*_s` seconds as a duration, allocations as
    `node:indexes`, priorities and other numbers without exponents, flags as yes/no."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    name = key or ""
    if isinstance(value, datetime) or name in _TIME_FIELDS:
        return _time(value) if isinstance(value, datetime | int | float | str) else str(value)
    if isinstance(value, Mapping):
        return format_gpu_indexes(value)
    if isinstance(value, list | tuple):
        return ", ".join(describe_value(v) for v in value) or "none"
    if isinstance(value, int | float):
        if "gpu_seconds" in name:
            return f"{value / 3600:.2f} GPU-h"
        if name.endswith("_s"):
            return format_duration(value)
        if "priority" in name:
            return format_priority(value)
        if isinstance(value, float) and value > _EPOCH_FLOOR:
            return _time(value)
        return format_number(value)
    return str(value)


def changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[Change]:
    """(key, before, after) for every key whose value an action changes."""
    return [
        (key, describe_value(before.get(key), key), describe_value(after.get(key), key))
        for key in sorted(set(before) | set(after))
        if before.get(key) != after.get(key)
    ]


_FRACTION = re.compile(r"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\.\d+Z")


def to_second(text: str) -> str:
    """A backend's message with its RFC 3339 times cut to the second, as gpuq shows times."""
    return _FRACTION.sub(r"\1Z", text)
