"""Helpers for the table tests: a crowded snapshot (long ids, node names, reasons) and a parser of
the CLI's tables that reads each cell back from where its header says it is."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gpuq.model import JobClass, JobState, Node, NodeState, PreemptionEvent
from gpuq.model.codec import encode_snapshot
from gpuq.views.columns import TABLES, Kind, TableSpec
from tests.factories import at, make_job, make_snapshot

T = 1_795_100_400.0  # the CLI tests' clock (tests/cli/conftest.py)
H = 3600.0
NODE = "gpu-a100-rack07-n0"

#: the crowded snapshot's ids: every one must be readable whole at any width
JOB_IDS = ("4821337_12", "4821338", "4821339", "4821340", "4821400", "4821401", "4821402")
NODE_NAMES = tuple(f"{NODE}{i}" for i in range(1, 6))


def crowded_snapshot(name: str = "job", user: str = "alexandra.k", reason: str | None = None) -> bytes:
    """Five 8-GPU nodes (one down) with long names, long ids, a multi-node job, an exempt one,
    pending jobs with Slurm-like reasons, preemption events; `name`, `user` and `reason` go on
    job 4821400 (a pending job whose preview preempts 4821340)."""
    classes = [
        JobClass("urgent", 1000, False, 600.0, 1800.0),
        JobClass("normal", 100, True, 3600.0, 7200.0),
        JobClass("research-batch", 10, True, 14400.0, 28800.0),
    ]
    nodes = [Node(n, 8, "A100-SXM4-80GB", NodeState.ALLOCATED) for n in NODE_NAMES[:4]]
    nodes.append(Node(NODE_NAMES[4], 8, "A100-SXM4-80GB", NodeState.DOWN))
    run = JobState.RUNNING
    jobs = [
        make_job("4821337_12", "llama-70b-finetune-sweep", "alexandra.k", "speech-recognition", "normal", 100, run,
                 T - 5 * H, 16, start_time=T - 3 * H, allocation={NODE_NAMES[0]: range(8), NODE_NAMES[1]: range(8)},
                 preemption_times=[T - 20 * H, T - 2 * H], comment="checkpoint every 30m; ask on #speech-oncall"),
        make_job("4821338", "eval-harness", "bartholomew", "vision-research", "research-batch", 10, run, T - 2 * H, 4,
                 start_time=T - 50 * 60, allocation={NODE_NAMES[2]: range(4)}, exempt_until=T + 1.5 * H),
        make_job("4821339", "serve-canary", "dave", "infra", "urgent", 1000, run, T - H, 2, start_time=T - 0.5 * H,
                 allocation={NODE_NAMES[2]: (4, 5)}),
        make_job("4821340", "tokenize", "erin", "nlp", "research-batch", 10, run, T - 4 * H, 1, start_time=T - 3 * H,
                 allocation={NODE_NAMES[3]: (0,)}),
        make_job("4821400", name, user, "speech-recognition", "normal", 500, JobState.PENDING, T - 2 * H - 600, 8,
                 reason=reason if reason is not None else "Resources"),
        make_job("4821401", "sweep-b", "bartholomew", "vision-research", "research-batch", 10, JobState.PENDING,
                 T - 7 * 60, 1, reason="(ReqNodeNotAvail, UnavailableNodes:gpu-a100-rack07-n05)"),
        make_job("4821402", "nightly-full-retrain", "erin", "nlp", "urgent", 1000, JobState.PENDING, T - 26 * H, 16,
                 reason="Priority", urgent=True),
        make_job("4821300", "done", "erin", "nlp", "normal", 100, JobState.COMPLETED, T - 9 * H, 4,
                 start_time=T - 8 * H, end_time=T - 6 * H),
    ]  # fmt: skip
    events = [
        PreemptionEvent(at(T - 2 * H), "4821337_12", "4821399", 16, 7200.0 * 16, "requeue",
                        "priority gap 400 > delta 50 (requester 500, job 100)"),
        PreemptionEvent(at(T - 20 * H), "4821337_12", "4821398", 16, 1800.0 * 16, "requeue", "priority gap 900"),
    ]  # fmt: skip
    return encode_snapshot(make_snapshot("prod-east", "snapshot", T, classes, nodes, jobs, events))


def write_crowded(tmp_path: Path, **fields: str) -> str:
    path = tmp_path / "crowded.json"
    path.write_bytes(crowded_snapshot(**fields))
    return str(path)


_RUN = re.compile(r" {2,}")
_HIDDEN = re.compile(r"^(\d+) columns? hidden \(([^)]*)\): -o wide or a wider terminal$")
_NOTE_START = re.compile(r"^\d+ columns? hidden \(")


def _until_blank(lines: list[str], k: int) -> list[str]:
    end = k
    while end < len(lines) and lines[end].strip():
        end += 1
    return lines[k:end]


@dataclass
class Parsed:
    spec: TableSpec
    #: the headers, in order
    shown: list[str]
    #: each row: column name -> its text, wrapped lines joined by a space
    rows: list[dict[str, str]] = field(default_factory=list)
    #: the columns the hidden-columns line names (None: no such line)
    hidden: list[str] | None = None
    lines: list[str] = field(default_factory=list)


def _header_of(line: str, specs: Sequence[TableSpec]) -> TableSpec | None:
    names = _RUN.split(line.strip())
    for spec in specs:
        if spec.header and names[0] == spec.columns[0].name and set(names) <= set(spec.names) and len(names) > 1:
            return spec
    return None


def _cells(line: str, anchors: list[tuple[str, Kind, int]]) -> dict[str, str]:
    """The text at each column's anchor: its start for a left-aligned column, its end for a
    right-aligned one. Cells other than lists never hold two spaces in a row (the gap between
    columns is two); a list (the GPU grid's padded cells) runs up to the next column's cell."""
    spans: dict[str, tuple[int, int]] = {}
    for name, kind, pos in anchors:
        if kind is Kind.NUMBER:
            if 0 < pos <= len(line) and line[pos - 1] != " " and (pos == len(line) or line[pos] == " "):
                gaps = list(_RUN.finditer(line[:pos]))
                spans[name] = (gaps[-1].end() if gaps else 0, pos)
        elif kind is not Kind.LIST and pos < len(line) and line[pos] != " " and (pos == 0 or line[pos - 1] == " "):
            spans[name] = (pos, pos + len(_RUN.split(line[pos:], maxsplit=1)[0].rstrip()))
    for k, (name, kind, pos) in enumerate(anchors):
        if kind is Kind.LIST and pos < len(line) and line[pos] != " ":
            end = len(line)
            if k + 1 < len(anchors):
                after, _, after_pos = anchors[k + 1]
                end = spans[after][0] if after in spans else after_pos
            spans[name] = (pos, end)
    return {name: line[a:b].rstrip() for name, (a, b) in spans.items()}


def parse_tables(text: str, specs: Sequence[TableSpec] | None = None) -> list[Parsed]:
    """Every table in a command's output, found by its header line: `specs` are the tables the
    command prints, in order (two may share their first columns), default: any one table."""
    lines = text.split("\n")
    tables: list[Parsed] = []
    k = 0
    while k < len(lines):
        candidates = list(TABLES.values()) if specs is None else list(specs[len(tables) : len(tables) + 1])
        spec = _header_of(lines[k], candidates) if lines[k].strip() else None
        if spec is None:
            k += 1
            continue
        header = lines[k]
        shown = _RUN.split(header.strip())
        columns = {c.name: c for c in spec.columns}
        anchors = []
        for name in shown:
            start = header.index(name, 0 if not anchors else anchors[-1][2])
            kind = columns[name].kind
            anchors.append((name, kind, start + len(name) if kind is Kind.NUMBER else start))
        table = Parsed(spec, shown, lines=[header])
        k += 1
        while k < len(lines) and lines[k].strip():
            line = lines[k]
            if _NOTE_START.match(line):
                joined = " ".join(line.strip() for line in _until_blank(lines, k))
                match = _HIDDEN.match(joined)
                assert match is not None, joined
                table.hidden = match.group(2).split(", ")
                assert int(match.group(1)) == len(table.hidden)
                k += len(_until_blank(lines, k))
                break
            cells = _cells(line, anchors)
            first = shown[0]
            if first in cells:
                table.rows.append(cells)
            else:
                assert table.rows, f"a continuation line before any row: {line!r}"
                row = table.rows[-1]
                for name, value in cells.items():
                    row[name] = f"{row[name]} {value}" if row.get(name) else value
            table.lines.append(line)
            k += 1
        tables.append(table)
    return tables


def normal(value: str, kind: Kind) -> str:
    """A cell's text as wrapping leaves it comparable: runs of spaces as one, a list's items
    without the space a wrapped line adds after its separator."""
    text = " ".join(value.split())
    return text.replace(", ", ",") if kind is Kind.LIST else text
