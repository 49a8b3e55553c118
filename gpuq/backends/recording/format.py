"""`gpuq.recording/v1`: successive snapshots of one cluster as frames (README, "Incident recordings").

A file is a header line (JSON: the format, the cluster, the compression) and then frames, each an
uncompressed fixed-size header (`FRAME_HEADER`: magic, kind, taken_at in epoch seconds, payload
length, CRC-32 of the payload) and a zlib-compressed payload. A keyframe's payload is the
snapshot itself, the very bytes `gpuq.model.codec.encode_snapshot` writes; a delta's is a `Delta`
against the frame before: the jobs added or changed (as snapshot-format job objects), the ids
removed, the new order when it is not the old one, nodes, classes, queues and what the backend
could not read (`unread`) only when they changed, the preemption events as a kept slice of the
previous ones plus those before and after it.

Pure: no files and no clock. `FrameEncoder` turns snapshots into payloads; `decode_keyframe`,
`decode_delta` and `apply_delta` turn them back; `pack_frame` and `unpack_frame_header` frame them.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from typing import TypeVar

import msgspec

from gpuq.errors import BadInput
from gpuq.jsonsafe import decoded
from gpuq.model import FORMAT as SNAPSHOT_FORMAT
from gpuq.model import Job, JobClass, JobId, Node, PreemptionEvent, Queue, Snapshot, Timestamp, Unread
from gpuq.model.codec import decode_snapshot
from gpuq.textsafe import visible

__all__ = [
    "COMPRESSION",
    "DEFAULT_KEYFRAME_EVERY",
    "DELTA",
    "FORMAT",
    "FRAME_HEADER",
    "KEYFRAME",
    "MAX_HEADER_LINE",
    "MAX_INFLATED",
    "MAX_PAYLOAD",
    "SUFFIX",
    "Delta",
    "FrameEncoder",
    "FrameHeader",
    "apply_delta",
    "decode_delta",
    "decode_keyframe",
    "header_line",
    "pack_frame",
    "parse_header_line",
    "unpack_frame_header",
    "unpack_payload",
]

FORMAT = "gpuq.recording/v1"
COMPRESSION = "zlib"
#: the file name ending of a recording: ``DIR/<cluster>.gpuqrec``
SUFFIX = ".gpuqrec"
#: every frame header starts with these bytes, so a scan that lands off a frame knows it
MAGIC = b"GQRF"
KEYFRAME = ord("K")
DELTA = ord("D")
#: magic, kind, taken_at (epoch seconds, float64), payload length, CRC-32 of the payload
FRAME_HEADER = struct.Struct("<4sBdII")
#: no frame is longer (a length past it is a damaged header, not a frame)
MAX_PAYLOAD = 1 << 30
#: no frame inflates to more (a 200,000-job snapshot is ~70 MB): zlib inflates up to ~1,000×, so
#: a small hostile frame could otherwise take gigabytes and most of a minute before its error
MAX_INFLATED = 256 << 20
#: the header line is at most this long (a longer first line is not a recording's)
MAX_HEADER_LINE = 64 * 1024
#: a keyframe every this many frames: seeking decodes at most this many frames minus one deltas
DEFAULT_KEYFRAME_EVERY = 60
_LEVEL = 6

_ENCODE = msgspec.json.Encoder().encode
_T = TypeVar("_T")


# ---------------------------------------------------------------------------- the file's framing


class _Header(msgspec.Struct, frozen=True):
    format: str
    cluster: str
    compression: str = COMPRESSION


def header_line(cluster: str) -> bytes:
    """The first line of a recording of `cluster`."""
    return _ENCODE(_Header(FORMAT, cluster)) + b"\n"


_HEADER_DECODER = msgspec.json.Decoder(_Header)


def parse_header_line(line: bytes, source: str) -> str:
    """The cluster a recording's first line names; BadInput when it is not a v1 recording."""
    not_one = BadInput(f"{source}: not a gpuq recording (its first line is not a {FORMAT} header)")
    if not line.endswith(b"\n"):
        raise not_one
    try:
        header = decoded(_HEADER_DECODER.decode, line)
    except msgspec.DecodeError:  # (ValidationError is one)
        raise not_one from None
    if header.format != FORMAT:
        if header.format.startswith("gpuq.recording/"):
            raise BadInput(f"{source}: recording format {visible(header.format)!r} is not one this gpuq reads "
                           f"({FORMAT}); replay it with the gpuq that recorded it")  # fmt: skip
        raise not_one
    if header.compression != COMPRESSION:
        raise BadInput(f"{source}: unknown compression {visible(header.compression)!r} (this gpuq reads "
                       f"{COMPRESSION})")  # fmt: skip
    return header.cluster


@dataclass(frozen=True, slots=True)
class FrameHeader:
    kind: int
    time: float
    length: int
    crc: int


