"""Time and duration parsing and formatting shared by the model, the policy file and the front ends.

Inside gpuq the model carries timezone-aware datetimes and the policy computes on epoch seconds;
on the wire and on screen times are RFC 3339 UTC strings. Nothing here keeps state between calls.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime

__all__ = ["LONGEST_S", "format_duration", "format_time", "parse_duration", "parse_time", "round_ms"]

#: The longest duration gpuq takes anywhere: the span of its times, 1970..9999 (the same bound
#: as `gpuq.model.MAX_DURATION_S`; this module imports nothing of gpuq's).
LONGEST_S = 253_402_300_799.0

_DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$")
_DURATION_PART_RE = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")
_UNIT_SECONDS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}


def parse_duration(value: object, maximum: float = LONGEST_S) -> float:
    """Seconds from a number or a string like ``90s``, ``10m``, ``2h``, ``1h30m``, at most
    `maximum` (NaN, infinities and longer durations are refused before any arithmetic on them
    can overflow).

    Raises ValueError with a message naming the accepted forms or the allowed range.
    """
    seconds: float | None = None
    if isinstance(value, bool):
        pass
    elif isinstance(value, int | float):
        if value != value:  # NaN
            raise ValueError(f"not a duration: {value!r} (use seconds or e.g. '90s', '10m', '2h')")
        if value < 0:
            raise ValueError(f"negative duration: {value!r}")
        seconds = float(value) if value <= maximum else math.inf  # (an int too large for a float)
    elif isinstance(value, str) and len(value) <= 100:  # no duration gpuq takes is written longer
        match = _DURATION_RE.match(value)
        text = value.strip()
        parts = _DURATION_PART_RE.findall(text) if not match else []
        if match:
            seconds = float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        elif parts and "".join(n + u for n, u in parts) == text:
            seconds = sum(float(n) * _UNIT_SECONDS[u] for n, u in parts)
    elif isinstance(value, str) and _DURATION_RE.match(value):  # a number of 100+ digits
        raise ValueError(f"{_clip(value.strip())} is too long: at most {format_duration(maximum)}")
    elif isinstance(value, str):
        raise ValueError(f"not a duration: {value[:20]!r}… ({len(value)} characters)")
    if seconds is None:
        raise ValueError(f"not a duration: {value!r} (use seconds or e.g. '90s', '10m', '2h')")
    if not seconds <= maximum:
        shown = value if isinstance(value, str) else f"{value:g}" if isinstance(value, float) else _big(value)
        raise ValueError(f"{_clip(shown)} is too long: at most {format_duration(maximum)}")
    return seconds


def _big(value: object) -> str:
    """An integer too large to print whole (Python refuses past 4,300 digits)."""
    return f"about 2^{value.bit_length()}" if isinstance(value, int) else repr(value)


def _clip(text: str) -> str:
    return text if len(text) <= 24 else f"{text[:20]}… ({len(text)} characters)"


#: the instants gpuq represents, in epoch seconds: 1970-01-01T00:00:00Z .. 9999-12-31T23:59:59Z
_EPOCH_RANGE = (0.0, LONGEST_S + 1.0)


def parse_time(text: object) -> float:
    """Epoch seconds from an RFC 3339 time with an offset (``2026-11-29T18:00:00Z``), within
    1970..9999 in UTC (an offset can carry ``9999-12-31T23:59:59-14:00`` past it)."""
    if not isinstance(text, str) or len(text) < 19 or not text[:1].isdigit() or text[10] not in "Tt ":
        raise ValueError(repr(text))
    parsed = datetime.fromisoformat(text)
    if parsed.tzinfo is None:
        raise ValueError(text)
    epoch = parsed.timestamp()
    if not _EPOCH_RANGE[0] <= epoch < _EPOCH_RANGE[1]:
        raise ValueError(f"{text}: outside 1970-01-01T00:00:00Z .. 9999-12-31T23:59:59Z")
    return epoch


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


#: `round_ms` works it out itself below this many seconds (115 days): its product with 1000 is then
#: within 2e-6 of the exact one, far inside the distance from a tie it leaves to `round`
_ROUND_MS_BELOW = 1e7


def round_ms(seconds: float) -> float:
    """`round(seconds, 3)`, the same float, at half the cost (`queue -o json` rounds 200,000 waits):
    the nearest millisecond worked out with arithmetic, and `round` itself near a tie (where
    the product's own rounding could tip it) or outside 0 .. 115 days."""
    if 0.0 < seconds < _ROUND_MS_BELOW:  # (0.0 and -0.0 to `round`, which keeps the sign)
        scaled = seconds * 1000.0
        whole = math.floor(scaled)
        part = scaled - whole
        if part < 0.4999 or part > 0.5001:
            return (whole + (part > 0.5)) / 1000.0
    return round(seconds, 3)
