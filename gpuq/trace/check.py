"""What every trace reader checks of a job, and how a malformed line is reported.

Readers turn a source's row into a `TraceJob` and hand it to `checked`, which refuses what no
trace can mean (negative GPUs, an end before its start, times outside 1970..9999); cell parsers
(`number`, `count`, `moment`, `span`) read one CSV/JSON value and say what was wrong with it in a
`ValueError` the reader turns into a `TraceError` naming the field. Values from the file are shown
through `shown` (control characters visible, long ones clipped), never raw.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import datetime
from typing import Final

import msgspec

from gpuq.jsonsafe import decoded
from gpuq.model import MAX_ID_LENGTH
from gpuq.textsafe import visible
from gpuq.timefmt import LONGEST_S, parse_duration
from gpuq.trace.record import TraceError, TraceJob

__all__ = [
    "LATEST",
    "checked",
    "count",
    "json_error",
    "moment",
    "number",
    "shown",
    "span",
]

#: the last instant gpuq represents, in POSIX seconds (9999-12-31T23:59:59Z)
LATEST: Final = LONGEST_S
_MAX_GPUS: Final = 1_000_000  # (more GPUs than any cluster has: a corrupt value, not a job)


def shown(value: object, limit: int = 40) -> str:
    """A value from a trace, safe to print: quoted, control characters made visible, clipped."""
    text = value if isinstance(value, str) else repr(value)
    if len(text) > limit:
        text = f"{text[:limit]}… ({len(text)} characters)"
    return repr(visible(text)) if isinstance(value, str) else visible(text)


def number(text: str) -> float:
    """A finite number from a cell (``12``, ``3.5``, ``1e3``)."""
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"not a number: {shown(text)}") from None
    if not math.isfinite(value):
        raise ValueError(f"not a finite number: {shown(text)}")
    return value


def count(text: str, what: str = "GPU count") -> int:
    """A whole, non-negative count from a cell; ``2.0`` is 2, ``2.5`` is refused."""
    value = number(text)
    if not value.is_integer():
        raise ValueError(f"{what} is not a whole number: {shown(text)}")
    if value < 0:
        raise ValueError(f"negative {what}: {shown(text)}")
    if value > _MAX_GPUS:
        raise ValueError(f"{what} out of range: {shown(text)}")
    return int(value)


_EPOCH: Final = datetime(1970, 1, 1)  # naive: times without an offset are UTC
_NUMERIC_RE: Final = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


def moment(text: str) -> float:
    """POSIX seconds from a cell: a number, or an ISO-8601 time (``2020-07-01 10:00:00``,
    ``2020-07-01T10:00:00Z``); a time without an offset is read as UTC (the public traces write
    their times in one zone and do not say which; UTC keeps waits and durations exact)."""
    text = text.strip()
    if text[4:5] == "-":  # YYYY-…: no number is written so
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            raise ValueError(f"not a time: {shown(text)} (use POSIX seconds or ISO 8601)") from None
        value = (parsed - _EPOCH).total_seconds() if parsed.tzinfo is None else parsed.timestamp()
    elif _NUMERIC_RE.match(text):
        value = number(text)
    else:
        raise ValueError(f"not a time: {shown(text)} (use POSIX seconds or ISO 8601)")
    if not 0.0 <= value <= LATEST:
        raise ValueError(f"time outside 1970..9999: {shown(text)}")
    return value


def span(text: str) -> float:
    """Seconds from a cell: a number of seconds or a duration like ``90s``, ``1h30m``."""
    text = text.strip()
    return parse_duration(number(text) if _NUMERIC_RE.match(text) else text)


def checked(
    job: TraceJob, path: str, line: int, *, raw: bytes | None = None, columns: Mapping[str, int] | None = None
) -> TraceJob:
    """`job` when a trace can mean it; else TraceError naming the field and the value, and its
    column: where the field's key is in the JSON text `raw`, or `columns[field]` (1-based) for a
    CSV row."""
    problem = _problem(job)
    if problem is None:
        return job
    field, text = problem
    message = f"job {shown(job.id)}: {field}: {text}"
    if raw is not None and (at := raw.find(b'"' + field.encode() + b'"')) >= 0:
        raise TraceError(path, *_place(raw, at, line, 1, message))
    raise TraceError(path, line, message, (columns or {}).get(field))


def _problem(job: TraceJob) -> tuple[str, str] | None:
    if not job.id:
        return "id", "empty job id"
    if len(job.id) > MAX_ID_LENGTH:  # (as a snapshot caps them: every view shows ids whole)
        return "id", f"{len(job.id):,} characters, more than the {MAX_ID_LENGTH} a job id may have"
    if job.gpus < 0:
        return "gpus", f"negative GPU count {job.gpus}"
    if job.gpus > _MAX_GPUS:
        return "gpus", f"out of range: {job.gpus}"
    for name in ("submit_time", "start_time", "end_time"):
        value = getattr(job, name)
        if value is not None and not 0.0 <= value <= LATEST:
            return name, f"time outside 1970..9999: {value:g}"
    if job.end_time is not None and job.start_time is not None and job.end_time < job.start_time:
        return "end_time", f"ends before it starts ({job.end_time:g} < start_time {job.start_time:g})"
    if not 0.0 <= job.duration_s <= LATEST:
        return "duration_s", f"{'negative duration' if job.duration_s < 0 else 'out of range'}: {job.duration_s:g}"
    interval = job.checkpoint_interval_s
    if interval is not None and not 0.0 < interval <= LATEST:
        return "checkpoint_interval_s", f"must be positive: {interval:g}"
    return None


_AT_RE: Final = re.compile(r" - at `\$\.?(?P<path>[^`]*)`$")
_MISSING_RE: Final = re.compile(r"Object missing required field `([^`]+)`")
_BYTE_RE: Final = re.compile(r"\(byte (\d+)\)")


def json_error(path: str, line: int, raw: bytes, exc: msgspec.MsgspecError, column0: int = 1) -> TraceError:
    """The TraceError for the JSON text `raw` (starting on `line`, at column `column0`) that
    msgspec refused: the field (and where its key is) or the syntax error's place; the text is
    never echoed beyond a clipped value."""
    message = str(exc)
    if isinstance(exc, msgspec.ValidationError):
        found = _AT_RE.search(message)
        field = found.group("path") if found else ""
        problem = message[: found.start()] if found else message
        if missing := _MISSING_RE.match(problem):
            name = f"{field}.{missing.group(1)}" if field else missing.group(1)
            return TraceError(path, line, f"{name}: missing required field")
        text = _wording(problem)
        value = _value_at(raw, field)
        if value is not _NOTHING:
            text = f"{text}: {shown(value)}"
        key = field.split(".")[-1].split("[")[0] if field else ""
        at = raw.find(b'"' + key.encode() + b'"') if key else -1
        if at < 0:
            return TraceError(path, line, f"{field}: {text}" if field else text)
        return TraceError(path, *_place(raw, at, line, column0, f"{field}: {text}"))
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as bad:
        return TraceError(path, *_place(raw, bad.start, line, column0, f"not UTF-8 text (byte {raw[bad.start]:#04x})"))
    found = _BYTE_RE.search(message)
    what = message.split(" (byte", 1)[0].replace("JSON is malformed: ", "")
    offset = int(found.group(1)) if found else len(raw.rstrip(b"\r\n"))
    return TraceError(path, *_place(raw, offset, line, column0, f"not valid JSON: {what[:1].lower()}{what[1:]}"))


_KINDS: Final = {
    "int": "an integer",
    "float": "a number",
    "str": "a string",
    "bool": "true or false",
    "array": "an array",
    "object": "an object",
    "null": "null",
}
_EXPECTED_RE: Final = re.compile(r"Expected `([^`]+)`, got `([^`]+)`")
_NOTHING: Final = object()


def _kind(name: str) -> str:
    kinds = [_KINDS.get(part.strip(), part.strip()) for part in name.split("|") if part.strip() != "null"]
    return " or ".join(kinds) or "null"


def _wording(problem: str) -> str:
    """msgspec's wording of a problem -> gpuq's (``expected a number, got a string``)."""
    if match := _EXPECTED_RE.match(problem):
        return f"expected {_kind(match.group(1))}, got {_kind(match.group(2))}"
    if problem.startswith(("Number out of range", "Integer value out of range")):
        return "number out of range"
    return problem[:1].lower() + problem[1:]


def _value_at(raw: bytes, field: str) -> object:
    """The value at msgspec's path `field` (``a[0].b``) in `raw`, decoded generically; only ever
    run on a line already refused."""
    try:
        node: object = decoded(msgspec.json.decode, raw)
    except msgspec.MsgspecError:
        return _NOTHING
    for name, index in re.findall(r"([^.\[\]]+)|\[(\d+)\]", field):
        if index and isinstance(node, list) and int(index) < len(node):
            node = node[int(index)]
        elif name and isinstance(node, dict) and name in node:
            node = node[name]
        else:
            return _NOTHING
    return node if field else _NOTHING


def _place(raw: bytes, offset: int, line: int, column0: int, message: str) -> tuple[int, str, int]:
    """(line, message, column) of byte `offset` of `raw`; columns count characters from 1."""
    newlines = raw.count(b"\n", 0, offset)
    start = raw.rfind(b"\n", 0, offset) + 1
    column = len(raw[start:offset].decode("utf-8", "replace")) + (column0 if newlines == 0 else 1)
    return line + newlines, message, column
