"""Malformed inputs for the fuzz tests (`tests/test_fuzz_inputs.py`): snapshot files, policy and
config TOML, and Slurm output, each made by mutating a real seed (the fixtures) with values that
have broken parsers before — NaN, ±Infinity, 1e400, integers of 4,300+ digits, nesting past the
recursion limit, lone surrogate escapes, times outside 1970..9999, ranges that expand to millions
of names — or with random byte edits.

Each `check_*` function feeds one input to gpuq the way gpuq reads it and lets through only
gpuq's own errors (`gpuq.errors.GpuqError`); what loads must then hold together (times in range,
a consistent placement, a snapshot that decodes again after it is written).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from gpuq.backends.slurm.jobs import QueueRead
from gpuq.backends.slurm.jsonread import load_json, parse_jobs_json, parse_sinfo_json
from gpuq.backends.slurm.runner import parse_output
from gpuq.backends.slurm.sacct import parse_sacct_json, parse_sacct_parsable
from gpuq.backends.slurm.text import (
    DELIM,
    parse_scontrol_detail,
    parse_scontrol_jobs,
    parse_sinfo_nodes,
    parse_squeue_format,
)
from gpuq.errors import GpuqError
from gpuq.model import ACTIVE_STATES, Job, JobState, Node, PreviewRequest, Snapshot, from_epoch
from gpuq.model.codec import decode_snapshot, encode_snapshot
from gpuq.model.placement import mark_conflicts

#: The bounds README.md documents for what gpuq accepts (restated here: the tests hold gpuq to them).
MAX_EPOCH = 253_402_300_799.0  # 9999-12-31T23:59:59Z
MAX_GPUS_PER_NODE = 1024
MAX_NODES = 100_000
MAX_JOB_GPUS = MAX_NODES * MAX_GPUS_PER_NODE
MAX_PRIORITY = 2**53

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SNAPSHOT_SEEDS = tuple((FIXTURES / "snapshots" / n).read_bytes() for n in ("small.json", "unindexed.json"))
_SLURM = FIXTURES / "slurm"
_LIVE = _SLURM / "22.05" / "live"

# ---------------------------------------------------------------------------- evil values

#: JSON texts that have broken decoders (a fragment replaces one value of a seed document)
EVIL_JSON: tuple[str, ...] = (
    "NaN", "Infinity", "-Infinity", "1e400", "-1e400", "1e308", "-1e308", "1.7976931348623157e308", "-1", "0",
    "0.5", "1e-320", "9" * 30, "-" + "9" * 30, "9" * 4301, "-" + "9" * 4400, "9007199254740993", "2147483648",
    "4294967295", "18446744073709551615", "18446744073709551616", "1023", "1024", "100001", "true", "false", "null",
    '""', '"x"', "[]", "{}", "[null]", "[0, 0]", '"\\ud800"', '"\\udc00x"', '"a\\ud83d"', '"\\ud83d\\ude00"',
    '"\\u0000"', "[" * 3000 + "]" * 3000, '{"a":' * 3000 + "1" + "}" * 3000, '"9999-12-31T23:59:59-14:00"',
    '"9999-12-31T23:59:59Z"', '"0001-01-01T00:00:00+14:00"', '"1969-12-31T23:59:59Z"',
    '"1970-01-01T00:30:00+01:00"', '"1970-01-01T00:00:00Z"', '"2026-11-29T18:00:00"', '"2026-13-01T00:00:00Z"',
    '"10000-01-01T00:00:00Z"', '"-2026-11-29T18:00:00Z"', '"pending"', '"completing"', '"running"', '"gpu-01"',
    '{"gpu-01": [0, 1, 2, 3]}', '{"nosuch": [0]}', '{"gpu-01": [4]}', '{"gpu-01": [0, 0]}',
    '{"gpu-01": [99999999]}', '{"gpu-01": [null, null, null, null, null]}',
)  # fmt: skip

#: texts that have broken the Slurm text parsers (one replaces a field of a seed line); no lone
#: surrogates, which the runner's decoding (errors="replace") never hands a parser
EVIL_TEXT: tuple[str, ...] = (
    "gpu[1-99999999]", "gpu[0-9]", "gpu[", "gpu]", "gpu[1-2", "gpu[]", "gpu[-]", "gpu[a-b]", "gpu[5-1]",
    "gpu[1-1000]x[1-1000]", "gpu[" + "9" * 5000 + "]", "gpu[1-" + "9" * 30 + "]", "[[[]]]", "a,b,,c",
    "gpu:h100:4(IDX:0-99999999)", "gpu:4(IDX:0-3,0-3)", "gpu:4(IDX:" + "9" * 5000 + ")", "gpu:4(IDX:-)",
    "gpu:4(IDX:3-)", "gpu:4(IDX:a)", "gpu:99999999999", "gpu:h100:" + "9" * 4400, "gres/gpu=" + "9" * 4400,
    "gres/gpu=99999999999", "cpu=1,gres/gpu:h100=99999999999", "gres:gpu:" + "9" * 30, "9" * 4301, "9" * 30, "-1",
    "²", "١٢", "NaN", "inf", "1e400", "0x10", "", "9999-12-31T23:59:59", "0001-01-01T00:00:00",
    "1969-12-31T23:59:59", "1970-01-01T00:00:00", "2026-02-30T00:00:00", "N/A", "(null)", "Unknown", "None",
    "UNLIMITED", "PENDING", "COMPLETING", "RUNNING", "CG", "BOGUS", DELIM, "|",
    "gpuq:exempt-until=9999-12-31T23:59:59-14:00", "gpuq:exempt-until=" + "9" * 5000, "\x00", "\x1b[2J",
)  # fmt: skip


def _byte_edits(seed: bytes) -> st.SearchStrategy[bytes]:
    """The seed with up to four random byte edits (insert, delete, replace)."""

    @st.composite
    def edited(draw: st.DrawFn) -> bytes:
        data = bytearray(seed)
        for _ in range(draw(st.integers(1, 4))):
            at = draw(st.integers(0, max(0, len(data) - 1)))
            kind = draw(st.sampled_from(("insert", "delete", "replace")))
            byte = draw(st.binary(min_size=1, max_size=3))
            if kind == "insert":
                data[at:at] = byte
            elif kind == "delete":
                del data[at : at + len(byte)]
            else:
                data[at : at + len(byte)] = byte
        return bytes(data)

    return edited()


# ---------------------------------------------------------------------------- JSON documents


def _paths(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside a decoded JSON document (containers included)."""
    out = [path] if path else []
    if isinstance(node, dict):
        for key, value in node.items():
            out.extend(_paths(value, (*path, key)))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            out.extend(_paths(value, (*path, i)))
    return out


