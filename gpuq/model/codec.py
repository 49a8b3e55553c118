"""`gpuq.snapshot/v1` JSON: decoded and validated by msgspec straight into the model, and encoded
back byte for byte; errors name the source and the JSON path (``big.json: jobs[3].start_time: not
an RFC 3339 time``).

msgspec checks types, ranges and RFC 3339 times (with a UTC offset) as it decodes, and refuses
NaN, ±Infinity, out-of-range numbers (1e400, 4,300-digit integers, counts and priorities past
`gpuq.model`'s bounds), lone surrogate escapes and malformed JSON; what a type cannot say is
checked after, in one pass (`_sound`): unique job ids, times within 1970..9999 in UTC (an offset
can carry a time past either end), and a placement that can be (`gpuq.model.placement`); nesting
deeper than the decoder goes is located by hand. msgspec's messages name the path as
``$.jobs[3].start_time``; `_locate` turns them into the wording gpuq documents, and an error
inside a mapping (``allocation[...]``) is located again slowly, on the failing document only, to
name the node.
"""

from __future__ import annotations

import json
import re
import sys
import warnings
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, Literal, cast

import msgspec

from gpuq.errors import BadInput, GpuqWarning
from gpuq.files import refuse_special
from gpuq.model import (
    ACTIVE_STATES,
    FORMAT,
    GpuIndex,
    Job,
    JobClass,
    JobState,
    Node,
    NodeState,
    PreemptionEvent,
    Queue,
    Snapshot,
    Timestamp,
    Unread,
)
from gpuq.model.placement import first_unmarked, placement_conflicts
from gpuq.textsafe import visible

__all__ = [
    "SnapshotDocument",
    "decode_snapshot",
    "encode_jobs",
    "encode_snapshot",
    "job_document",
    "load_snapshot",
    "read_snapshot_file",
    "write_snapshot",
]


class SnapshotDocument(msgspec.Struct, frozen=True, gc=False):
    """The file as a whole: the model's parts under the format tag."""

    format: Literal["gpuq.snapshot/v1"]
    cluster: str
    backend: str
    taken_at: Timestamp
    classes: tuple[JobClass, ...] = ()
    nodes: tuple[Node, ...] = ()
    jobs: tuple[Job, ...] = ()
    preemption_events: tuple[PreemptionEvent, ...] = ()
    #: written only where the backend has queues (older files have none)
    queues: tuple[Queue, ...] | msgspec.UnsetType = msgspec.UNSET
    #: written only where the backend could not read something (older files have none)
    unread: tuple[Unread, ...] | msgspec.UnsetType = msgspec.UNSET


_DECODER = msgspec.json.Decoder(SnapshotDocument)
_ENCODER = msgspec.json.Encoder()


def encode_snapshot(snapshot: Snapshot) -> bytes:
    """The snapshot as one line of v1 JSON (with its newline)."""
    doc = SnapshotDocument("gpuq.snapshot/v1", snapshot.cluster, snapshot.backend, snapshot.taken_at, snapshot.classes,
                           snapshot.nodes, snapshot.jobs, snapshot.preemption_events,
                           snapshot.queues or msgspec.UNSET, snapshot.unread or msgspec.UNSET)  # fmt: skip
    return _ENCODER.encode(doc) + b"\n"


def encode_jobs(jobs: Iterable[Job]) -> list[bytes]:
    """Each job's v1 JSON object (for documents that add fields beside a job's own)."""
    encode = _ENCODER.encode
    return [encode(job) for job in jobs]


def job_document(job: Job) -> dict[str, Any]:
    """One job's v1 JSON object as a dict (times as RFC 3339 strings, extras only when set)."""
    doc: dict[str, Any] = msgspec.to_builtins(job)
    return doc


def write_snapshot(snapshot: Snapshot, stream: IO[bytes]) -> None:
    stream.write(encode_snapshot(snapshot))


def decode_snapshot(data: bytes | str, source: str = "<input>") -> Snapshot:
    """Validate a v1 document; BadInput names `source` and the JSON path of the first problem."""
    try:
        doc = _DECODER.decode(data)
    except msgspec.ValidationError as exc:
        raise BadInput(f"{source}: {_locate(data, str(exc))}") from None
    except msgspec.DecodeError as exc:
        raise BadInput(f"{source}: {_syntax(data, str(exc))}") from None
    except RecursionError:
        raise BadInput(f"{source}: {_too_deep(data)}") from None
    snapshot = Snapshot(doc.cluster, doc.backend, doc.taken_at, doc.classes, doc.nodes, doc.jobs,
                        doc.preemption_events, doc.queues or (), doc.unread or ())  # fmt: skip
    if not _sound(doc):  # (one quick pass; the exact checks below name what is wrong)
        _refuse(doc, snapshot, source)
        _warn_odd(doc, source)
    return snapshot


