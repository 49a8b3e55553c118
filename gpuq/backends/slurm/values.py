"""Small value converters shared by the Slurm parsers (numbers, times, host lists).

Slurm prints text times in the client's local time without an offset; JSON carries epoch
seconds, and from 23.02 on wraps numbers as ``{"set", "infinite", "number"}``.

Every number and range is bounded by what can exist (`gpuq.model`'s limits): a host list names
at most `MAX_NODES` nodes, GPU indexes run below `MAX_GPUS_PER_NODE`, times lie within
1970..9999. Beyond them the output is malformed: ValueError, which `runner.parse_output` turns
into an error naming the command — never a loop over a hundred million names.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from gpuq.model import MAX_GPUS_PER_NODE, MAX_NODES, time_in_range

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
    "whole",
]

#: Texts Slurm uses for "no value".
NONE_TEXT = frozenset({"", "N/A", "n/a", "None", "NONE", "Unknown", "(null)", "UNLIMITED", "INFINITE"})


def json_number(value: Any) -> float | int | None:
    """A plain number, or the 23.02+ ``{set, infinite, number}`` object; unset/infinite -> None."""
    if isinstance(value, dict):
        if not value.get("set", False) or value.get("infinite", False):
            return None
        value = value.get("number")
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        return None
    return value


def whole(text: str, what: str, maximum: int) -> int:
    """A count Slurm printed (``4``), at most `maximum`; ValueError naming `what` otherwise.
    (ASCII digits only: ``'²'.isdigit()`` holds, and int() refuses it.)"""
    if not (text.isascii() and text.isdigit()) or len(text) > len(str(maximum)) or int(text) > maximum:
        raise ValueError(f"{what} {_clip(text)!r}: not a whole number from 0 to {maximum}")
    return int(text)


def _clip(text: str) -> str:
    return text if len(text) <= 24 else f"{text[:20]}… ({len(text)} characters)"


#: Slurm's "no value" numbers (NO_VAL, INFINITE, NO_VAL64, INFINITE64) where a time is expected
_SENTINELS = frozenset({0xFFFFFFFE, 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFE, 0xFFFFFFFFFFFFFFFF})


def epoch_or_none(value: Any) -> float | None:
    """Epoch seconds from JSON; 0 means "not set" in every Slurm version, and so do Slurm's
    64-bit sentinels. Any other time past 9999: ValueError."""
    number = json_number(value)
    if number is None or number <= 0 or number in _SENTINELS:
        return None
    if not time_in_range(number):
        raise ValueError(f"time {number!r} (epoch seconds) is outside 1970..9999")
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
        except (OverflowError, OSError):  # a local time the platform cannot convert: out of range
            value = -1.0
        if value is not None and not time_in_range(value):
            raise ValueError(f"time {_clip(text)!r} is outside 1970..9999")
    if len(TIME_CACHE) > 200_000:  # bounded: a long-running TUI sees ever new seconds
        TIME_CACHE.clear()
    TIME_CACHE[text] = value
    return value


#: The model's stand-in for a time Slurm did not give where the model needs one (a submit time).
EPOCH = datetime.fromtimestamp(0, UTC)


def moment(epoch: float | None) -> datetime | None:
    """Epoch seconds as the model's UTC datetime (ValueError outside 1970..9999)."""
    if epoch is None:
        return None
    if not time_in_range(epoch):
        raise ValueError(f"time {epoch!r} (epoch seconds) is outside 1970..9999")
    return datetime.fromtimestamp(epoch, UTC)


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


_INDEX_RE = re.compile(r"^(\d{1,4})(?:-(\d{1,4}))?$")


def expand_indexes(text: str) -> tuple[int, ...]:
    """``0-2,5`` -> (0, 1, 2, 5); ValueError past `MAX_GPUS_PER_NODE` GPUs or indexes."""
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        found = _INDEX_RE.match(part)
        lo = int(found.group(1)) if found else -1
        hi = int(found.group(2) or lo) if found else -1
        if not found or hi < lo or hi >= MAX_GPUS_PER_NODE or len(out) + hi - lo >= MAX_GPUS_PER_NODE:
            raise ValueError(f"GPU indexes {_clip(text)!r}: not indexes from 0 to {MAX_GPUS_PER_NODE - 1}")
        out.extend(range(lo, hi + 1))
    return tuple(out)


@lru_cache(maxsize=4096)
def expand_hostlist(text: str) -> tuple[str, ...]:
    """Slurm host list -> names: ``gpu[1-3,7],login1`` -> (gpu1, gpu2, gpu3, gpu7, login1).
    ValueError for a malformed list or one of more than `MAX_NODES` names."""
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
    count = 0
    for part in parts:
        part = part.strip()
        if not part or part in NONE_TEXT:
            continue
        count += _size(part, text)
        if count > MAX_NODES:
            raise ValueError(f"host list {_clip(text)!r} names more than {MAX_NODES} nodes")
        names.extend(_expand_one(part))
    return tuple(names)


#: the inside of one bracket: ``1-3,7``, ``001-010`` (numbers of at most 9 digits)
_BODY_RE = re.compile(r"^\d{1,9}(?:-\d{1,9})?(?:,\d{1,9}(?:-\d{1,9})?)*$")


def _size(part: str, text: str) -> int:
    """How many names one comma-free part expands to, checked before expanding it."""
    size = 1
    rest = part
    while (open_at := rest.find("[")) >= 0:
        close_at = rest.find("]", open_at)
        body = rest[open_at + 1 : close_at] if close_at > 0 else ""
        if not _BODY_RE.match(body):
            raise ValueError(f"host list {_clip(text)!r}: not a Slurm host list")
        count = 0
        for rng in body.split(","):
            lo, _, hi = rng.partition("-")
            if hi and int(hi) < int(lo):
                raise ValueError(f"host list {_clip(text)!r}: range {rng} runs backwards")
            count += int(hi) - int(lo) + 1 if hi else 1
        size *= count
        if size > MAX_NODES:
            return size
        rest = rest[close_at + 1 :]
    if "]" in rest:
        raise ValueError(f"host list {_clip(text)!r}: not a Slurm host list")
    return size


def _expand_one(part: str) -> list[str]:
    open_at = part.find("[")
    if open_at < 0:
        return [part]
    close_at = part.index("]", open_at)
    prefix, body, rest = part[:open_at], part[open_at + 1 : close_at], part[close_at + 1 :]
    out: list[str] = []
    tails = _expand_one(rest) if rest else [""]
    for rng in body.split(","):
        lo, sep, hi = rng.partition("-")
        if sep:
            width = len(lo)  # zero padding: node[001-010]
            for n in range(int(lo), int(hi) + 1):
                out.extend(prefix + str(n).zfill(width) + tail for tail in tails)
        else:
            out.extend(prefix + lo + tail for tail in tails)
    return out
