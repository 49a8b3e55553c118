"""Time and duration parsing and formatting shared by the model, the policy file and the front ends.

Inside gpuq the model carries timezone-aware datetimes and the policy computes on epoch seconds;
on the wire and on screen times are RFC 3339 UTC strings. Nothing here keeps state between calls.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

__all__ = ["format_duration", "format_time", "parse_duration", "parse_time"]

_DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$")
_DURATION_PART_RE = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")
_UNIT_SECONDS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}


def parse_duration(value: object) -> float:
    """Seconds from a number or a string like ``90s``, ``10m``, ``2h``, ``1h30m``.

    Raises ValueError with a message naming the accepted forms.
    """
    if isinstance(value, bool):
        raise ValueError(f"not a duration: {value!r} (use seconds or e.g. '90s', '10m', '2h')")
    if isinstance(value, int | float):
        if value < 0:
            raise ValueError(f"negative duration: {value!r}")
        return float(value)
    if isinstance(value, str):
        match = _DURATION_RE.match(value)
        if match:
            return float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        text = value.strip()
        parts = _DURATION_PART_RE.findall(text)
        if parts and "".join(n + u for n, u in parts) == text:
            return sum(float(n) * _UNIT_SECONDS[u] for n, u in parts)
    raise ValueError(f"not a duration: {value!r} (use seconds or e.g. '90s', '10m', '2h')")


def parse_time(text: object) -> float:
    """Epoch seconds from an RFC 3339 time with an offset (``2026-11-29T18:00:00Z``)."""
    if not isinstance(text, str) or len(text) < 19 or not text[:1].isdigit() or text[10] not in "Tt ":
        raise ValueError(repr(text))
    parsed = datetime.fromisoformat(text)
    if parsed.tzinfo is None:
        raise ValueError(text)
    return parsed.timestamp()


def format_time(moment: datetime | float) -> str:
    """RFC 3339 UTC string (a datetime or epoch seconds); whole seconds without a fraction."""
    if not isinstance(moment, datetime):
        moment = datetime.fromtimestamp(moment, UTC)
    elif moment.utcoffset():
        moment = moment.astimezone(UTC)
    if moment.microsecond:
        return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def format_duration(seconds: float | None) -> str:
    """Compact human duration: ``45s``, ``12m``, ``3h05m``, ``2d04h``; ``-`` for None."""
    if seconds is None:
        return "-"
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, _ = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours}h{minutes:02d}m"
    days, hours = divmod(hours, 24)
    return f"{days}d{hours:02d}h"