def _refuse(doc: SnapshotDocument, snapshot: Snapshot, source: str) -> None:
    """BadInput for the first thing a type cannot say that is wrong: a duplicate id, a time out of
    range, an impossible placement (unless a live backend marked it)."""
    seen: set[str] = set()
    add = seen.add
    for i, job in enumerate(doc.jobs):
        if job.id in seen:
            raise BadInput(f"{source}: jobs[{i}].id: duplicate job id {job.id!r}")
        add(job.id)
    if (where := _time_out_of_range(doc)) is not None:
        raise BadInput(f"{source}: {where}: outside 1970-01-01T00:00:00Z .. 9999-12-31T23:59:59Z")
    names: set[str] = set()
    for i, cls in enumerate(doc.classes):
        if cls.name in names:
            raise BadInput(f"{source}: classes[{i}].name: duplicate class name {visible(cls.name)!r}")
        names.add(cls.name)
    for i, job in enumerate(doc.jobs):
        if job.start_time is not None and job.state is JobState.PENDING:
            raise BadInput(f"{source}: jobs[{i}].start_time: a pending job has not started (a job that waits "
                           "again after a run is pending with no start; one suspended holds its GPUs)")  # fmt: skip
        began = job.start_time if job.start_time is not None else job.submit_time
        if job.end_time is not None and job.end_time < began:
            what = "start_time" if job.start_time is not None else "submit_time"
            raise BadInput(f"{source}: jobs[{i}].end_time: before its {what} "
                           f"({job.end_time.isoformat()} < {began.isoformat()})")  # fmt: skip
    conflicts = placement_conflicts(snapshot)
    if conflicts and (first := first_unmarked(conflicts, snapshot)) is not None:
        raise BadInput(f"{source}: {first.message(snapshot)}")


def _warn_odd(doc: SnapshotDocument, source: str) -> None:
    """Warn (`GpuqWarning`) of what a live backend can write though it cannot be so, each kind
    once with how many jobs and the first: a time after the snapshot's moment or a start before
    the submit (the clocks of a cluster's hosts and gpuq's differ by seconds: Kubernetes stamps
    the start on the node, the submit on the API server), a completed job without an end (a
    finished pod whose containers report none). The snapshot is loaded as it is."""
    taken = doc.taken_at
    found: dict[str, list[str]] = {}
    for i, job in enumerate(doc.jobs):
        after = [name for name in ("submit_time", "start_time", "end_time", "last_checkpoint_time")
                 if (t := getattr(job, name)) is not None and t > taken]  # fmt: skip
        after += [f"preemption_times[{k}]" for k, t in enumerate(job.preemption_times) if t > taken]
        for name in after:
            found.setdefault("after taken_at (the cluster's clock ahead of gpuq's?)", []).append(f"jobs[{i}].{name}")
        if job.start_time is not None and job.start_time < job.submit_time:
            found.setdefault("a start before the submit (hosts' clocks apart?)", []).append(f"jobs[{i}].start_time")
        if job.end_time is None and job.state is JobState.COMPLETED:
            found.setdefault("a completed job without an end time", []).append(f"jobs[{i}].end_time")
    for what, where in found.items():
        more = f" and {len(where) - 1} more" if len(where) > 1 else ""
        warnings.warn(GpuqWarning(f"{source}: {where[0]}{more}: {what}; loaded as it is"), stacklevel=3)


def load_snapshot(stream: IO[str] | IO[bytes], source: str = "<stdin>") -> Snapshot:
    """Parse and validate a snapshot from a stream; errors are prefixed with `source`."""
    return decode_snapshot(stream.read(), source)


def read_snapshot_file(path: str | Path) -> Snapshot:
    """Load a snapshot file ('-' reads stdin)."""
    if str(path) == "-":
        return load_snapshot(sys.stdin.buffer, "<stdin>")
    refuse_special(path, "snapshot file")
    try:
        with open(path, "rb") as stream:
            data = stream.read()
    except OSError as exc:
        raise BadInput(f"{path}: cannot read snapshot ({exc.strerror})") from None
    return decode_snapshot(data, str(path))


# ---------------------------------------------------------------------------- what types cannot say

#: gpuq's times: from the Unix epoch to the last second of 9999, in UTC
_EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
_LATEST = datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
_TIMES = ("submit_time", "eligible_time", "start_time", "end_time", "last_checkpoint_time", "exempt_until",
          "resumed_time", "queue_time", "admitted_time")


