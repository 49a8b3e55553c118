"""gpuq's own job log (`gpuq.jobs/v1`): JSON lines, one finished or pending job per line.

The first line may be a header `{"format": "gpuq.jobs/v1", ...}` (other keys: where it came
from: `cluster`, `backend`, the window `since`/`until`, the cluster's shape `cluster_shape`);
every other line is one job whose keys are `TraceJob`'s fields. Times are POSIX seconds. Only
`id`, `submit_time`, `duration_s` and `gpus` are required; unknown keys are ignored (a later
version may add some); blank lines are skipped. The README documents it.

`read_joblog` streams: one line is decoded at a time, straight into a `TraceJob` by msgspec.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Final, TextIO

import msgspec

from gpuq.jsonsafe import decoded
from gpuq.textsafe import json_safe
from gpuq.trace.check import checked, json_error, shown
from gpuq.trace.record import TraceError, TraceJob
from gpuq.trace.source import open_binary

__all__ = ["FORMAT", "header_line", "is_header", "job_line", "read_header", "read_joblog", "write_jobs"]

FORMAT: Final = "gpuq.jobs/v1"

_encoder = msgspec.json.Encoder()
_FIELDS: Final = tuple(TraceJob.__dataclass_fields__)


def header_line(meta: Mapping[str, Any] | None = None) -> str:
    """The optional first line: the format name and what the log came from (`meta`)."""
    return json_safe(_encoder.encode({"format": FORMAT, **(meta or {})})).decode() + "\n"


def job_line(job: TraceJob) -> str:
    """One job as a line; fields a source did not record (None, empty) are left out. Hidden
    characters are written as \\u escapes (`textsafe.json_safe`): a log read on a terminal."""
    raw = {name: getattr(job, name) for name in _FIELDS}
    line = _encoder.encode({k: v for k, v in raw.items() if v is not None and v != "" and v != ()})
    return json_safe(line).decode() + "\n"


def write_jobs(jobs: Iterable[TraceJob], out: TextIO, meta: Mapping[str, Any] | None = None) -> int:
    """Write a header and `jobs` to `out`, streaming; returns how many jobs were written."""
    out.write(header_line(meta))
    count = 0
    for job in jobs:
        out.write(job_line(job))
        count += 1
    return count


_job_decoder = msgspec.json.Decoder(TraceJob)
_any_decoder = msgspec.json.Decoder()


def is_header(raw: bytes) -> bool:
    """Whether a line is a job log header (an object with a `format` key and no job id)."""
    stripped = raw.lstrip()
    if not stripped.startswith(b"{") or b'"format"' not in stripped:
        return False
    try:
        doc = decoded(_any_decoder.decode, raw)
    except msgspec.DecodeError:
        return False
    return isinstance(doc, dict) and "format" in doc and "id" not in doc


def read_header(path: str) -> dict[str, Any] | None:
    """The header of the job log at `path` (its first line that is not blank), None when it
    starts with a job instead."""
    with open_binary(path) as stream:
        for raw in stream:
            if raw.strip():
                return decoded(_any_decoder.decode, raw) if is_header(raw) else None
    return None


def read_joblog(path: str) -> Iterator[TraceJob]:
    """The jobs of a `gpuq.jobs/v1` file, one at a time; TraceError on a malformed line."""
    decode = _job_decoder.decode
    with open_binary(path) as stream:
        first = True
        for number, raw in enumerate(stream, 1):
            if not raw.strip():
                continue
            if first and is_header(raw):
                first = False
                fmt = decoded(_any_decoder.decode, raw).get("format")
                if fmt != FORMAT:
                    raise TraceError(path, 1, f"format: expected {FORMAT!r}, got {shown(fmt)}")
                continue
            first = False
            try:
                job = decoded(decode, raw)
            except msgspec.MsgspecError as exc:
                raise json_error(path, number, raw, exc) from None
            yield checked(job, path, number, raw=raw)
