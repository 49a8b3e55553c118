"""`gpuq.snapshot/v1` JSON: decoded and validated by msgspec straight into the model, and encoded
back byte for byte; errors name the source and the JSON path (``big.json: jobs[3].start_time: not
an RFC 3339 time``).

msgspec checks types, ranges and RFC 3339 times (with a UTC offset) as it decodes, and refuses
NaN, out-of-range numbers and malformed JSON; what a type cannot say (unique job ids) is checked
after. Its own messages name the path as ``$.jobs[3].start_time``; `_explain` turns them into the
wording gpuq documents, and an error inside a mapping (``allocation[...]``) is located again
slowly, on the failing document only, to name the node.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any, Literal

import msgspec

from gpuq.errors import BadInput
from gpuq.model import FORMAT, Job, JobClass, JobState, Node, NodeState, PreemptionEvent, Snapshot, Timestamp

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


_DECODER = msgspec.json.Decoder(SnapshotDocument)
_ENCODER = msgspec.json.Encoder()


def encode_snapshot(snapshot: Snapshot) -> bytes:
    """The snapshot as one line of v1 JSON (with its newline)."""
    doc = SnapshotDocument("gpuq.snapshot/v1", snapshot.cluster, snapshot.backend, snapshot.taken_at, snapshot.classes,
                           snapshot.nodes, snapshot.jobs, snapshot.preemption_events)  # fmt: skip
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
    seen: set[str] = set()
    add = seen.add
    for i, job in enumerate(doc.jobs):
        if job.id in seen:
            raise BadInput(f"{source}: jobs[{i}].id: duplicate job id {job.id!r}")
        add(job.id)
    return Snapshot(doc.cluster, doc.backend, doc.taken_at, doc.classes, doc.nodes, doc.jobs, doc.preemption_events)


def load_snapshot(stream: IO[str] | IO[bytes], source: str = "<stdin>") -> Snapshot:
    """Parse and validate a snapshot from a stream; errors are prefixed with `source`."""
    return decode_snapshot(stream.read(), source)


def read_snapshot_file(path: str | Path) -> Snapshot:
    """Load a snapshot file ('-' reads stdin)."""
    if str(path) == "-":
        return load_snapshot(sys.stdin.buffer, "<stdin>")
    try:
        with open(path, "rb") as stream:
            data = stream.read()
    except OSError as exc:
        raise BadInput(f"{path}: cannot read snapshot ({exc.strerror})") from None
    return decode_snapshot(data, str(path))


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
    if match := re.match(r"Expected `[^`]+` >= (\S+)", message):
        return f"must be >= {float(match.group(1)):g}"
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
    except ValueError:
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
            msgspec.convert(value, tuple[int | None, ...])
            if any(i is not None and (isinstance(i, bool) or i < 0) for i in value):
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