class JsonSeed:
    """A decoded seed document and the paths of its values, mutated without copying it."""

    _MARK = "\x00FUZZ\x00"

    def __init__(self, text: bytes | str) -> None:
        self.doc = json.loads(text)
        self.paths = _paths(self.doc)

    def replaced(self, path: tuple[Any, ...], fragment: str) -> str:
        """The document as text with the value at `path` replaced by the JSON text `fragment`."""
        parent: Any = self.doc
        for step in path[:-1]:
            parent = parent[step]
        old = parent[path[-1]]
        parent[path[-1]] = self._MARK
        try:
            text = json.dumps(self.doc)
        finally:
            parent[path[-1]] = old
        return text.replace(json.dumps(self._MARK), fragment, 1)

    def renamed(self, path: tuple[Any, ...], key: str) -> str | None:
        """The document with the key at `path` (inside an object) renamed to `key`; None if not in an object."""
        parent: Any = self.doc
        for step in path[:-1]:
            parent = parent[step]
        if not isinstance(parent, dict):
            return None
        value = parent.pop(path[-1])
        parent[key] = value
        try:
            return json.dumps(self.doc)
        finally:
            del parent[key]
            parent[path[-1]] = value


def json_mutations(seed: JsonSeed) -> st.SearchStrategy[str | bytes]:
    @st.composite
    def mutated(draw: st.DrawFn) -> str | bytes:
        path = draw(st.sampled_from(seed.paths))
        how = draw(st.sampled_from(("evil", "evil", "evil", "number", "rename", "bytes")))
        if how == "evil":
            return seed.replaced(path, draw(st.sampled_from(EVIL_JSON)))
        if how == "number":
            value = draw(st.integers(-(2**70), 2**70) | st.floats(allow_nan=False, allow_infinity=False))
            return seed.replaced(path, json.dumps(value))
        if how == "rename":
            renamed = seed.renamed(path, draw(st.sampled_from(("nosuch", "gpu-01", "\\ud800", "0"))))
            if renamed is not None:
                return renamed
        return draw(_byte_edits(json.dumps(seed.doc).encode()))

    return mutated()


