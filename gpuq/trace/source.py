"""Opening a trace file: one clear error for a missing or unreadable path, gzip read transparently.

The public traces ship compressed (`cluster_job_log.gz`, `pai_job_table.tar.gz` holds CSVs);
a path ending in ``.gz`` is decompressed as it streams, never unpacked whole.
"""

from __future__ import annotations

import gzip
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

from gpuq.errors import BadInput, NotFound
from gpuq.files import refuse_special
from gpuq.textsafe import visible
from gpuq.trace.record import TraceError

__all__ = ["open_binary", "open_text"]


def _refuse(path: str, exc: OSError) -> Exception:
    shown = visible(path)
    if isinstance(exc, FileNotFoundError):
        return NotFound(f"{shown}: no such trace file")
    if isinstance(exc, IsADirectoryError):
        return BadInput(f"{shown}: is a directory, not a trace file")
    return BadInput(f"{shown}: cannot read trace ({exc.strerror or exc})")


@contextmanager
def open_binary(path: str) -> Iterator[IO[bytes]]:
    """The file's bytes as a line-iterable stream (gunzipped when the name ends in .gz)."""
    refuse_special(path, "trace file")
    try:
        raw: IO[bytes] = open(path, "rb")  # noqa: SIM115 (closed below)
    except OSError as exc:
        raise _refuse(path, exc) from None
    try:
        if path.endswith(".gz"):
            with gzip.GzipFile(fileobj=raw, mode="rb") as unpacked:
                yield unpacked  # type: ignore[misc]
        else:
            yield raw
    except (gzip.BadGzipFile, EOFError) as exc:
        raise BadInput(f"{visible(path)}: not a readable gzip file ({exc})") from None
    finally:
        raw.close()


@contextmanager
def open_text(path: str) -> Iterator[Iterator[str]]:
    """The file's lines as UTF-8 text, for the csv module (a BOM is skipped; line endings are
    kept, as csv wants). Each line is decoded alone, so text that is not UTF-8 is a TraceError
    naming its line and column."""
    if os.path.isdir(path):
        raise BadInput(f"{visible(path)}: is a directory, not a trace file")
    with open_binary(path) as raw:
        yield _decoded(raw, path)


def _decoded(raw: IO[bytes], path: str) -> Iterator[str]:
    for number, line in enumerate(raw, 1):
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            column = len(line[: exc.start].decode("utf-8", "replace")) + 1
            raise TraceError(path, number, f"not UTF-8 text (byte {line[exc.start]:#04x})", column) from None
        yield text[1:] if number == 1 and text.startswith("\ufeff") else text
