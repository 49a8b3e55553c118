"""Read and write `gpuq.snapshot/v1` JSON with validation errors that name the path and field.

`load_snapshot` is on the hot path of every `--snapshot` command (200,000 jobs in well under a
second of parsing), so the checks are written out by hand rather than through a schema library.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import IO, Any

import orjson

from gpuq.errors import BadInput
from gpuq.gcpause import gc_paused
from gpuq.model import (
    FORMAT,
    NO_ALLOCATION,
    Job,
    JobClass,
    JobState,
    Node,
    NodeState,
    PreemptionEvent,
    Snapshot,
)
from gpuq.timefmt import KNOWN_TEXT, format_time, parse_time, parse_time_text

__all__ = [
    "job_to_dict",
    "load_snapshot",
    "read_snapshot_file",
    "snapshot_from_dict",
    "snapshot_to_dict",
    "write_snapshot",
]

_JOB_STATES = {s.value: s for s in JobState}
_NODE_STATES = {s.value: s for s in NodeState}


class _Invalid(Exception):
    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")


def _req(obj: Mapping[str, Any], key: str, path: str) -> Any:
    try:
        return obj[key]
    except KeyError:
        raise _Invalid(f"{path}.{key}", "missing required field") from None


def _str(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise _Invalid(path, f"expected a string, got {_kind(value)}")
    return value


def _opt_str(value: Any, path: str) -> str | None:
    return None if value is None else _str(value, path)


def _int(value: Any, path: str, minimum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise _Invalid(path, f"expected an integer, got {_kind(value)}")
    if minimum is not None and value < minimum:
        raise _Invalid(path, f"must be >= {minimum}, got {value}")
    return int(value)


def _num(value: Any, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Invalid(path, f"expected a number, got {_kind(value)}")
    if value < 0:
        raise _Invalid(path, f"must be >= 0, got {value}")
    return float(value)


def _opt_num(value: Any, path: str) -> float | None:
    return None if value is None else _num(value, path)


def _time(value: Any, path: str) -> float:
    try:
        return parse_time(value)
    except (ValueError, OverflowError):
        raise _Invalid(path, "not an RFC 3339 time") from None


def _opt_time(value: Any, path: str) -> float | None:
    return None if value is None else _time(value, path)


def _kind(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}.get(
        type(value), "null" if value is None else type(value).__name__
    )


def _list(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise _Invalid(path, f"expected an array, got {_kind(value)}")
    return value


def _obj(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _Invalid(path, f"expected an object, got {_kind(value)}")
    return value


def _class_from(raw: Any, path: str) -> JobClass:
    raw = _obj(raw, path)
    preemptible = raw.get("preemptible", True)
    if not isinstance(preemptible, bool):
        raise _Invalid(f"{path}.preemptible", f"expected a boolean, got {_kind(preemptible)}")
    return JobClass(
        name=_str(_req(raw, "name", path), f"{path}.name"),
        priority=_int(raw.get("priority", 0), f"{path}.priority"),
        preemptible=preemptible,
        target_p95_s=_opt_num(raw.get("target_p95_s"), f"{path}.target_p95_s"),
        max_wait_s=_opt_num(raw.get("max_wait_s"), f"{path}.max_wait_s"),
    )


def _node_from(raw: Any, path: str) -> Node:
    raw = _obj(raw, path)
    state = raw.get("state", "idle")
    if state not in _NODE_STATES:
        raise _Invalid(f"{path}.state", f"unknown node state {state!r} (one of {', '.join(_NODE_STATES)})")
    return Node(
        name=_str(_req(raw, "name", path), f"{path}.name"),
        gpus=_int(_req(raw, "gpus", path), f"{path}.gpus", minimum=0),
        gpu_model=_opt_str(raw.get("gpu_model"), f"{path}.gpu_model"),
        state=_NODE_STATES[state],
    )


def _allocation_from(raw: Any, path: str) -> dict[str, tuple[int | None, ...]]:
    raw = _obj(raw, path)
    out: dict[str, tuple[int | None, ...]] = {}
    for node, indexes in raw.items():
        if not isinstance(indexes, list):
            raise _Invalid(f"{path}.{node}", f"expected an array of GPU indexes, got {_kind(indexes)}")
        for i, idx in enumerate(indexes):
            if idx is not None and (isinstance(idx, bool) or not isinstance(idx, int) or idx < 0):
                raise _Invalid(f"{path}.{node}[{i}]", "expected a GPU index (integer >= 0) or null")
        out[node] = tuple(indexes)
    return out


def _job_from(raw: Any, path: str) -> Job:
    raw = _obj(raw, path)
    get = raw.get
    state = _req(raw, "state", path)
    if state not in _JOB_STATES:
        raise _Invalid(f"{path}.state", f"unknown job state {state!r} (one of {', '.join(_JOB_STATES)})")
    alloc_raw = get("allocation")
    preempt_raw = get("preemption_times")
    urgent = get("urgent", False)
    if not isinstance(urgent, bool):
        raise _Invalid(f"{path}.urgent", f"expected a boolean, got {_kind(urgent)}")
    return Job(
        id=_str(_req(raw, "id", path), f"{path}.id"),
        name=_str(_req(raw, "name", path), f"{path}.name"),
        user=_str(_req(raw, "user", path), f"{path}.user"),
        tenant=_str(_req(raw, "tenant", path), f"{path}.tenant"),
        job_class=_str(_req(raw, "class", path), f"{path}.class"),
        priority=_int(_req(raw, "priority", path), f"{path}.priority"),
        state=_JOB_STATES[state],
        submit_time=_time(_req(raw, "submit_time", path), f"{path}.submit_time"),
        eligible_time=_opt_time(get("eligible_time"), f"{path}.eligible_time"),
        start_time=_opt_time(get("start_time"), f"{path}.start_time"),
        end_time=_opt_time(get("end_time"), f"{path}.end_time"),
        gpus=_int(_req(raw, "gpus", path), f"{path}.gpus", minimum=0),
        allocation=_allocation_from(alloc_raw, f"{path}.allocation") if alloc_raw else {},
        preemption_times=tuple(
            _time(t, f"{path}.preemption_times[{i}]")
            for i, t in enumerate(_list(preempt_raw, f"{path}.preemption_times"))
        )
        if preempt_raw
        else (),
        last_checkpoint_time=_opt_time(get("last_checkpoint_time"), f"{path}.last_checkpoint_time"),
        exempt_until=_opt_time(get("exempt_until"), f"{path}.exempt_until"),
        reason=_opt_str(get("reason"), f"{path}.reason"),
        urgent=urgent,
        account=_opt_str(get("account"), f"{path}.account"),
        partition=_opt_str(get("partition"), f"{path}.partition"),
        qos=_opt_str(get("qos"), f"{path}.qos"),
        comment=_opt_str(get("comment"), f"{path}.comment"),
        checkpoint_interval_s=_opt_num(get("checkpoint_interval_s"), f"{path}.checkpoint_interval_s"),
        duration_s=_opt_num(get("duration_s"), f"{path}.duration_s"),
    )


_new_job = tuple.__new__
_V1_JOB_FIELDS = 16
# The cached parser itself: it raises on anything but an RFC 3339 string, which sends the record
# down the slow path for a precise message.
_parse_t = parse_time_text


def _job_fast(raw: Any, path: str) -> Job:
    """The common, well-formed case without building error paths; anything unusual raises, and
    `_job_from` then re-checks the record slowly to name the exact path and problem.

    Written out flat (no comprehensions or helper calls) because it runs 200,000 times per load.
    """
    get = raw.get
    ident, name, user, tenant, cls = raw["id"], raw["name"], raw["user"], raw["tenant"], raw["class"]
    priority, gpus = raw["priority"], raw["gpus"]
    if not (type(ident) is type(name) is type(user) is type(tenant) is type(cls) is str) or not (
        type(priority) is type(gpus) is int
    ) or gpus < 0:
        raise ValueError
    alloc = raw["allocation"]
    allocation: Mapping[str, tuple[int | None, ...]] = NO_ALLOCATION  # shared by every pending job
    if alloc:
        held: dict[str, tuple[int | None, ...]] = {}
        for node, indexes in alloc.items():
            if type(indexes) is not list:
                raise ValueError
            for idx in indexes:
                if idx is not None and (type(idx) is not int or idx < 0):
                    raise ValueError
            held[node] = tuple(indexes)
        allocation = held
    # A record with only the 16 v1 fields (the common case) has no extras to look up.
    if len(raw) > _V1_JOB_FIELDS:
        urgent = get("urgent", False)
        reason = get("reason")
        if type(urgent) is not bool or (reason is not None and type(reason) is not str):
            raise ValueError
        account, partition, qos, comment = get("account"), get("partition"), get("qos"), get("comment")
        interval, duration = get("checkpoint_interval_s"), get("duration_s")
        if account is not None or partition is not None or qos is not None or comment is not None:
            for text in (account, partition, qos, comment):
                if text is not None and type(text) is not str:
                    raise ValueError
        if interval is not None or duration is not None:
            for number in (interval, duration):
                if number is not None and (type(number) not in (int, float) or number < 0):
                    raise ValueError
            interval = None if interval is None else float(interval)
            duration = None if duration is None else float(duration)
    else:
        urgent = False
        reason = account = partition = qos = comment = interval = duration = None
    parse = _parse_t
    # v1 requires these keys; a record without one takes the slow, lenient path.
    times = raw["preemption_times"]
    if times and type(times) is not list:
        raise ValueError
    eligible, start, end, checkpoint, exempt = (
        raw["eligible_time"], raw["start_time"], raw["end_time"], raw["last_checkpoint_time"], raw["exempt_until"]
    )
    submit_text = raw["submit_time"]
    submit = parse(submit_text)
    return _new_job(Job, (
        ident, name, user, tenant, cls, priority, _JOB_STATES[raw["state"]], submit, gpus,
        # Eligibility usually equals submission: skip the second parse then.
        None if eligible is None else submit if eligible == submit_text else parse(eligible),
        None if start is None else parse(start),
        None if end is None else parse(end), allocation,
        tuple(map(parse, times)) if times else (),
        None if checkpoint is None else parse(checkpoint), None if exempt is None else parse(exempt),
        reason, urgent, account, partition, qos, comment, interval, duration,
    ))


def _job(raw: Any, path: str) -> Job:
    try:
        return _job_fast(raw, path)
    except Exception:  # noqa: BLE001 - the slow path below names the problem precisely
        return _job_from(raw, path)


def _event_from(raw: Any, path: str) -> PreemptionEvent:
    raw = _obj(raw, path)
    return PreemptionEvent(
        time=_time(_req(raw, "time", path), f"{path}.time"),
        victim=_str(_req(raw, "victim", path), f"{path}.victim"),
        preemptor=_opt_str(raw.get("preemptor"), f"{path}.preemptor"),
        gpus=_int(raw.get("gpus", 0), f"{path}.gpus", minimum=0),
        gpu_seconds_lost=_num(raw.get("gpu_seconds_lost", 0), f"{path}.gpu_seconds_lost"),
        mode=_str(raw.get("mode", ""), f"{path}.mode"),
        reason=_str(raw.get("reason", ""), f"{path}.reason"),
    )


def _items(
    raw: Mapping[str, Any], key: str, parse: Callable[[Any, str], Any], consume: bool = False
) -> tuple[Any, ...]:
    """Parse an array. Paths are formatted only for the item that fails (formatting 200,000 of
    them costs more than parsing). With `consume`, each raw item is dropped once parsed, so the
    decoded JSON and the model never both exist in full (a third less peak memory)."""
    value = raw.get(key)
    if value is None:
        return ()
    items = _list(value, key)
    out: list[Any] = []
    append = out.append
    for i, item in enumerate(items):
        try:
            append(parse(item, key))
        except _Invalid:
            parse(item, f"{key}[{i}]")  # raises again, naming the exact element
            raise
        if consume:
            items[i] = None
    return tuple(out)


def snapshot_from_dict(raw: Any, *, consume: bool = False) -> Snapshot:
    """Validate a decoded snapshot document; raises BadInput naming the JSON path.

    `consume=True` lets validation empty `raw`'s arrays as it goes (for callers that own it).
    """
    try:
        if not isinstance(raw, dict):
            raise _Invalid("$", f"expected a JSON object, got {_kind(raw)}")
        fmt = raw.get("format")
        if fmt != FORMAT:
            raise _Invalid("format", f"expected {FORMAT!r}, got {fmt!r}")
        snapshot = Snapshot(
            cluster=_str(_req(raw, "cluster", "$"), "cluster"),
            backend=_str(_req(raw, "backend", "$"), "backend"),
            taken_at=_time(_req(raw, "taken_at", "$"), "taken_at"),
            classes=_items(raw, "classes", _class_from),
            nodes=_items(raw, "nodes", _node_from),
            jobs=_items(raw, "jobs", _job, consume),
            preemption_events=_items(raw, "preemption_events", _event_from),
        )
    except _Invalid as exc:
        raise BadInput(str(exc).replace("$.", "")) from None
    seen: set[str] = set()
    for i, job in enumerate(snapshot.jobs):
        if job.id in seen:
            raise BadInput(f"jobs[{i}].id: duplicate job id {job.id!r}")
        seen.add(job.id)
    return snapshot


def load_snapshot(stream: IO[str] | IO[bytes], source: str = "<stdin>") -> Snapshot:
    """Parse and validate a snapshot from a stream; errors are prefixed with `source`."""
    with gc_paused(keep=True):
        return _load_snapshot(stream, source)


def _load_snapshot(stream: IO[str] | IO[bytes], source: str) -> Snapshot:
    data = stream.read()
    try:
        raw = orjson.loads(data)
    except orjson.JSONDecodeError:
        # orjson is fast but terse; the stdlib parser names line and column.
        try:
            raw = json.loads(data)
        except json.JSONDecodeError as exc:
            raise BadInput(f"{source}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
        except UnicodeDecodeError as exc:
            raise BadInput(f"{source}: not UTF-8 text ({exc.reason})") from None
    del data  # the decoded tree is all that is needed from here on
    try:
        return snapshot_from_dict(raw, consume=True)
    except BadInput as exc:
        raise BadInput(f"{source}: {exc}") from None


def read_snapshot_file(path: str | Path) -> Snapshot:
    """Load a snapshot file ('-' reads stdin)."""
    import sys

    if str(path) == "-":
        return load_snapshot(sys.stdin, "<stdin>")
    try:
        with open(path, "rb") as stream:
            return load_snapshot(stream, str(path))
    except OSError as exc:
        raise BadInput(f"{path}: cannot read snapshot ({exc.strerror})") from None


def job_to_dict(job: Job) -> dict[str, Any]:
    """The snapshot's JSON object for one job (optional extras only when set).

    Written for speed: `gpuq queue -o json` calls it 200,000 times on a large cluster.
    """
    (ident, name, user, tenant, cls, priority, state, submit, gpus, eligible, start, end, allocation,
     preempted, checkpoint, exempt, reason, urgent, account, partition, qos, comment, interval, duration) = job
    known = KNOWN_TEXT.get
    fmt = format_time
    out: dict[str, Any] = {
        "id": ident,
        "name": name,
        "user": user,
        "tenant": tenant,
        "class": cls,
        "priority": priority,
        "state": state,  # a StrEnum: serialises as its value, compares equal to it
        "submit_time": known(submit) or fmt(submit),
        "eligible_time": None if eligible is None else known(eligible) or fmt(eligible),
        "start_time": None if start is None else known(start) or fmt(start),
        "end_time": None if end is None else known(end) or fmt(end),
        "gpus": gpus,
        "allocation": {node: list(idx) for node, idx in allocation.items()} if allocation else {},
        "preemption_times": [known(t) or fmt(t) for t in preempted] if preempted else [],
        "last_checkpoint_time": None if checkpoint is None else known(checkpoint) or fmt(checkpoint),
        "exempt_until": None if exempt is None else known(exempt) or fmt(exempt),
    }
    if reason is not None:
        out["reason"] = reason
    if urgent:
        out["urgent"] = True
    # (one test per extra: a loop over (key, value) pairs cost more than the rest of the dict)
    if account is not None:
        out["account"] = account
    if partition is not None:
        out["partition"] = partition
    if qos is not None:
        out["qos"] = qos
    if comment is not None:
        out["comment"] = comment
    if interval is not None:
        out["checkpoint_interval_s"] = interval
    if duration is not None:
        out["duration_s"] = duration
    return out


def _class_to_dict(cls: JobClass) -> dict[str, Any]:
    return {
        "name": cls.name,
        "priority": cls.priority,
        "preemptible": cls.preemptible,
        "target_p95_s": cls.target_p95_s,
        "max_wait_s": cls.max_wait_s,
    }


def _node_to_dict(node: Node) -> dict[str, Any]:
    return {"name": node.name, "gpus": node.gpus, "gpu_model": node.gpu_model, "state": node.state.value}


def _event_to_dict(event: PreemptionEvent) -> dict[str, Any]:
    return {
        "time": format_time(event.time),
        "victim": event.victim,
        "preemptor": event.preemptor,
        "gpus": event.gpus,
        "gpu_seconds_lost": event.gpu_seconds_lost,
        "mode": event.mode,
        "reason": event.reason,
    }


def snapshot_to_dict(snapshot: Snapshot, jobs: Iterable[Job] | None = None) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "cluster": snapshot.cluster,
        "backend": snapshot.backend,
        "taken_at": format_time(snapshot.taken_at),
        "classes": [_class_to_dict(c) for c in snapshot.classes],
        "nodes": [_node_to_dict(n) for n in snapshot.nodes],
        "jobs": [job_to_dict(j) for j in (snapshot.jobs if jobs is None else jobs)],
        "preemption_events": [_event_to_dict(e) for e in snapshot.preemption_events],
    }


def write_snapshot(snapshot: Snapshot, stream: IO[bytes]) -> None:
    stream.write(orjson.dumps(snapshot_to_dict(snapshot)))
    stream.write(b"\n")