_SNAPSHOT_SEEDS = tuple(JsonSeed(s) for s in SNAPSHOT_SEEDS)
snapshot_inputs = st.sampled_from(_SNAPSHOT_SEEDS).flatmap(json_mutations) | st.sampled_from(SNAPSHOT_SEEDS).flatmap(
    _byte_edits
)


def _in_range(moment: datetime) -> bool:
    return 0.0 <= moment.timestamp() <= MAX_EPOCH


def placement_problems(snap: Snapshot) -> list[tuple[tuple[str, ...], str]]:
    """Where a snapshot's placement cannot be (a plain restatement of README's rules, kept apart
    from gpuq's own check): the jobs involved and what is wrong."""
    capacity = {n.name: n.gpus for n in snap.nodes}
    holders: dict[tuple[str, int], str] = {}
    on_node: dict[str, list[str]] = {}
    count: dict[str, int] = {}
    out: list[tuple[tuple[str, ...], str]] = []
    for job in snap.jobs:
        if job.state is JobState.PENDING and job.allocation:
            out.append(((job.id,), "pending job holds GPUs"))
        if job.state not in ACTIVE_STATES:
            continue
        if sum(len(v) for v in job.allocation.values()) != job.gpus:
            out.append(((job.id,), "gpus disagree with the allocation"))
        for node, indexes in job.allocation.items():
            if node not in capacity:
                out.append(((job.id,), f"unknown node {node}"))
                continue
            on_node.setdefault(node, []).append(job.id)
            count[node] = count.get(node, 0) + len(indexes)
            for i in indexes:
                if i is None:
                    continue
                if i >= capacity[node]:
                    out.append(((job.id,), f"{node} has no GPU {i}"))
                other = holders.get((node, i))
                if other is None:
                    holders[node, i] = job.id
                else:
                    out.append(((other, job.id) if other != job.id else (job.id,), f"{node} GPU {i} held twice"))
    for node, n in count.items():
        if n > capacity[node]:
            out.append((tuple(on_node[node]), f"{n} GPUs allocated on {node} of {capacity[node]}"))
    return out


def check_loaded(snap: Snapshot) -> None:
    """What any snapshot gpuq accepted must satisfy (each assertion says which rule it broke)."""
    for node in snap.nodes:
        assert 0 <= node.gpus <= MAX_GPUS_PER_NODE, f"node GPU count out of range: {node}"
    for job in snap.jobs:
        assert abs(job.priority) <= MAX_PRIORITY, f"priority out of range: {job.id} {job.priority}"
        assert 0 <= job.gpus <= MAX_JOB_GPUS, f"job GPU count out of range: {job.id}"
        for t in (
            job.submit_time,
            job.eligible_time,
            job.start_time,
            job.end_time,
            job.last_checkpoint_time,
            job.exempt_until,
            *job.preemption_times,
        ):
            assert t is None or _in_range(t), f"job time outside 1970..9999: {job.id} {t}"
        for value in (job.checkpoint_interval_s, job.duration_s):
            assert value is None or math.isfinite(value), f"job duration not finite: {job.id}"
    assert _in_range(snap.taken_at), f"taken_at outside 1970..9999: {snap.taken_at}"
    for event in snap.preemption_events:
        assert _in_range(event.time), f"event time outside 1970..9999: {event}"
        assert math.isfinite(event.gpu_seconds_lost), f"event GPU-seconds not finite: {event}"
    # Whatever placement conflicts it has are marked on the jobs involved (and left out of previews).
    for job_ids, problem in placement_problems(snap):
        assert all(getattr(snap.job(j), "conflict", None) for j in job_ids), f"unmarked placement conflict: {problem}"
    # What gpuq writes, gpuq reads back the same.
    again = decode_snapshot(encode_snapshot(snap), "<written>")
    assert encode_snapshot(again) == encode_snapshot(snap), "written snapshot reads back differently"
    _use(snap)


