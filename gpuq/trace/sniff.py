"""Telling a trace's format from the path and its first bytes, and reading the core formats.

`sniff(path)` names one of `FORMATS`: a directory holding ``*.gpuqrec`` files is a recording, one
holding ``*.json`` snapshot files a snapshot history; a file is a recording by its header line
(``gpuq.recording/v1``), a job log by a ``gpuq.jobs/v1`` header or a first line that is one JSON
job (or the ``.jsonl`` suffix), a snapshot by its ``gpuq.snapshot/v1`` format tag, `sacct
--json` output by a JSON object over several lines, `sacct --parsable2` by a ``JobID|…`` header,
Philly by a JSON array, Helios and Alibaba 2023 by their exact header rows. Anything else needs
`--preset` or `--columns`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Final

from gpuq.errors import BadInput, NotFound
from gpuq.textsafe import visible
from gpuq.trace.formats import FORMATS, PRESETS
from gpuq.trace.record import TraceJob
from gpuq.trace.source import open_binary

__all__ = ["FORMATS", "PRESETS", "read_trace", "sniff"]


_HEAD: Final = 64 << 10
_FORMAT_RE: Final = re.compile(rb'"format"\s*:\s*"([^"]{1,64})"')
_RECORDING_SUFFIX: Final = ".gpuqrec"
_NEEDS_OPTION: Final = "give --preset (philly, helios, alibaba-pai-2020, alibaba-gpu-2023) or --columns"


def _head(path: str) -> bytes:
    with open_binary(path) as stream:
        return stream.read(_HEAD)


def sniff(path: str) -> str:
    """The format of the trace at `path` (module docstring). NotFound for a missing path;
    BadInput for a directory of neither kind or a file of no format gpuq can tell."""
    shown = visible(path)
    if os.path.isdir(path):
        try:
            names = [p.name for p in Path(path).iterdir() if p.is_file()]
        except OSError as exc:
            raise BadInput(f"{shown}: cannot list the directory ({exc.strerror})") from None
        if any(n.endswith(_RECORDING_SUFFIX) for n in names):
            return "recording"
        if any(n.endswith(".json") for n in names):
            return "snapshots"
        if {"pai_job_table.csv", "pai_task_table.csv"} <= set(names):
            return "alibaba-pai-2020"
        raise BadInput(f"{shown}: a directory with neither recordings (*{_RECORDING_SUFFIX}) nor snapshot files "
                       "(*.json)")  # fmt: skip
    if not os.path.exists(path):
        raise NotFound(f"{shown}: no such trace file or directory")
    head = _head(path)
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    first = text.split(b"\n", 1)[0].strip()
    if path.endswith(_RECORDING_SUFFIX) or first.startswith(b'{"format":"gpuq.recording/'):
        return "recording"
    if text.startswith(b"{"):
        found = _FORMAT_RE.search(text)
        fmt = found.group(1) if found else b""
        if fmt == b"gpuq.snapshot/v1":  # (one line as `gpuq snapshot` writes it, or indented)
            return "snapshots"
        one_line = first.endswith(b"}")
        if fmt.startswith(b"gpuq.jobs/") or path.endswith(".jsonl") or one_line and b'"submit_time"' in first:
            return "jobs"
        if not one_line and b'"jobs"' in head:
            return "sacct-json"
        raise BadInput(f"{shown}: a JSON file gpuq does not recognise (a gpuq.jobs/v1 log, a gpuq.snapshot/v1 "
                       "file or `sacct --json` output)")  # fmt: skip
    if text.startswith(b"["):
        return "philly"
    if first.startswith(b"JobID|") or first.startswith(b"JobIDRaw|"):
        return "sacct-parsable"
    header = first.decode("utf-8", "replace").strip()
    from gpuq.trace.presets import ALIBABA_2023_COLUMNS, HELIOS_COLUMNS

    if header == ",".join(HELIOS_COLUMNS):
        return "helios"
    if header == ",".join(ALIBABA_2023_COLUMNS):
        return "alibaba-gpu-2023"
    if first.count(b"|") >= 8:
        raise BadInput(f"{shown}: looks like `sacct --parsable2` output without its header line; keep the header "
                       "(sacct without -n/--noheader, or `gpuq trace export`)")  # fmt: skip
    raise BadInput(f"{shown}: cannot tell the trace's format; {_NEEDS_OPTION}")


def read_trace(
    path: str, fmt: str, *, columns: Mapping[str, str] | None = None, class_from: str | None = None
) -> Iterator[TraceJob]:
    """The jobs of `path` read as `fmt` (one of `FORMATS`, except the recording and sacct
    formats, whose readers live outside the core: `gpuq.service.tracing` reads those).
    `class_from`: a column of a CSV format, a `TraceJob` field of a JSON one."""
    from gpuq.trace import presets
    from gpuq.trace.classes import class_from_field
    from gpuq.trace.csvmap import read_csv
    from gpuq.trace.joblog import read_joblog
    from gpuq.trace.philly import read_philly
    from gpuq.trace.snapshots import read_snapshots

    if fmt == "csv":
        if not columns:
            raise BadInput(f"{visible(path)}: a CSV trace needs --columns (or a --preset)")
        return read_csv(path, columns, class_from)
    if fmt == "helios":
        return presets.read_helios(path, class_from)
    if fmt == "alibaba-gpu-2023":
        return presets.read_alibaba_2023(path, class_from)
    if fmt == "alibaba-pai-2020":
        return presets.read_pai_2020(path, class_from)
    readers = {"jobs": read_joblog, "snapshots": read_snapshots, "philly": read_philly}
    reader = readers.get(fmt)
    if reader is None:
        raise BadInput(f"unknown trace format {visible(fmt)!r} (one of {', '.join(FORMATS)})")
    if not os.path.exists(path):
        raise NotFound(f"{visible(path)}: no such trace file or directory")
    jobs = reader(path)
    return jobs if class_from is None else class_from_field(jobs, class_from)