def pack_frame(kind: int, time: float, payload: bytes) -> bytes:
    """One frame: its header and the compressed payload."""
    packed = zlib.compress(payload, _LEVEL)
    return FRAME_HEADER.pack(MAGIC, kind, time, len(packed), zlib.crc32(packed)) + packed


def unpack_frame_header(raw: bytes) -> FrameHeader | None:
    """A frame header from its `FRAME_HEADER.size` bytes; None when they are not one."""
    magic, kind, time, length, crc = FRAME_HEADER.unpack(raw)
    if magic != MAGIC or kind not in (KEYFRAME, DELTA) or length > MAX_PAYLOAD or time != time:
        return None
    return FrameHeader(kind, time, length, crc)


def unpack_payload(header: FrameHeader, packed: bytes) -> bytes:
    """The payload of a frame; ValueError (with what is wrong) when it is damaged."""
    if len(packed) != header.length or zlib.crc32(packed) != header.crc:
        raise ValueError("its checksum does not match")
    inflate = zlib.decompressobj()
    try:
        payload = inflate.decompress(packed, MAX_INFLATED + 1)
    except zlib.error as exc:
        raise ValueError(f"it does not decompress ({exc})") from None
    if len(payload) > MAX_INFLATED or inflate.unconsumed_tail:
        raise ValueError(f"it inflates to more than {MAX_INFLATED >> 20} MiB, more than any frame gpuq writes")
    if not inflate.eof:
        raise ValueError("it does not decompress (its compressed data ends early)")
    return payload


# ---------------------------------------------------------------------------- payloads


