"""CSV of a screen with several sections (`overview`, `preemptions`) as one table.

The first column, `section`, names the part of the JSON document a row comes from (`sla`,
`top_pending`, `events`, ...); the other columns are the union of the sections' fields, under
the JSON document's names, and each row fills only its own section's columns. A section of
single values (the snapshot's cluster and time, GPU counts, jobs per state) gives one row per
value, under `key` and `value`. So a spreadsheet or `awk -F, '$1 == "sla"'` gets every section
from one well-formed CSV, and the columns stay put when a section is empty.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

__all__ = ["keyed_rows", "section_rows"]


def _cell(value: Any) -> Any:
    if isinstance(value, list | tuple):
        return " ".join(str(v) for v in value)
    return value


def section_rows(header: Sequence[str], section: str, records: Iterable[Mapping[str, Any]]) -> Iterator[list[Any]]:
    """One row per record, each field under its column of `header` (whose first is `section`)."""
    index = {name: i for i, name in enumerate(header)}
    for record in records:
        row: list[Any] = [None] * len(header)
        row[0] = section
        for key, value in record.items():
            row[index[key]] = _cell(value)  # a KeyError here is a header that lost a field
        yield row


def keyed_rows(header: Sequence[str], section: str, values: Mapping[str, Any]) -> Iterator[list[Any]]:
    """One row per single value of a section: `key`, `value`."""
    return section_rows(header, section, ({"key": k, "value": v} for k, v in values.items()))
