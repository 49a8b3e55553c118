"""Time and duration parsing shared by the model, the policy file and the CLI.

Times travel as float seconds since the Unix epoch (UTC) inside gpuq: cheap to compare and
subtract over 200,000 jobs. They are RFC 3339 UTC strings on the wire.
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime

__all__ = ["KNOWN_TEXT", "format_duration", "format_time", "parse_duration", "parse_time", "parse_time_text"]

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


# Canonical strings seen while parsing, by value: writing a 200,000-job snapshot back out then
# costs a dict lookup per time instead of a datetime round trip. Bounded, and cleared when full.
KNOWN_TEXT: dict[float, str] = {}
CACHE_LIMIT = 2_000_000


_PARSED: dict[str, float] = {}


def parse_time_text(text: str) -> float:
    """Parse with a memo: real queues repeat times (arrays, bursts), and a plain dict is cheaper
    than an LRU when most times are distinct. Raises on anything but an RFC 3339 string."""
    found = _PARSED.get(text)
    if found is not None:
        return found
    if not text or text[0] not in "0123456789" or len(text) < 19 or text[10] not in "Tt ":
        raise ValueError(text)
    parsed = datetime.fromisoformat(text)
    if parsed.tzinfo is None:
        raise ValueError(text)
    epoch = parsed.timestamp()
    if len(_PARSED) >= CACHE_LIMIT:
        _PARSED.clear()
        KNOWN_TEXT.clear()
    _PARSED[text] = epoch
    if len(text) == 20 and text[19] == "Z" and text[10] == "T":
        KNOWN_TEXT[epoch] = text
    return epoch


def parse_time(text: object) -> float:
    """Epoch seconds from an RFC 3339 time with an offset (``2026-11-29T18:00:00Z``)."""
    if not isinstance(text, str):
        raise ValueError(repr(text))
    return parse_time_text(text)


def format_time(epoch: float) -> str:
    """RFC 3339 UTC string; whole seconds are written without a fraction."""
    known = KNOWN_TEXT.get(epoch)
    if known is not None:
        return known
    if epoch == int(epoch):
        text = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))
    else:
        moment = datetime.fromtimestamp(epoch, tz=UTC)
        text = moment.isoformat().replace("+00:00", "Z") if moment.microsecond else moment.strftime(
            "%Y-%m-%dT%H:%M:%SZ")
    # Queues repeat times (arrays, bursts of submissions): the next job with this time is a lookup.
    if len(KNOWN_TEXT) >= CACHE_LIMIT:
        KNOWN_TEXT.clear()
    KNOWN_TEXT[epoch] = text
    return text


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