def _use(snap: Snapshot) -> None:
    """A preview and the SLA figures on an accepted snapshot: no exception, no impossible plan."""
    from gpuq.policy.config import DEFAULT_POLICY
    from gpuq.policy.engine import plan_preemption
    from gpuq.sla import sla_report

    now = snap.now
    sla_report(snap, DEFAULT_POLICY, now, since=now - 86400)
    capacity = {n.name: n.gpus for n in snap.nodes}
    for gpus in (1, max(capacity.values(), default=1)):
        plan = plan_preemption(snap, DEFAULT_POLICY, PreviewRequest(gpus=max(1, gpus), priority=10**6), now)
        assert plan.freed_gpus <= sum(capacity.get(n, 0) for n in plan.nodes), (
            f"preview frees more GPUs than exist: {plan}"
        )


def check_snapshot(data: str | bytes) -> None:
    try:
        snap = decode_snapshot(data, "fuzz.json")
    except GpuqError:
        return
    check_loaded(snap)


# ---------------------------------------------------------------------------- TOML files

_POLICY_KEYS: tuple[tuple[str, str], ...] = (
    ("preemption", "delta"), ("preemption", "grace_period"), ("preemption", "min_runtime"),
    ("preemption", "max_preemptions_per_day"), ("preemption", "default_checkpoint_interval"),
    ("preemption", "urgent_priority"), ("preemption", "mode"), ("victim_cost", "lost_work_weight"),
    ("victim_cost", "priority_weight"), ("aging", "default_rate"), ("classes.batch", "target_p95"),
    ("classes.batch", "max_wait"), ("classes.batch", "aging_rate"), ("classes.batch", "preemptible"),
    ("urgent_quota", "default"), ("urgent_quota", "nlp"),
)  # fmt: skip

#: TOML value texts that have broken loaders
EVIL_TOML: tuple[str, ...] = (
    "inf", "-inf", "+inf", "nan", "-nan", "1e400", "-1e400", "1e308", "0.5", "-0.5", "-1", "0", "1", "9" * 30,
    "9" * 4301, "-" + "9" * 4400, "0x" + "f" * 4000, "9007199254740993", "2147483648", "true", '"1h"', '"1e400s"',
    '"' + "9" * 400 + 's"', '"' + "9" * 5000 + 'h"', '"99999999999d"', '"-5m"', '"1h30m"', '"nan"', '"inf"',
    '"\\ud800"', '"\\u0000"', "[]", "{}", "[" * 3000 + "]" * 3000, "{a=" * 2000 + "1" + "}" * 2000,
    "1979-05-27T07:32:00Z", '"kill"', '"requeue"',
)  # fmt: skip

_POLICY_SEED = (
    '[preemption]\ndelta = 50\nmode = "requeue"\ngrace_period = "5m"\nmin_runtime = "15m"\n'
    'max_preemptions_per_day = 3\ndefault_checkpoint_interval = "0s"\nurgent_priority = 1000000\n'
    "[victim_cost]\nlost_work_weight = 1.0\npriority_weight = 0.0\n[aging]\ndefault_rate = 10\n"
    '[classes.batch]\ntarget_p95 = "1h"\nmax_wait = "2h"\naging_rate = 10\npreemptible = true\n'
    "[urgent_quota]\ndefault = 0\nnlp = 16\n"
)


@st.composite
def policy_texts(draw: st.DrawFn) -> str | bytes:
    how = draw(st.sampled_from(("set", "set", "set", "bytes")))
    if how == "bytes":
        return draw(_byte_edits(_POLICY_SEED.encode()))
    lines = _POLICY_SEED.splitlines()
    for _ in range(draw(st.integers(1, 3))):
        table, key = draw(st.sampled_from(_POLICY_KEYS))
        value = draw(st.sampled_from(EVIL_TOML))
        section = lines.index(f"[{table}]")
        at = next(i for i in range(section + 1, len(lines)) if lines[i].startswith(f"{key} =") or lines[i][:1] == "[")
        if lines[at].startswith(f"{key} ="):
            lines[at] = f"{key} = {value}"
    return "\n".join(lines) + "\n"


