"""Output helpers: JSON (stable documents), CSV (csv module) and Rich tables (imported lazily).

Rich is imported only when a table is drawn, so `-o json` and `-o csv` never pay for it; csv
only when CSV is written (7 ms of start-up where no bytecode cache is written).
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import click

from gpuq.timefmt import format_duration, format_time

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from gpuq.cli.options import App

__all__ = [
    "changes",
    "describe_value",
    "emit_csv",
    "emit_json",
    "fmt_duration",
    "fmt_time",
    "make_console",
    "make_table",
    "natural_key",
    "print_table",
    "warn",
    "write_bytes",
]


def emit_json(doc: Any) -> None:
    """One JSON document on stdout: indented on a terminal, compact in a pipe (same content).

    orjson (a gpuq dependency) keeps `queue -o json` on 200,000 jobs well inside its budget.
    """
    import orjson

    option = orjson.OPT_INDENT_2 if sys.stdout.isatty() else 0
    write_bytes(orjson.dumps(doc, option=option | orjson.OPT_APPEND_NEWLINE, default=str))


def write_bytes(data: bytes) -> None:
    """Write encoded output to stdout, through its binary buffer when it has one."""
    sys.stdout.flush()
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:
        sys.stdout.write(data.decode("utf-8"))
        sys.stdout.flush()
        return
    buffer.write(data)
    buffer.flush()


def emit_csv(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    buffer = io.StringIO()
    import csv

    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(["" if v is None else v for v in row] for row in rows)
    click.echo(buffer.getvalue(), nl=False)


def warn(message: str) -> None:
    click.echo(f"gpuq: warning: {message}", err=True)


def make_console(app: App) -> Console:
    from rich.console import Console

    stream = sys.stdout
    is_tty = stream.isatty()
    # In a pipe Rich would assume 80 columns and cut ids; use a wide page instead.
    width = None if is_tty or "COLUMNS" in os.environ else 200
    return Console(
        file=stream,
        no_color=not app.color,
        color_system="auto" if app.color else None,
        highlight=False,
        width=width,
        soft_wrap=False,
    )


#: Columns that give way on a narrow terminal (wrapped at spaces, long words cut with "…");
#: ids, states and numbers are never wrapped, so a row always stays readable.
SOFT_COLUMNS = frozenset(
    {
        "NAME",
        "USER",
        "TENANT",
        "CLASS",
        "NODES",
        "NOTE",
        "DETAIL",
        "REASON",
        "CHANGE",
        "UNPLACED",
        "OPERATOR",
        "LAST",
        "MODEL",
        "BY",
        "CLUSTER",
    }
)


def make_table(title: str | None, columns: Sequence[str], *, right: Iterable[str] = ()) -> Table:
    from rich import box
    from rich.table import Table

    table = Table(title=title, box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False)
    right_cols = set(right)
    for name in columns:
        soft = name in SOFT_COLUMNS
        table.add_column(
            name,
            justify="right" if name in right_cols else "left",
            no_wrap=not soft,
            overflow="ellipsis" if soft else "fold",
            min_width=min(len(name), 6) if soft else None,
        )
    return table


def print_table(app: App, table: Table) -> None:
    make_console(app).print(table)


def describe_value(value: Any) -> str:
    """A before/after value for people: epoch floats (e.g. `exempt_until`) as RFC 3339 times."""
    if isinstance(value, float) and value > 1e9:
        return format_time(value)
    return "-" if value is None else str(value)


def changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(key, before, after) for every key whose value an action changed."""
    return [
        (key, describe_value(before.get(key)), describe_value(after.get(key)))
        for key in sorted(set(before) | set(after))
        if before.get(key) != after.get(key)
    ]


def fmt_time(epoch: float | None) -> str:
    return "-" if epoch is None else format_time(epoch)


def fmt_duration(seconds: float | None) -> str:
    return format_duration(seconds)


def natural_key(job_id: str) -> tuple[Any, ...]:
    """Sort `9` before `10` and `123_4` after `123_3`, whatever mix of digits and text ids use."""
    parts: list[Any] = []
    number = ""
    text = ""
    for ch in job_id:
        if ch.isdigit():
            if text:
                parts.append((1, text, 0))
                text = ""
            number += ch
        else:
            if number:
                parts.append((0, "", int(number)))
                number = ""
            text += ch
    if number:
        parts.append((0, "", int(number)))
    if text:
        parts.append((1, text, 0))
    return tuple(parts)
