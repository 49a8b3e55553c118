"""Output helpers: JSON (stable documents), CSV (csv module) and Rich tables (imported lazily).

Rich is imported only when a table is drawn, so `-o json` and `-o csv` never pay for it; csv
only when CSV is written.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import click
import msgspec

from gpuq.timefmt import format_duration, format_time

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from gpuq.cli.options import App

__all__ = [
    "emit_csv",
    "emit_json",
    "emit_json_bytes",
    "fmt_duration",
    "fmt_time",
    "make_console",
    "make_table",
    "print_table",
    "warn",
    "write_bytes",
]


def _plain(value: Any) -> Any:
    """What JSON cannot hold natively, as text (msgspec handles datetimes, enums and structs)."""
    return str(value)


def emit_json(doc: Any) -> None:
    """One JSON document on stdout: indented on a terminal, compact in a pipe (same content)."""
    emit_json_bytes(msgspec.json.encode(doc, enc_hook=_plain) + b"\n")


def emit_json_bytes(data: bytes) -> None:
    """An encoded JSON document (with its newline), indented first when stdout is a terminal."""
    if sys.stdout.isatty():
        data = msgspec.json.format(data, indent=2)
    write_bytes(data)


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
        "NAME", "USER", "TENANT", "CLASS", "NODES", "NOTE", "DETAIL", "REASON", "CHANGE", "UNPLACED", "OPERATOR",
        "LAST", "MODEL", "BY", "CLUSTER",
    }
)  # fmt: skip


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


def say_none(table: Table) -> Table:
    """An empty table says so: one row reading "none" (no rows could be read as a failed read)."""
    if table.row_count == 0 and table.columns:
        table.add_row("none", *([""] * (len(table.columns) - 1)), style="dim")
    return table


def print_table(app: App, table: Table) -> None:
    make_console(app).print(say_none(table))


def fmt_time(moment: datetime | float | None) -> str:
    return "-" if moment is None else format_time(moment)


def fmt_duration(seconds: float | None) -> str:
    return format_duration(seconds)