class Delta(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    """A frame against the one before it (see the module docstring).

    `order`: the new order of the jobs as runs ``start, length, start, length, ...`` over the
    base order (the previous jobs without those removed, then the added ones in `jobs` order);
    None: the base order. `events_kept`: the slice ``(start, length)`` of the previous events
    kept, between `events_head` and `events_tail`; None: all of them. `queues`, `unread`: the
    snapshot's, where they changed (None: as before; older recordings never have them).
    """

    taken_at: Timestamp
    cluster: str | None = None
    backend: str | None = None
    jobs: tuple[Job, ...] = ()
    removed: tuple[JobId, ...] = ()
    order: tuple[int, ...] | None = None
    classes: tuple[JobClass, ...] | None = None
    nodes: tuple[Node, ...] | None = None
    events_head: tuple[PreemptionEvent, ...] = ()
    events_kept: tuple[int, int] | None = None
    events_tail: tuple[PreemptionEvent, ...] = ()
    queues: tuple[Queue, ...] | None = None
    unread: tuple[Unread, ...] | None = None


class _DeltaOut(msgspec.Struct, omit_defaults=True):
    """`Delta` as written: the parts already encoded go in as they are."""

    taken_at: Timestamp
    cluster: str | None = None
    backend: str | None = None
    jobs: msgspec.Raw | None = None
    removed: list[str] | None = None
    order: list[int] | None = None
    classes: msgspec.Raw | None = None
    nodes: msgspec.Raw | None = None
    events_head: msgspec.Raw | None = None
    events_kept: tuple[int, int] | None = None
    events_tail: msgspec.Raw | None = None
    queues: msgspec.Raw | None = None
    unread: msgspec.Raw | None = None


class _KeyframeOut(msgspec.Struct):
    """`gpuq.model.codec.SnapshotDocument` with its parts already encoded (same fields, same order;
    `queues` and `unread` written only where the snapshot has them, as a snapshot file does)."""

    format: str
    cluster: str
    backend: str
    taken_at: Timestamp
    classes: msgspec.Raw
    nodes: msgspec.Raw
    jobs: msgspec.Raw
    preemption_events: msgspec.Raw
    queues: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    unread: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET


def _array(parts: list[bytes]) -> msgspec.Raw:
    return msgspec.Raw(b"[" + b",".join(parts) + b"]")


def _raw_or_unset(value: tuple[object, ...], data: bytes) -> msgspec.Raw | msgspec.UnsetType:
    """An optional part of a keyframe: left out when empty, as `encode_snapshot` leaves it out."""
    return msgspec.Raw(data) if value else msgspec.UNSET


class FrameEncoder:
    """Successive snapshots of one cluster -> frame payloads: a keyframe first, every
    `keyframe_every` frames, and whenever a delta would be at least as long as a keyframe's
    parts (its jobs, nodes, classes and events); deltas otherwise. Changes are found on the
    encoded bytes, so a replayed snapshot encodes exactly as the recorded one did (a job object
    the backend reuses is not encoded again)."""

    def __init__(self, keyframe_every: int = DEFAULT_KEYFRAME_EVERY) -> None:
        if keyframe_every < 1:
            raise ValueError("keyframe_every must be at least 1")
        self.keyframe_every = keyframe_every
        self.reset()

    def reset(self) -> None:
        """Make the next frame a keyframe, and forget the frames before it."""
        self._since_key = -1  # frames since the last keyframe; -1: none written yet
        self._jobs: dict[str, tuple[Job, bytes]] = {}
        self._order: list[str] = []
        self._events: tuple[PreemptionEvent, ...] = ()
        self._event_bytes: list[bytes] = []
        self._nodes: tuple[tuple[Node, ...], bytes] | None = None
        self._classes: tuple[tuple[JobClass, ...], bytes] | None = None
        self._queues: tuple[tuple[Queue, ...], bytes] | None = None
        self._unread: tuple[tuple[Unread, ...], bytes] | None = None
        self._cluster = self._backend = ""

    def encode(self, snapshot: Snapshot) -> tuple[int, bytes]:
        """The next frame for `snapshot`: its kind (`KEYFRAME` or `DELTA`) and its payload."""
        prev = self._jobs
        jobs: dict[str, tuple[Job, bytes]] = {}
        ids: list[str] = []
        all_bytes: list[bytes] = []
        changed: list[bytes] = []
        added: list[str] = []
        for job in snapshot.jobs:
            old = prev.get(job.id)
            if old is not None and old[0] is job:
                data = old[1]
            else:
                data = _ENCODE(job)
                if old is None:
                    added.append(job.id)
                    changed.append(data)
                elif old[1] != data:
                    changed.append(data)
            jobs[job.id] = (job, data)
            ids.append(job.id)
            all_bytes.append(data)
        nodes = self._part(snapshot.nodes, self._nodes)
        classes = self._part(snapshot.classes, self._classes)
        queues = self._part(snapshot.queues, self._queues)
        unread = self._part(snapshot.unread, self._unread)
        events = snapshot.preemption_events
        event_bytes = self._event_bytes if events is self._events else [_ENCODE(e) for e in events]
        payload, kind = b"", KEYFRAME
        # (duplicate ids, which a sound snapshot never has, are kept as they are by a keyframe)
        if 0 <= self._since_key < self.keyframe_every - 1 and len(jobs) == len(ids) and len(prev) == len(self._order):
            delta = self._delta(snapshot, jobs, ids, changed, added, nodes, classes, event_bytes, queues, unread)
            # The keyframe's length without its few fixed fields: it is built only when written.
            at_least = (sum(map(len, all_bytes)) + len(all_bytes) + sum(map(len, event_bytes)) + len(event_bytes)
                        + len(nodes[1]) + len(classes[1]) + len(queues[1]) + len(unread[1]))  # fmt: skip
            if len(delta) < at_least:
                payload, kind = delta, DELTA
        if kind == KEYFRAME:
            payload = _ENCODE(_KeyframeOut(SNAPSHOT_FORMAT, snapshot.cluster, snapshot.backend, snapshot.taken_at,
                                           msgspec.Raw(classes[1]), msgspec.Raw(nodes[1]), _array(all_bytes),
                                           _array(event_bytes), _raw_or_unset(queues[0], queues[1]),
                                           _raw_or_unset(unread[0], unread[1])))  # fmt: skip
        self._since_key = 0 if kind == KEYFRAME else self._since_key + 1
        self._jobs, self._order = jobs, ids
        self._events, self._event_bytes = events, event_bytes
        self._nodes, self._classes = nodes, classes
        self._queues, self._unread = queues, unread
        self._cluster, self._backend = snapshot.cluster, snapshot.backend
        return kind, payload

    @staticmethod
    def _part(value: tuple[_T, ...], old: tuple[tuple[_T, ...], bytes] | None) -> tuple[tuple[_T, ...], bytes]:
        if old is not None and old[0] is value:
            return old
        return value, _ENCODE(value)

    def _delta(
        self, snapshot: Snapshot, jobs: dict[str, tuple[Job, bytes]], ids: list[str], changed: list[bytes],
        added: list[str], nodes: tuple[tuple[Node, ...], bytes], classes: tuple[tuple[JobClass, ...], bytes],
        event_bytes: list[bytes], queues: tuple[tuple[Queue, ...], bytes],
        unread: tuple[tuple[Unread, ...], bytes],
    ) -> bytes:  # fmt: skip
        out = _DeltaOut(snapshot.taken_at)
        if snapshot.cluster != self._cluster:
            out.cluster = snapshot.cluster
        if snapshot.backend != self._backend:
            out.backend = snapshot.backend
        if changed:
            out.jobs = _array(changed)
        kept = [i for i in self._order if i in jobs]
        if len(kept) != len(self._order):
            out.removed = [i for i in self._order if i not in jobs]
        base = kept + added
        if base != ids:
            out.order = _runs(base, ids)
        assert self._nodes is not None and self._classes is not None  # (a keyframe came first)
        if nodes[1] != self._nodes[1]:
            out.nodes = msgspec.Raw(nodes[1])
        if classes[1] != self._classes[1]:
            out.classes = msgspec.Raw(classes[1])
        assert self._queues is not None and self._unread is not None
        if queues[1] != self._queues[1]:
            out.queues = msgspec.Raw(queues[1])
        if unread[1] != self._unread[1]:
            out.unread = msgspec.Raw(unread[1])
        old_events = self._event_bytes
        if event_bytes != old_events:
            head, kept_slice, tail = _slice(old_events, event_bytes)
            if head:
                out.events_head = _array(head)
            out.events_kept = kept_slice
            if tail:
                out.events_tail = _array(tail)
        return _ENCODE(out)


def _runs(base: list[str], ids: list[str]) -> list[int]:
    """`ids` as runs ``start, length, ...`` over `base` (the same ids in another order)."""
    position = {job_id: i for i, job_id in enumerate(base)}
    runs: list[int] = []
    start = last = -2
    for job_id in ids:
        i = position[job_id]
        if i == last + 1:
            last = i
            continue
        if start >= 0:
            runs += (start, last - start + 1)
        start = last = i
    if start >= 0:
        runs += (start, last - start + 1)
    return runs


def _slice(old: list[bytes], new: list[bytes]) -> tuple[list[bytes], tuple[int, int], list[bytes]]:
    """`new` as ``head + old[start:start + length] + tail``, keeping the first run of `new` that
    `old` holds (a sliding window of the most recent events keeps all but its ends)."""
    first: dict[bytes, int] = {}
    for i in range(len(old) - 1, -1, -1):
        first[old[i]] = i
    for i, data in enumerate(new):
        start = first.get(data)
        if start is not None:
            length = 1
            while i + length < len(new) and start + length < len(old) and new[i + length] == old[start + length]:
                length += 1
            return new[:i], (start, length), new[i + length :]
    return new, (0, 0), []


# ---------------------------------------------------------------------------- decoding

_DELTA_DECODER = msgspec.json.Decoder(Delta)


def decode_keyframe(payload: bytes, source: str) -> Snapshot:
    """A keyframe's snapshot, validated as a snapshot file is (`source` names the frame)."""
    return decode_snapshot(payload, source)


def decode_delta(payload: bytes, source: str) -> Delta:
    try:
        return decoded(_DELTA_DECODER.decode, payload)
    except msgspec.DecodeError as exc:  # (ValidationError is one)
        raise BadInput(f"{source}: not a valid delta ({exc})") from None


def apply_delta(prev: Snapshot, delta: Delta, source: str) -> Snapshot:
    """The snapshot `delta` makes of `prev`; BadInput naming `source` when they do not fit."""
    changed = {job.id: job for job in delta.jobs}
    if len(changed) != len(delta.jobs):
        raise BadInput(f"{source}: a job is listed twice")
    removed = set(delta.removed)
    pop = changed.pop
    kept = [pop(job.id, job) for job in prev.jobs if job.id not in removed]
    if len(prev.jobs) - len(kept) != len(removed) or len(removed) != len(delta.removed):
        raise BadInput(f"{source}: removes a job the frame before does not have")
    base = kept + [job for job in delta.jobs if job.id in changed]
    jobs = base if delta.order is None else _ordered(base, delta.order, source)
    events = prev.preemption_events
    if delta.events_kept is not None:
        start, length = delta.events_kept
        if start < 0 or length < 0 or start + length > len(events):
            raise BadInput(f"{source}: keeps preemption events the frame before does not have")
        events = events[start : start + length]
    if delta.events_head or delta.events_tail:
        events = delta.events_head + events + delta.events_tail
    return Snapshot(
        prev.cluster if delta.cluster is None else delta.cluster,
        prev.backend if delta.backend is None else delta.backend,
        delta.taken_at,
        prev.classes if delta.classes is None else delta.classes,
        prev.nodes if delta.nodes is None else delta.nodes,
        tuple(jobs),
        events,
        prev.queues if delta.queues is None else delta.queues,
        prev.unread if delta.unread is None else delta.unread,
    )


def _ordered(base: list[Job], order: tuple[int, ...], source: str) -> list[Job]:
    """`base` reordered by the runs of `Delta.order`, which must cover it exactly once."""
    pairs = list(zip(order[::2], order[1::2], strict=False))
    covered = 0
    for start, length in sorted(pairs):
        if start != covered or length < 1:
            break
        covered += length
    if len(order) % 2 or covered != len(base):
        raise BadInput(f"{source}: its job order does not cover the jobs once each")
    jobs: list[Job] = []
    for start, length in pairs:
        jobs += base[start : start + length]
    return jobs
