"""Microsoft Philly `cluster_job_log` (`--preset philly`), streamed although it is one JSON array.

Format (https://github.com/msr-fiddle/philly-traces, README "cluster_job_log"): a JSON array of
jobs ``{"status", "vc", "jobid", "attempts": [{"start_time", "end_time", "detail": [{"ip",
"gpus": [...]}]}], "submitted_time", "user"}``; times are ``YYYY-MM-DD HH:MM:SS`` strings (read
as UTC), and a missing one is null or ``"None"``. A job: submit = `submitted_time`; start = the
first attempt's start; end = the last attempt's end (None while still running); duration = the
sum of its attempts' end − start; GPUs = the most any attempt held (Σ len(gpus) over its
`detail`); tenant = `vc`; state = `status` (Pass, Killed, Failed).

Streaming: `array_items` cuts the array into its elements with one regular expression over
1 MiB chunks (strings matched whole, brackets counted), and msgspec decodes each element alone;
so only one job's text is held at a time, whatever the file's size.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import IO, Final

import msgspec

from gpuq.jsonsafe import decoded
from gpuq.trace.check import checked, json_error, moment, shown
from gpuq.trace.record import TraceError, TraceJob
from gpuq.trace.source import open_binary

__all__ = ["array_items", "read_philly"]

_CHUNK: Final = 1 << 20
# a string (escapes included; one the chunk cut short runs to its end), or a bracket
_TOKEN: Final = re.compile(rb'(?P<string>"(?:[^"\\]|\\.)*(?:(?P<close>")|\\?\Z))|[\[\]{}]', re.S)
_SPACE: Final = b" \t\r\n"
#: an element longer than this is refused (no Philly job is 1 % of it)
MAX_ITEM: Final = 64 << 20
_NOT_ARRAY: Final = "not a JSON array of jobs (Philly's cluster_job_log is one)"


class _Attempt(msgspec.Struct, gc=False):
    start_time: str | None = None
    end_time: str | None = None
    detail: list[dict[str, object]] = []


class _PhillyJob(msgspec.Struct, gc=False):
    jobid: str
    submitted_time: str
    status: str = ""
    vc: str = ""
    user: str = ""
    attempts: list[_Attempt] = []


_decode = msgspec.json.Decoder(_PhillyJob).decode


def array_items(stream: IO[bytes], path: str, chunk_size: int = _CHUNK) -> Iterator[tuple[int, int, bytes]]:
    """The elements of the JSON array in `stream`, each as (line, column, bytes) where it starts.
    TraceError when the document is not an array of objects or ends inside it."""
    buffer = b""
    pos = 0  # scanned up to here
    line, line_at = 1, 0  # the line number at offset `line_at` of `buffer`
    col0 = 1  # the column of `buffer[0]`
    depth = 0  # 0: before the array; 1: inside it, between jobs; >1: inside a job
    item_start: int | None = None
    item_line = item_column = 1
    while True:
        chunk = stream.read(chunk_size)
        eof = not chunk
        buffer += chunk
        for match in _TOKEN.finditer(buffer, pos):
            at = match.start()
            if match.group("string") is not None and match.group("close") is None and not eof:
                break  # a string cut by the chunk's end: scan it again with more
            if depth <= 1:
                gap = buffer[pos:at].lstrip(_SPACE + (b"," if depth else b"\xef\xbb\xbf"))
                if gap:
                    raise _error(path, buffer, line, line_at, at - len(gap), "expected a job object" if depth
                                 else _NOT_ARRAY, col0)  # fmt: skip
            token = buffer[at : at + 1]
            if token == b'"':
                if depth <= 1:
                    raise _error(path, buffer, line, line_at, at, "expected a job object, got a string", col0)
            elif token in b"[{":
                if depth == 0 and token != b"[":
                    raise _error(path, buffer, line, line_at, at, _NOT_ARRAY, col0)
                if depth == 1:
                    item_start = at
                    line, line_at = line + buffer.count(b"\n", line_at, at), at
                    item_line = line
                    item_column = _column(buffer, at, col0)
                depth += 1
            else:
                depth -= 1
                if depth < 0:
                    raise _error(path, buffer, line, line_at, at, _NOT_ARRAY, col0)
                if depth == 1 and item_start is not None:
                    yield item_line, item_column, buffer[item_start : match.end()]
                    item_start = None
                elif depth == 0:
                    return
            pos = match.end()
        if eof:
            break
        if item_start is not None:  # keep the job begun, drop what is before it
            line, line_at, col0 = line + buffer.count(b"\n", line_at, item_start), 0, _column(buffer, item_start, col0)
            buffer, pos, item_start = buffer[item_start:], pos - item_start, 0
            if len(buffer) > MAX_ITEM:
                raise TraceError(path, item_line, f"a job longer than {MAX_ITEM >> 20} MiB: not a Philly trace")
        else:  # drop what was scanned
            line, line_at, col0 = line + buffer.count(b"\n", line_at, pos), 0, _column(buffer, pos, col0)
            buffer, pos = buffer[pos:], 0
    where = "the file is empty" if depth == 0 and not buffer.strip() else "the array is not closed (file cut short?)"
    raise TraceError(path, line + buffer.count(b"\n", line_at), f"not a complete JSON array: {where}")


def _column(buffer: bytes, offset: int, col0: int) -> int:
    """The 1-based column (in bytes) of `offset`, `buffer[0]` being at column `col0`."""
    newline = buffer.rfind(b"\n", 0, offset)
    return offset - newline if newline >= 0 else col0 + offset


def _error(path: str, buffer: bytes, line: int, line_at: int, offset: int, message: str, col0: int = 1) -> TraceError:
    return TraceError(path, line + buffer.count(b"\n", line_at, offset), message, _column(buffer, offset, col0))


def _time(value: str | None, field: str) -> float | None:
    if value is None or value.strip() in ("", "None", "null"):
        return None
    try:
        return moment(value)
    except ValueError as exc:
        raise ValueError(f"{field}: {exc}") from None


def _gpus(detail: list[dict[str, object]]) -> int:
    total = 0
    for machine in detail:
        held = machine.get("gpus", [])
        if not isinstance(held, list):
            raise ValueError(f"attempts[].detail[].gpus: expected a list, got {shown(held)}")
        total += len(held)
    return total


def read_philly(path: str) -> Iterator[TraceJob]:
    """The jobs of a Philly `cluster_job_log` (see the module's docstring)."""
    with open_binary(path) as stream:
        for line, column, raw in array_items(stream, path):
            try:
                item = decoded(_decode, raw)
            except msgspec.MsgspecError as exc:
                raise json_error(path, line, raw, exc, column) from None
            try:
                yield checked(_job(item), path, line)
            except ValueError as exc:
                raise TraceError(path, line, f"job {shown(item.jobid)}: {exc}") from None


def _job(item: _PhillyJob) -> TraceJob:
    submit = _time(item.submitted_time, "submitted_time")
    if submit is None:
        raise ValueError("submitted_time: missing")
    start = end = None
    duration = 0.0
    gpus = 0
    for attempt in item.attempts:
        began = _time(attempt.start_time, "attempts[].start_time")
        ended = _time(attempt.end_time, "attempts[].end_time")
        if began is not None and start is None:
            start = began
        if began is not None and ended is not None:
            if ended < began:
                raise ValueError(
                    f"attempts[].end_time: ends before it starts ({shown(attempt.end_time)} < "
                    f"start_time {shown(attempt.start_time)})"
                )
            duration += ended - began
        end = ended
        gpus = max(gpus, _gpus(attempt.detail))
    if start is None:
        end = None
    return TraceJob(id=item.jobid, submit_time=submit, duration_s=duration, gpus=gpus, user=item.user,
                    tenant=item.vc, start_time=start, end_time=end, state=item.status)  # fmt: skip