_CONFIG_SEED = (
    'backend = "demo"\noutput = "table"\ncolor = true\n[backends.demo]\nseed = 3\nspeed = 60\n'
    "[backends.slurm]\ntimeout_s = 10\nhistory_s = 86400\ngraceful_wait_s = 30\nconfig_ttl_s = 60\n"
    "history_ttl_s = 15\ndetail_one_by_one_max = 8\nconfig_max_age_s = 600\nhistory_max_age_s = 300\n"
    '[clusters.prod]\nbackend = "demo"\nspeed = 60\n[clusters.prod.policy]\npreemption.delta = 5\n'
)


@st.composite
def config_texts(draw: st.DrawFn) -> str | bytes:
    if draw(st.booleans()):
        return draw(_byte_edits(_CONFIG_SEED.encode()))
    lines = _CONFIG_SEED.splitlines()
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.sampled_from([i for i, line in enumerate(lines) if " = " in line]))
        key = lines[at].split(" = ", 1)[0]
        lines[at] = f"{key} = {draw(st.sampled_from(EVIL_TOML))}"
    return "\n".join(lines) + "\n"


def check_policy(path: Path, data: str | bytes) -> None:
    from gpuq.config import load_policy_file

    path.write_bytes(data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data)
    try:
        policy = load_policy_file(path).policy
    except GpuqError:
        return
    for name in (
        "delta",
        "grace_period_s",
        "min_runtime_s",
        "default_checkpoint_interval_s",
        "lost_work_weight",
        "priority_weight",
        "default_aging_rate",
    ):
        assert math.isfinite(getattr(policy, name)), f"policy {name} not finite: {getattr(policy, name)}"
    assert 0 < policy.urgent_priority <= MAX_PRIORITY, f"policy urgent_priority out of range: {policy.urgent_priority}"
    for cls in policy.classes.values():
        for value in (cls.target_p95_s, cls.max_wait_s, cls.aging_rate):
            assert value is None or math.isfinite(value), f"policy class value not finite: {cls}"


def check_config(path: Path, data: str | bytes) -> None:
    from gpuq.backends.registry import backend_class
    from gpuq.config import load_config

    path.write_bytes(data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data)
    try:
        config = load_config(path)
        for backend, options in config.backend_options.items():
            if backend in ("demo", "slurm"):
                specs = backend_class(backend).options
                for key, value in options.items():
                    if key in specs:
                        checked = specs[key].check(value, f"{path}: backends.{backend}.{key}")
                        assert not isinstance(checked, float) or math.isfinite(checked), f"option {key} not finite"
    except GpuqError:
        return


# ---------------------------------------------------------------------------- Slurm output


def _read(path: Path) -> str:
    return path.read_text()


#: (command as gpuq names it, its captured output, how gpuq parses it, how a line splits into fields)
TEXT_SEEDS: tuple[tuple[str, str, Callable[[str], Any], str], ...] = (
    ("squeue --Format", _read(_LIVE / "squeue-format.txt"), lambda t: parse_squeue_format(t, "qos"), DELIM),
    (
        "squeue --Format",
        _read(_LIVE / "squeue-format-extended.txt"),
        lambda t: parse_squeue_format(t, "partition"),
        DELIM,
    ),
    (
        "scontrol show job -d -o",
        _read(_LIVE / "scontrol-show-job-d-o.txt"),
        lambda t: parse_scontrol_detail(t, starts=True),
        " ",
    ),
    (
        "scontrol show job -d",
        _read(_SLURM / "24.11" / "scontrol-show-job-d.txt"),
        lambda t: parse_scontrol_jobs(t, "qos"),
        " ",
    ),
    (
        "scontrol show job -d",
        _read(_SLURM / "22.05" / "scontrol-show-job-d-oneliner.txt"),
        lambda t: parse_scontrol_jobs(t, "qos"),
        " ",
    ),
    ("sinfo --Format", _read(_LIVE / "sinfo-format.txt"), parse_sinfo_nodes, DELIM),
    ("sacct", _read(_LIVE / "sacct-parsable.txt"), parse_sacct_parsable, "|"),
)