def _sound(doc: SnapshotDocument) -> bool:
    """True when `_refuse` would find nothing: unique ids, every time within range, and a
    placement that can be (no allocation on a job that holds no GPUs, `gpus` matching it, every
    node known, each GPU index below the node's count and held once). One pass over the jobs,
    which a large file pays for on every load, so it only answers yes or no."""
    lo, hi = _EARLIEST, _LATEST
    taken = doc.taken_at
    if not lo <= taken <= hi:
        return False
    names = [c.name for c in doc.classes]
    if len(set(names)) != len(names):
        return False
    seen: set[str] = set()
    add = seen.add
    active = ACTIVE_STATES
    pending, completed = JobState.PENDING, JobState.COMPLETED
    by_node: dict[str, list[int | None]] = {}
    for job in doc.jobs:
        job_id = job.id
        if job_id in seen:
            return False
        add(job_id)
        t = job.submit_time
        # (the range checks bound what happened by the snapshot's moment, and a start by the
        # submit, an end by the start, at the same cost: `_oddities` says which failed)
        if t < lo or t > taken:
            return False
        # (unrolled: this loop runs 200,000 times on a large file)
        if (u := job.eligible_time) is not None and (u < lo or u > hi):
            return False
        if (start := job.start_time) is not None and (start < t or start > taken or job.state is pending):
            return False
        if (u := job.end_time) is not None:
            if u < (t if start is None else start) or u > taken:
                return False
        elif job.state is completed:
            return False
        if (u := job.last_checkpoint_time) is not None and (u < lo or u > taken):
            return False
        if (u := job.exempt_until) is not None and (u < lo or u > hi):
            return False
        if (u := job.resumed_time) is not None and (u < lo or u > hi):
            return False
        if (u := job.queue_time) is not None and (u < lo or u > hi):
            return False
        if (u := job.admitted_time) is not None and (u < lo or u > hi):
            return False
        for t in job.preemption_times:
            if t < lo or t > taken:
                return False
        allocation = job.allocation
        if allocation:
            if job.state not in active:
                return False
            total = 0
            for node, indexes in allocation.items():
                total += len(indexes)
                found = by_node.get(node)
                if found is None:
                    by_node[node] = list(indexes)
                else:
                    found.extend(indexes)
            if total != job.gpus:
                return False
        elif job.gpus and job.state in active:
            return False
    for event in doc.preemption_events:
        if not lo <= event.time <= hi:
            return False
    for queue in doc.queues or ():
        for adm in queue.admitted:
            for moment in (adm.queue_time, adm.admitted_time):
                if moment is not None and not lo <= moment <= hi:
                    return False
    capacity = {n.name: n.gpus for n in doc.nodes}
    for node, held in by_node.items():
        cap = capacity.get(node)
        if cap is None or None in held:  # (unknown indexes, as on Kubernetes: look closely)
            return False
        known = cast("list[int]", held)
        if known and (max(known) >= cap or len(set(known)) != len(known)):
            return False
    return True


def _time_out_of_range(doc: SnapshotDocument) -> str | None:
    """The JSON path of the first time outside 1970..9999 in UTC, or None. (A UTC offset can
    carry a time msgspec accepts past either end: ``9999-12-31T23:59:59-14:00``.) Run only when
    `_sound` found something wrong."""
    lo, hi = _EARLIEST, _LATEST
    if not lo <= doc.taken_at <= hi:
        return "taken_at"
    for i, job in enumerate(doc.jobs):
        submit = job.submit_time
        if submit < lo or submit > hi:
            return f"jobs[{i}].submit_time"
        for t in (job.eligible_time, job.start_time, job.end_time, job.last_checkpoint_time, job.exempt_until,
                  job.resumed_time, job.queue_time, job.admitted_time):
            if t is not None and (t < lo or t > hi):
                return f"jobs[{i}].{next(n for n in _TIMES if getattr(job, n) is t)}"
        for k, t in enumerate(job.preemption_times):
            if t < lo or t > hi:
                return f"jobs[{i}].preemption_times[{k}]"
    for i, event in enumerate(doc.preemption_events):
        if not lo <= event.time <= hi:
            return f"preemption_events[{i}].time"
    for i, queue in enumerate(doc.queues or ()):
        for k, adm in enumerate(queue.admitted):
            for name in ("queue_time", "admitted_time"):
                t = getattr(adm, name)
                if t is not None and not lo <= t <= hi:
                    return f"queues[{i}].admitted[{k}].{name}"
    return None


#: how deep a snapshot's JSON may nest before gpuq calls it malformed (v1 nests 4 levels)
_MAX_DEPTH = 64


