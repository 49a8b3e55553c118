"""An action's change in words: the fields it changes, before and after, as people read them."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from gpuq.timefmt import format_time

__all__ = ["Change", "changes", "describe_value"]

#: (field, before, after), each value as text
Change = tuple[str, str, str]


def describe_value(value: Any) -> str:
    """A before/after value for people: times (and epoch floats, e.g. `exempt_until`) as RFC 3339."""
    if isinstance(value, datetime) or (isinstance(value, float) and value > 1e9):
        return format_time(value)
    return "-" if value is None else str(value)


def changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[Change]:
    """(key, before, after) for every key whose value an action changes."""
    return [
        (key, describe_value(before.get(key)), describe_value(after.get(key)))
        for key in sorted(set(before) | set(after))
        if before.get(key) != after.get(key)
    ]