@st.composite
def text_inputs(draw: st.DrawFn) -> tuple[str, str, Callable[[str], Any]]:
    command, text, parse, sep = draw(st.sampled_from(TEXT_SEEDS))
    lines = text.splitlines()
    if draw(st.integers(0, 4)) == 0:
        edited = draw(_byte_edits(text.encode())).decode(errors="replace")  # (the runner decodes so)
        return command, edited, parse
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(lines) - 1))
        fields = lines[at].split(sep)
        i = draw(st.integers(0, len(fields) - 1))
        evil = draw(st.sampled_from(EVIL_TEXT))
        if sep == " " and "=" in fields[i]:  # scontrol: keep the key, replace the value
            fields[i] = fields[i].split("=", 1)[0] + "=" + evil
        else:
            fields[i] = evil
        lines[at] = sep.join(fields)
    return command, "\n".join(lines) + "\n", parse


JSON_SEEDS: tuple[tuple[str, JsonSeed, Callable[[dict[str, Any]], Any]], ...] = (
    ("squeue --json", JsonSeed(_read(_SLURM / "22.05" / "squeue.json")), lambda d: parse_jobs_json(d, "qos")),
    ("squeue --json", JsonSeed(_read(_SLURM / "26.05" / "squeue.json")), lambda d: parse_jobs_json(d, "partition")),
    (
        "scontrol show job --json",
        JsonSeed(_read(_SLURM / "24.11" / "scontrol-show-job.json")),
        lambda d: parse_jobs_json(d, "qos"),
    ),
    ("sinfo --json", JsonSeed(_read(_SLURM / "22.05" / "sinfo.json")), parse_sinfo_json),
    ("sinfo --json", JsonSeed(_read(_SLURM / "26.05" / "sinfo.json")), parse_sinfo_json),
    ("sacct --json", JsonSeed(_read(_SLURM / "22.05" / "sacct.json")), parse_sacct_json),
)


@st.composite
def json_inputs(draw: st.DrawFn) -> tuple[str, str, Callable[[dict[str, Any]], Any]]:
    command, seed, parse = draw(st.sampled_from(JSON_SEEDS))
    data = draw(json_mutations(seed))
    text = data.decode(errors="replace") if isinstance(data, bytes) else data
    return command, text, parse


#: the captures' nodes (sinfo of the same lab), beside which jobs read from a mutated seed are placed
LAB_NODES = tuple(parse_sinfo_nodes(_read(_LIVE / "sinfo-format.txt")))


def _check_parsed(result: Any) -> None:
    """Slurm output gpuq accepted builds a snapshot gpuq writes and reads back."""
    jobs: list[Job] = []
    nodes: list[Node] = []
    if isinstance(result, QueueRead):
        jobs, nodes = result.jobs, list(LAB_NODES)
    elif isinstance(result, list) and result and isinstance(result[0], Node):
        nodes = result
    if not jobs and not nodes:
        return
    seen: set[str] = set()
    jobs = [j for j in jobs if not (j.id in seen or seen.add(j.id))]  # type: ignore[func-returns-value]
    snap = mark_conflicts(Snapshot("fuzz", "slurm", from_epoch(1_795_000_000.0), (), tuple(nodes), tuple(jobs)))
    check_loaded(decode_snapshot(encode_snapshot(snap), "<written>"))


def check_text(command: str, text: str, parse: Callable[[str], Any]) -> None:
    try:
        result = parse_output(command, lambda: parse(text))
    except GpuqError:
        return
    _check_parsed(result)


def check_json(command: str, text: str, parse: Callable[[dict[str, Any]], Any]) -> None:
    try:
        result = parse_output(command, lambda: parse(load_json(text, command)[0]))
    except GpuqError:
        return
    _check_parsed(result)
