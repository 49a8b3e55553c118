"""Rows of a CSV trace with their line numbers, for every CSV reader (the stdlib csv module).

A header row names the columns; a headerless format (Alibaba PAI 2020) passes its documented
names, and a first line equal to them is skipped as a header. A row with another number of
cells than the header, a file that is not UTF-8 or a quoting error is a `TraceError` naming the
line; `cell_error` names the column by name and position (the TraceError's column is the
1-based position of the cell in its row).
"""

from __future__ import annotations

import csv
from collections.abc import Iterator, Sequence

from gpuq.trace.check import shown
from gpuq.trace.record import TraceError
from gpuq.trace.source import open_text

__all__ = ["cell_error", "column_index", "csv_rows"]

def cell_error(path: str, line: int, index: int, name: str, exc: ValueError) -> TraceError:
    """The TraceError for cell `index` (column `name`) of the row on `line`."""
    return TraceError(path, line, f"{name}: {exc}", index + 1)


def csv_rows(path: str, names: Sequence[str] | None = None) -> Iterator[tuple[int, list[str]]]:
    """The header first, as (its line, its names) (the file's first row; `names` for a headerless
    format; ``(1, [])`` for an empty file), then each data row with its line number. A cell is
    at most csv's default 128 KiB (a longer one is a TraceError, not a job)."""
    with open_text(path) as text:
        reader = csv.reader(text, strict=True)
        try:
            header = list(names) if names is not None else None
            for row in reader:  # the header, or the first data row of a headerless format
                if not row or (len(row) == 1 and not row[0].strip()):
                    continue  # a blank line
                first = [cell.strip() for cell in row]
                if header is None:
                    header = first
                    yield reader.line_num, header
                    break
                yield 1, header
                if first != header:
                    if len(row) != len(header):
                        raise _width_error(path, reader.line_num, row, header)
                    yield reader.line_num, row
                break
            else:
                yield 1, header or []
                return
            width = len(header)
            for row in reader:
                if len(row) != width:
                    if not row or (len(row) == 1 and not row[0].strip()):
                        continue  # a blank line
                    raise _width_error(path, reader.line_num, row, header)
                yield reader.line_num, row
        except csv.Error as exc:
            raise TraceError(path, reader.line_num, f"not valid CSV: {exc}") from None


def _width_error(path: str, line: int, row: list[str], header: Sequence[str]) -> TraceError:
    width = len(header)
    return TraceError(path, line, f"expected {width} columns ({_names(header)}), got {len(row)}",
                      min(len(row), width) + 1)  # fmt: skip


def column_index(path: str, header: Sequence[str], column: str, what: str) -> int:
    """The position of `column` in `header`; TraceError (line 1) when it has none."""
    try:
        return list(header).index(column)
    except ValueError:
        raise TraceError(path, 1, f"{what}: no column {shown(column)} in the header "
                         f"(columns: {_names(header)})") from None  # fmt: skip


def _names(header: Sequence[str]) -> str:
    return shown(", ".join(header), 200)[1:-1] if len(header) else "none"