def _too_deep(data: bytes | str) -> str:
    """Where the document first nests deeper than `_MAX_DEPTH` (the decoder ran out of stack)."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    depth, in_string, escaped = 0, False, False
    for offset, byte in enumerate(raw):
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):  # [ {
            depth += 1
            if depth > _MAX_DEPTH:
                return (f"not valid JSON (line {_line(raw, offset)}, column {_column(raw, offset)}: "
                        f"nested deeper than {_MAX_DEPTH} levels)")  # fmt: skip
        elif byte in (0x5D, 0x7D):
            depth -= 1
    return f"not valid JSON (nested deeper than {_MAX_DEPTH} levels)"


# ---------------------------------------------------------------------------- error texts

_AT_RE = re.compile(r"^(?P<problem>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.S)
_BYTE_RE = re.compile(r"\(byte (\d+)\)")
_KIND = {
    "int": "an integer",
    "float": "a number",
    "str": "a string",
    "bool": "a boolean",
    "array": "an array",
    "object": "an object",
    "null": "null",
    "datetime": "an RFC 3339 time",
}


def _kind(name: str) -> str:
    alternatives = [_KIND.get(part.strip(), part.strip()) for part in name.split("|") if part.strip() != "null"]
    return " or ".join(alternatives) or "null"


def _problem(message: str, path: str) -> str:
    """msgspec's wording of a problem -> gpuq's."""
    if message.startswith(("Invalid RFC3339", "Expected `datetime` with a timezone")):
        return "not an RFC 3339 time" + (" (it needs a UTC offset, e.g. Z)" if "timezone" in message else "")
    if match := re.match(r"Expected `([^`]+)`, got `([^`]+)`", message):
        return f"expected {_kind(match.group(1))}, got {_kind(match.group(2))}"
    if match := re.match(r"Expected `[^`]+` (>=|<=) (\S+)", message):
        return f"must be {match.group(1)} {_bound(match.group(2))}"
    if match := re.match(r"Invalid enum value (.*)", message):
        value = match.group(1)
        if path == ".format":
            return f"expected {FORMAT!r}, got {value}"
        states = NodeState if path.startswith(".nodes") else JobState
        what = "node" if states is NodeState else "job"
        return f"unknown {what} state {value} (one of {', '.join(s.value for s in states)})"
    if message.startswith(("Number out of range", "Integer value out of range")):
        return "number out of range"
    return message[:1].lower() + message[1:]


def _bound(text: str) -> str:
    """A bound as msgspec writes it (``1024``, ``2.534023007990e+11``), written readably."""
    value = float(text)
    return str(int(value)) if value.is_integer() and abs(value) < 1e16 else f"{value:g}"


def _locate(data: bytes | str, message: str) -> str:
    match = _AT_RE.match(message)
    problem, path = (match.group("problem"), match.group("path") or "") if match else (message, "")
    if missing := re.match(r"Object missing required field `([^`]+)`", problem):
        path, text = f"{path}.{missing.group(1)}", "missing required field"
    else:
        text = _problem(problem, path)
    if "[...]" in path:
        path = _name_keys(data, path)
    where = path.lstrip(".")
    if not where:
        return "expected a JSON object" if problem.startswith("Expected `object`") else text
    return f"{where}: {text}"


def _name_keys(data: bytes | str, path: str) -> str:
    """Replace msgspec's ``[...]`` (a key inside a mapping) with the key that fails: decode the
    document generically and find the first entry under that mapping msgspec refuses."""
    try:
        raw: Any = json.loads(data)
    except (ValueError, RecursionError):
        return path
    head, _, tail = path.partition("[...]")
    node: Any = raw
    for name, index in re.findall(r"\.([^.\[]+)|\[(\d+)\]", head):
        try:
            node = node[int(index)] if index else node[name]
        except (KeyError, IndexError, TypeError):
            return path
    if not isinstance(node, dict):
        return path
    for key, value in node.items():
        try:
            msgspec.convert(value, tuple[GpuIndex, ...])
            if any(isinstance(i, bool) for i in value):
                raise ValueError
        except (msgspec.ValidationError, TypeError, ValueError):
            return f"{head}.{key}{tail}"
    return path


def _syntax(data: bytes | str, message: str) -> str:
    """A JSON syntax error with its line and column (msgspec gives the byte offset)."""
    raw = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        offset = exc.start
        return f"not UTF-8 text (line {_line(raw, offset)}, column {_column(raw, offset)}: byte {raw[offset]:#04x})"
    found = _BYTE_RE.search(message)
    what = message.split(" (byte", 1)[0].replace("JSON is malformed: ", "")
    offset = int(found.group(1)) if found else len(raw)  # no offset: the input ended too early
    return f"not valid JSON (line {_line(raw, offset)}, column {_column(raw, offset)}: {what})"


def _line(raw: bytes, offset: int) -> int:
    return raw.count(b"\n", 0, offset) + 1


def _column(raw: bytes, offset: int) -> int:
    return offset - (raw.rfind(b"\n", 0, offset) + 1) + 1
