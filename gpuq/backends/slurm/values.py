"""Small value converters shared by the Slurm parsers (numbers, times, host lists).

Slurm prints text times in the client's local time without an offset; JSON carries epoch
seconds, and from 23.02 on wraps numbers as ``{"set", "infinite", "number"}``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

__all__ = [
    "NONE_TEXT",
    "epoch_or_none",
    "expand_hostlist",
    "expand_indexes",
    "json_number",
    "EPOCH",
    "MOMENT_CACHE",
    "TIME_CACHE",
    "moment",
    "moment_or_none",
    "text_moment",
    "text_time",
]

#: Texts Slurm uses for "no value".
NONE_TEXT = frozenset({"", "N/A", "n/a", "None", "NONE", "Unknown", "(null)", "UNLIMITED", "INFINITE"})


def json_number(value: Any) -> float | int | None:
    """A plain number, or the 23.02+ ``{set, infinite, number}`` object; unset/infinite -> None."""
    if isinstance(value, dict):
        if not value.get("set", False) or value.get("infinite", False):
            return None
        value = value.get("number")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value


def epoch_or_none(value: Any) -> float | None:
    """Epoch seconds from JSON; 0 means "not set" in every Slurm version."""
    number = json_number(value)
    if number is None or number <= 0:
        return None
    return float(number)


#: Parsed text times; hot loops look here first (a queue repeats the same seconds a lot).
TIME_CACHE: dict[str, float | None] = {}


def text_time(text: str) -> float | None:
    """Epoch seconds from Slurm's ``2026-11-29T18:17:45`` (local time), or None for Unknown/None."""
    if text in TIME_CACHE:
        return TIME_CACHE[text]
    value: float | None = None
    if text and text not in NONE_TEXT and text[0].isdigit():
        try:
            value = datetime.fromisoformat(text).timestamp()
        except ValueError:
            value = None
    if len(TIME_CACHE) > 200_000:  # bounded: a long-running TUI sees ever new seconds
        TIME_CACHE.clear()
    TIME_CACHE[text] = value
    return value


#: The model's stand-in for a time Slurm did not give where the model needs one (a submit time).
EPOCH = datetime.fromtimestamp(0, UTC)


def moment(epoch: float | None) -> datetime | None:
    """Epoch seconds as the model's UTC datetime."""
    return None if epoch is None else datetime.fromtimestamp(epoch, UTC)


#: The same times as model datetimes (UTC), for the jobs the parsers build.
MOMENT_CACHE: dict[str, datetime | None] = {}


def text_moment(text: str) -> datetime | None:
    """`text_time` as a UTC datetime (the model's times), cached the same way."""
    if text in MOMENT_CACHE:
        return MOMENT_CACHE[text]
    value = moment(text_time(text))
    if len(MOMENT_CACHE) > 200_000:
        MOMENT_CACHE.clear()
    MOMENT_CACHE[text] = value
    return value


def moment_or_none(value: Any) -> datetime | None:
    """`epoch_or_none` as a UTC datetime."""
    return moment(epoch_or_none(value))


def expand_indexes(text: str) -> tuple[int, ...]:
    """``0-2,5`` -> (0, 1, 2, 5)."""
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        if sep:
            out.extend(range(int(lo), int(hi) + 1))
        else:
            out.append(int(lo))
    return tuple(out)


@lru_cache(maxsize=4096)
def expand_hostlist(text: str) -> tuple[str, ...]:
    """Slurm host list -> names: ``gpu[1-3,7],login1`` -> (gpu1, gpu2, gpu3, gpu7, login1)."""
    names: list[str] = []
    depth = 0
    start = 0
    parts: list[str] = []
    for i, ch in enumerate(text):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    for part in parts:
        part = part.strip()
        if not part or part in NONE_TEXT:
            continue
        names.extend(_expand_one(part))
    return tuple(names)


def _expand_one(part: str) -> list[str]:
    open_at = part.find("[")
    if open_at < 0:
        return [part]
    close_at = part.index("]", open_at)
    prefix, body, rest = part[:open_at], part[open_at + 1 : close_at], part[close_at + 1 :]
    out: list[str] = []
    for rng in body.split(","):
        lo, sep, hi = rng.partition("-")
        if sep:
            width = len(lo)  # zero padding: node[001-010]
            for n in range(int(lo), int(hi) + 1):
                out.extend(prefix + str(n).zfill(width) + tail for tail in _expand_one(rest) or [""])
        else:
            out.extend(prefix + lo + tail for tail in _expand_one(rest) or [""])
    return out
