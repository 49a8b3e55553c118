"""Output helpers: JSON (stable documents), CSV (csv module), tables and messages.

Tables and messages are drawn by `gpuq.cli.table` (no Rich: it lays out plain strings, fast, and
never reads outside text as markup); csv is imported only when CSV is written.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import click
import msgspec

from gpuq.cli.output import write_bytes, write_text
from gpuq.cli.table import Cell, Styles, colour_enabled, render_lines, render_table, terminal_width, write_lines
from gpuq.textsafe import json_safe, visible
from gpuq.timefmt import format_duration, format_time
from gpuq.views.columns import TableSpec

if TYPE_CHECKING:
    from gpuq.cli.options import App
    from gpuq.model import Snapshot

__all__ = [
    "emit_csv",
    "emit_json",
    "emit_json_bytes",
    "fmt_duration",
    "fmt_time",
    "print_table",
    "say",
    "say_unread",
    "warn",
    "write_bytes",
]


def _plain(value: Any) -> Any:
    """What JSON cannot hold natively, as text (msgspec handles datetimes, enums and structs)."""
    return str(value)


def emit_json(doc: Any) -> None:
    """One JSON document on stdout: indented on a terminal, compact in a pipe (same content)."""
    emit_json_bytes(msgspec.json.encode(doc, enc_hook=_plain) + b"\n")


def emit_json_bytes(data: bytes | bytearray) -> None:
    """An encoded JSON document (with its newline), indented first when stdout is a terminal;
    hidden characters past ASCII written as ``\\u`` escapes (`textsafe.json_safe`)."""
    data = json_safe(data)
    if sys.stdout.isatty():
        data = msgspec.json.format(data, indent=2)
    write_bytes(data)


def emit_csv(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    buffer = io.StringIO()
    import csv

    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    # (text cells as the tables show them: control and bidi characters as escapes, README "CSV")
    writer.writerows(["" if v is None else visible(v) if isinstance(v, str) else v for v in row] for row in rows)
    write_text(buffer.getvalue())


def warn(message: str) -> None:
    click.echo(f"gpuq: warning: {visible(message)}", err=True)


def print_table(
    app: App,
    spec: TableSpec,
    rows: Sequence[Sequence[Cell]],
    *,
    title: str | None = None,
    styles: Styles | None = None,
) -> None:
    """A table fitted to the terminal (`gpuq.cli.table`); `--no-headers` leaves out the title,
    the header line and the hidden-columns line (for awk and friends)."""
    plain = app.no_headers
    lines = render_table(spec, rows, width=terminal_width(), wide=app.wide, title=None if plain else title,
                         colour=colour_enabled(app.color), styles=styles, header=not plain, note=not plain)  # fmt: skip
    write_lines(lines)


def say(app: App, *parts: str | tuple[str, str | None]) -> None:
    """One message line (wrapped at spaces to the terminal): `parts` are text, outside data
    included (shown visibly, never read as markup), or (text, style) for gpuq's own words."""
    write_lines(render_lines(parts, width=terminal_width(), colour=colour_enabled(app.color)))


def say_unread(app: App, snapshot: Snapshot) -> None:
    """Under a table: a ``note:`` line per kind of data the snapshot lacks (`Snapshot.unread`),
    so numbers built without it are not read as whole. Every read command's table says it here
    (and its JSON in ``unread``, `gpuq.views.unread.unread_document`). Under `--no-headers` the
    lines go to stderr as warnings: the rows stay rows for awk, and the gap is still said."""
    from gpuq.views.unread import unread_notes

    for note in unread_notes(snapshot):
        if app.no_headers:
            warn(f"note: {note}")
        else:
            say(app, ("note: ", "bold"), note)


def fmt_time(moment: datetime | float | None) -> str:
    """A time as tables and messages show it: to the second (JSON and CSV keep the fraction)."""
    if moment is None:
        return "-"
    if isinstance(moment, datetime):
        return format_time(moment.replace(microsecond=0))
    return format_time(float(int(moment)))


def fmt_duration(seconds: float | None) -> str:
    return format_duration(seconds)
