"""Slurm accounting as a trace: ``sacct --parsable2`` and ``sacct --json`` read as `TraceJob`s.

Both readers stream (one line, or one element of the JSON ``jobs`` list, at a time) and reuse
the backend's own sacct parsing (`sacct.record_from_fields`, `sacct.record_from_json`).

What a job is, as sacct reports it:
- job steps (``123.batch``, ``123.0``, ``123+0.extern``) are skipped: a job is its allocation;
- an array task is its own job (``16_2``); the pending rest of an array, which sacct folds into
  one record (``16_[0-1,3]``, optionally with a ``%N`` throttle), is one pending job per task;
- a heterogeneous job's components are separate jobs (``123+0``, ``123+1``), as sacct lists them;
- a requeued job (preempted with requeue, or ``scontrol requeue``) has one record per run with
  ``-D``; its records are merged into one job: the first submit and start, the last run's end
  and state, the run times summed (`TraceJob.duration_s`), the most GPUs any run held. sacct
  orders records by insertion, so a job's runs need not be adjacent: a job whose latest record
  says PREEMPTED/REQUEUED is held back until its next run's record or the end of the input.

Times: parsable text times are the local time of the host that printed them (as Slurm prints
them); JSON times are epoch seconds.
"""

from __future__ import annotations

import itertools
import json
import operator
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Final, TextIO

from gpuq.backends.slurm.config import parse_duration_text
from gpuq.backends.slurm.gres import gpus_from_tres
from gpuq.backends.slurm.runner import Runner
from gpuq.backends.slurm.sacct import SACCT_FIELDS, AcctRecord, record_from_fields, record_from_json
from gpuq.backends.slurm.values import json_number, text_time, whole
from gpuq.errors import BadInput, NotFound, Refused
from gpuq.model import MAX_PRIORITY
from gpuq.trace.record import TraceError, TraceJob

__all__ = [
    "EXPORT_TIMEOUT_S",
    "TRACE_FIELDS",
    "export_jobs",
    "export_lines",
    "iter_parsable",
    "read_sacct_json",
    "read_sacct_parsable",
    "trace_args",
]

#: The ``sacct -o`` columns of a trace, in this order when sacct prints no header (``-n``).
TRACE_FIELDS: Final[tuple[str, ...]] = (
    "JobID",
    "JobIDRaw",
    "JobName",
    "User",
    "Account",
    "Partition",
    "QOS",
    "Priority",
    "State",
    "Submit",
    "Eligible",
    "Start",
    "End",
    "ElapsedRaw",
    "AllocTRES",
    "ReqTRES",
)

#: Columns a file with a header must have (the run time comes from Elapsed/ElapsedRaw, else
#: Start and End; GPUs from AllocTRES or ReqTRES).
_REQUIRED: Final = ("JobID", "State", "Submit")
_INDEX: Final = {name.lower(): i for i, name in enumerate(SACCT_FIELDS)}
#: sacct's states for a run that was ended by a requeue: another record of the job may follow.
_RERUN_PREFIXES: Final = ("PREEMPTED", "REQUEUED", "REQUEUE_")
#: (sacct --parsable2 prints the pending tasks as ranges, ``--json`` 22.05 as a hex bitmap ``0xB``)
_ARRAY_RE: Final = re.compile(r"^(?P<base>\d+)_\[(?P<tasks>0x[0-9A-Fa-f]+|[0-9,\-:]+)(?:%\d+)?\]$")
#: the most tasks one pending array record may stand for (Slurm's MaxArraySize is at most 4000001)
_MAX_ARRAY_TASKS: Final = 4_000_001
_CHUNK: Final = 1 << 20
#: how long an export's sacct may run (a month of a large cluster's accounting takes minutes,
#: where a queue read takes seconds: the backend's own timeout would cut it off)
EXPORT_TIMEOUT_S: Final = 1800.0


def trace_args(since: float | None, until: float | None, *, header: bool = True) -> list[str]:
    """The sacct command line a trace is exported with: every user's allocations (``-X``, no
    steps), every run of a requeued job (``-D``), over ``[since, until]`` (local time, as sacct
    reads it; None: sacct's defaults), with `TRACE_FIELDS`."""
    fmt = "%Y-%m-%dT%H:%M:%S"
    args = ["sacct", "--parsable2", "-X", "-D", "-a"]
    if not header:
        args.append("-n")
    if since is not None:
        args += ["-S", datetime.fromtimestamp(since).strftime(fmt)]
    if until is not None:
        args += ["-E", datetime.fromtimestamp(until).strftime(fmt)]
    return [*args, "-o", ",".join(TRACE_FIELDS)]


def export_lines(runner: Runner, since: float, until: float) -> Iterator[str]:
    """sacct's ``--parsable2`` lines (header first) for ``[since, until]`` (`trace_args`), as
    sacct prints them; Refused, naming why, on a cluster without accounting."""
    try:
        yield from runner.lines(trace_args(since, until), timeout_s=max(runner.timeout_s, EXPORT_TIMEOUT_S))
    except Refused as exc:
        if "accounting storage is disabled" in str(exc).lower():
            raise Refused(
                "Slurm accounting is disabled on this cluster (no slurmdbd): sacct keeps no job history to export"
            ) from None
        raise


def export_jobs(runner: Runner, since: float, until: float) -> Iterator[TraceJob]:
    """The jobs of `export_lines`, merged as the module docstring says, streaming."""
    return iter_parsable(export_lines(runner, since, until), "sacct output")


# ---------------------------------------------------------------- merging runs into jobs


_UNFINISHED: Final = ("RUNNING", "PENDING", "SUSPENDED")


def _trace_job(rec: AcctRecord, submit: float, start: float | None, run_s: float, gpus: int) -> TraceJob:
    """The job whose last record is `rec` (the earlier runs' figures given)."""
    end = rec.end
    return TraceJob(
        rec.id,
        submit,
        run_s,
        gpus,
        rec.qos,
        rec.priority,
        rec.user,
        rec.account or "",
        rec.name,
        start,
        None if end is None or rec.raw_state.startswith(_UNFINISHED) else end,
        rec.raw_state,
    )


@dataclass(slots=True)
class _Held:
    """A job whose latest run was ended by a requeue: its runs so far."""

    last: AcctRecord
    submit: float
    start: float | None
    run_s: float
    gpus: int
    line: int


class _Merger:
    """Turns records (in sacct's order) into jobs, holding back those that may run again."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.held: dict[str, _Held] = {}

    def add(self, rec: AcctRecord, run_s: float, line: int) -> TraceJob | None:
        """The job `rec` completes, or None while it may run again (held back)."""
        submit, start, gpus = rec.submit, rec.start, rec.gpus
        if submit is None:
            raise TraceError(self.path, line, f"job {rec.id}: no submit time")
        key = rec.raw_id or rec.id
        before = self.held.pop(key, None) if self.held else None
        if before is not None:  # a later run of a requeued job
            submit = min(submit, before.submit)
            if start is None or (before.start is not None and before.start < start):
                start = before.start
            run_s += before.run_s
            gpus = max(gpus, before.gpus)
        if rec.raw_state.startswith(_RERUN_PREFIXES):
            self.held[key] = _Held(rec, submit, start, run_s, gpus, line)
            return None
        return _trace_job(rec, submit, start, run_s, gpus)

    def rest(self) -> Iterator[tuple[TraceJob, int]]:
        """The held jobs (no later run came), with the line of their last record."""
        for held in self.held.values():
            yield _trace_job(held.last, held.submit, held.start, held.run_s, held.gpus), held.line
        self.held.clear()


def _expanded(job: TraceJob, path: str, line: int) -> Iterator[TraceJob]:
    """A pending array record (``16_[0-1,3]``) as one job per task; any other job as itself."""
    found = _ARRAY_RE.match(job.id) if job.id.endswith("]") else None
    if found is None:
        yield job
        return
    base = found.group("base")
    for task in _tasks(found.group("tasks"), path, line):
        yield replace(job, id=f"{base}_{task}")


def _tasks(spec: str, path: str, line: int) -> Iterator[int]:
    if spec.startswith("0x"):  # bit i set: task i pending
        bits = int(spec, 16)
        if bits.bit_length() > _MAX_ARRAY_TASKS:
            raise TraceError(path, line, f"array tasks {spec[:20]!r}…: more than {_MAX_ARRAY_TASKS} tasks")
        yield from (i for i in range(bits.bit_length()) if bits >> i & 1)
        return
    count = 0
    for part in spec.split(","):
        rng, _, step_s = part.partition(":")
        lo_s, dash, hi_s = rng.partition("-")
        try:
            lo = int(lo_s)
            hi = int(hi_s) if dash else lo
            step = int(step_s) if step_s else 1
        except ValueError:
            raise TraceError(path, line, f"array tasks {spec!r}: not a Slurm task list") from None
        if hi < lo or step < 1:
            raise TraceError(path, line, f"array tasks {spec!r}: range {part} runs backwards")
        count += (hi - lo) // step + 1
        if count > _MAX_ARRAY_TASKS:
            raise TraceError(path, line, f"array tasks {spec!r}: more than {_MAX_ARRAY_TASKS} tasks")
        yield from range(lo, hi + 1, step)


# ---------------------------------------------------------------- sacct --parsable2


class _Columns:
    """Where each of `SACCT_FIELDS` (and the run time) is in a row of a given header."""

    def __init__(self, names: Sequence[str], path: str, line: int) -> None:
        lower = [n.strip().lower() for n in names]
        missing = [n for n in _REQUIRED if n.lower() not in lower]
        if not any(n in lower for n in ("alloctres", "reqtres")):
            missing.append("AllocTRES or ReqTRES")
        if not any(n in lower for n in ("elapsedraw", "elapsed")) and not {"start", "end"} <= set(lower):
            missing.append("ElapsedRaw, Elapsed or Start and End")
        if missing:
            raise TraceError(path, line, f"sacct header lacks {', '.join(missing)} (see TRACE_FIELDS)")
        self.count = len(names)
        where = {name: i for i, name in enumerate(lower)}
        #: for each SACCT_FIELDS slot, the column it is in (None: not printed)
        self.slots = [where.get(name) for name in _INDEX]
        #: a row (with "" appended) -> its fields in SACCT_FIELDS order, "" where not printed
        self.pick = operator.itemgetter(*(len(names) if i is None else i for i in self.slots))
        self.name_at = where.get("jobname")
        self.elapsed_raw = where.get("elapsedraw")
        self.elapsed = where.get("elapsed")
        self.names = list(names)

    def split(self, line: str, path: str, lineno: int) -> list[str]:
        f = line.split("|")
        n = self.count
        if len(f) > n and self.name_at is not None:  # a '|' inside JobName: fold the excess back
            extra = len(f) - n
            at = self.name_at
            f = f[:at] + ["|".join(f[at : at + 1 + extra])] + f[at + 1 + extra :]
        if len(f) != n:
            raise TraceError(path, lineno, f"{len(f)} fields, expected {n} (truncated output?)")
        return f

    def run_s(self, f: list[str], rec: AcctRecord) -> float:
        if self.elapsed_raw is not None and (text := f[self.elapsed_raw]):
            if len(text) < 12 and text.isascii() and text.isdigit():
                return float(text)
            return float(whole(text, "ElapsedRaw", 2**40))
        if self.elapsed is not None:
            value = parse_duration_text(f[self.elapsed])
            if value is not None:
                return value
        if rec.start is not None and rec.end is not None:
            return max(0.0, rec.end - rec.start)
        return 0.0


_CHECKS: Final[Mapping[str, Callable[[str], object]]] = {
    "submit": text_time,
    "eligible": text_time,
    "start": text_time,
    "end": text_time,
    "priority": lambda s: whole(s, "Priority", MAX_PRIORITY) if s else 0,
    "alloctres": gpus_from_tres,
    "reqtres": gpus_from_tres,
    "elapsedraw": lambda s: whole(s, "ElapsedRaw", 2**40) if s else 0,
    "elapsed": parse_duration_text,
}


def _bad_column(cols: _Columns, f: list[str]) -> int | None:
    """The 1-based character column of the first field the shared converters refuse."""
    offset = 1
    for name, value in zip(cols.names, f, strict=False):
        check = _CHECKS.get(name.strip().lower())
        try:
            if check is not None:
                check(value)
        except ValueError:
            return offset
        offset += len(value) + 1
    return None


_BARE_ELAPSED: Final = TRACE_FIELDS.index("ElapsedRaw")
_BARE_SUBMIT: Final = TRACE_FIELDS.index("Submit")


def _check_bare(f: list[str], path: str, line: int) -> None:
    """A first row without a header must look like `TRACE_FIELDS` (a '|' in a name makes the
    count alone no proof): a time under Submit, a number under ElapsedRaw."""
    elapsed, submit = f[_BARE_ELAPSED], f[_BARE_SUBMIT]
    try:
        ok = (elapsed == "" or (elapsed.isascii() and elapsed.isdigit())) and text_time(submit) is not None
    except ValueError:
        ok = False
    if not ok:
        raise TraceError(
            path,
            line,
            f"no header line, and the columns are not the {len(TRACE_FIELDS)} TRACE_FIELDS ({','.join(TRACE_FIELDS)})",
        )


def iter_parsable(lines: Iterable[str], path: str) -> Iterator[TraceJob]:
    """`TraceJob`s from ``sacct --parsable2`` lines (with a header, or exactly `TRACE_FIELDS`
    without one); ``path`` names the source in errors."""
    merger = _Merger(path)
    it: Iterator[tuple[int, str]] = enumerate(lines, 1)
    cols: _Columns | None = None
    for lineno, raw in it:
        line = raw.rstrip("\r\n")
        if not line:
            continue
        first = line.split("|")
        # a header names its columns (JobID among them); a row starts with a job id
        if not first[0][:1].isdigit() and any(name.strip().lower() == "jobid" for name in first):
            cols = _Columns(first, path, lineno)
            break
        cols = _Columns(TRACE_FIELDS, path, lineno)
        if len(first) < len(TRACE_FIELDS):
            raise TraceError(
                path,
                lineno,
                f"{len(first)} fields and no header: expected a header line or "
                f"the {len(TRACE_FIELDS)} TRACE_FIELDS columns",
            )
        _check_bare(cols.split(line, path, lineno), path, lineno)
        it = itertools.chain(((lineno, raw),), it)  # (the first row is a job: read it below)
        break
    if cols is None:
        return
    n, pick, id_at, run_s_of = cols.count, cols.pick, cols.slots[0], cols.run_s
    add = merger.add
    for lineno, raw in it:
        line = raw.rstrip("\r\n")
        if not line:
            continue
        f = line.split("|")
        if len(f) != n:
            f = cols.split(line, path, lineno)
        jid = f[id_at] if id_at is not None else ""
        if not jid:
            raise TraceError(path, lineno, "no JobID", column=1)
        if "." in jid:  # a job step
            continue
        f.append("")  # (what `pick` gives for a column the header lacks)
        try:
            rec = record_from_fields(pick(f))
            job = add(rec, run_s_of(f, rec), lineno)
        except ValueError as exc:
            raise TraceError(path, lineno, str(exc), _bad_column(cols, f)) from None
        if job is not None:
            if jid[-1] == "]":
                yield from _expanded(job, path, lineno)
            else:
                yield job
    for job, lineno in merger.rest():
        yield from _expanded(job, path, lineno)


def read_sacct_parsable(path: str) -> Iterator[TraceJob]:
    """The jobs of a file of ``sacct --parsable2`` output (see `iter_parsable`), streaming.
    TraceError on malformed input, NotFound for a missing file, BadInput for one that cannot
    be read."""
    with _open(path) as fh:
        yield from iter_parsable(fh, path)


def _open(path: str) -> TextIO:
    try:
        return open(path, encoding="utf-8", errors="replace", newline="")  # noqa: SIM115 - returned
    except FileNotFoundError:
        raise NotFound(f"{path}: no such file") from None
    except OSError as exc:
        raise BadInput(f"{path}: cannot read: {exc.strerror or exc}") from None


# ---------------------------------------------------------------- sacct --json


class _JsonStream:
    """sacct's one JSON document read a value at a time: the top-level object's keys are walked
    by hand and each element of its ``jobs`` list decoded on its own (`json.JSONDecoder.raw_decode`),
    so memory holds one job, not the document."""

    def __init__(self, fh: TextIO, path: str) -> None:
        self.fh = fh
        self.path = path
        self.buf = ""
        self.pos = 0
        # Line numbers are counted forward from a mark as positions are asked for (each job's),
        # so the whole count costs one pass over the text, not one per job.
        self.mark = 0  # a position in buf …
        self.mark_line = 1  # … and its line
        self.col_base = 0  # the column (0-based) of buf[0]: a line may span chunks
        self.eof = False
        self.value_at = 0
        self.decoder = json.JSONDecoder()

    def _fill(self) -> None:
        if self.pos:
            cut = self.pos
            self.line(cut)  # (moves the mark to the cut)
            newline = self.buf.rfind("\n", 0, cut)
            self.col_base = cut - newline - 1 if newline >= 0 else self.col_base + cut
            self.buf = self.buf[cut:]
            self.pos = self.mark = 0
        chunk = self.fh.read(max(_CHUNK, len(self.buf)))
        if chunk:
            self.buf += chunk
        else:
            self.eof = True

    def line(self, at: int) -> int:
        """The line of position `at` of the buffer."""
        if at >= self.mark:
            self.mark_line += self.buf.count("\n", self.mark, at)
            self.mark = at
            return self.mark_line
        return self.mark_line - self.buf.count("\n", at, self.mark)

    def where(self, pos: int | None = None) -> tuple[int, int]:
        """Line and (1-based) column of `pos` (default: the current position), for errors."""
        at = self.pos if pos is None else pos
        newline = self.buf.rfind("\n", 0, at)
        col = at - newline if newline >= 0 else self.col_base + at + 1
        return self.line(at), col

    def error(self, message: str, pos: int | None = None) -> TraceError:
        line, col = self.where(pos)
        return TraceError(self.path, line, message, col)

    def peek(self) -> str:
        while True:
            buf, pos = self.buf, self.pos
            while pos < len(buf) and buf[pos] in " \t\r\n":
                pos += 1
            self.pos = pos
            if pos < len(buf):
                return buf[pos]
            if self.eof:
                return ""
            self._fill()

    def expect(self, char: str, what: str) -> None:
        got = self.peek()
        if got != char:
            raise self.error(f"expected {char!r} {what}, found {got!r}" if got else f"ended before {char!r} {what}")
        self.pos += 1

    def value(self) -> Any:
        """The next JSON value; `value_at` is where it starts in the buffer."""
        self.peek()
        while True:
            self.value_at = self.pos  # (a fill moves the text: the value then starts at 0)
            try:
                obj, end = self.decoder.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as exc:
                if not self.eof:
                    self._fill()
                    continue
                raise self.error(f"not JSON: {exc.msg}", exc.pos) from None
            except ValueError:  # (int() of a number of 4,300+ digits)
                raise self.error("not sacct JSON: a number of thousands of digits", self.value_at) from None
            except RecursionError:
                raise self.error("not sacct JSON: nested too deeply", self.value_at) from None
            if end == len(self.buf) and not self.eof:  # a number may go on in the next chunk
                self._fill()
                continue
            self.pos = end
            return obj


def read_sacct_json(path: str) -> Iterator[TraceJob]:
    """The jobs of a file of ``sacct --json`` output (22.05's dbv0.0.38 and the data_parser
    versions after it), streaming. TraceError on malformed input (line and column of the job
    or the JSON error), NotFound for a missing file, BadInput for one that cannot be read."""
    with _open(path) as fh:
        yield from _json_jobs(_JsonStream(fh, path))


def _json_jobs(s: _JsonStream) -> Iterator[TraceJob]:
    merger = _Merger(s.path)
    if s.peek() == "":
        raise s.error("empty file: not sacct --json output")
    s.expect("{", "(sacct --json prints one object)")
    seen_jobs = False
    while True:
        if s.peek() == "}":
            s.pos += 1
            break
        key = s.value()
        if not isinstance(key, str):
            raise s.error("expected a key", s.value_at)
        s.expect(":", f"after {key!r}")
        if key != "jobs":
            s.value()  # meta, errors, warnings: not jobs
        else:
            seen_jobs = True
            s.expect("[", "('jobs' is a list)")
            if s.peek() == "]":
                s.pos += 1
            else:
                while True:
                    job = s.value()
                    yield from _json_job(s, merger, job, s.value_at)
                    nxt = s.peek()
                    s.pos += 1
                    if nxt == "]":
                        break
                    if nxt != ",":
                        raise s.error(f"expected ',' or ']' in 'jobs', found {nxt!r}", s.pos - 1)
        nxt = s.peek()
        if nxt == ",":
            s.pos += 1
        elif nxt != "}":
            raise s.error(f"expected ',' or '}}' after {key!r}, found {nxt!r}" if nxt else "ended inside the object")
    if not seen_jobs:
        raise s.error("no 'jobs' list: not sacct --json output")
    if s.peek() != "":
        raise s.error("more after the end of the JSON object")
    for job, line in merger.rest():
        yield from _expanded(job, s.path, line)


def _json_job(s: _JsonStream, merger: _Merger, job: Any, at: int) -> Iterator[TraceJob]:
    line = s.line(at)
    if not isinstance(job, dict):
        raise s.error("a 'jobs' element is not an object", at)
    try:
        rec = record_from_json(job)
        t = job.get("time") or {}
        elapsed = json_number(t.get("elapsed")) if isinstance(t, dict) else None
    except (KeyError, ValueError, TypeError, AttributeError) as exc:
        what = f"no {exc}" if isinstance(exc, KeyError) else str(exc)
        raise s.error(f"job: {what}", at) from None
    if elapsed is not None and not 0 <= elapsed <= 2**40:
        raise s.error(f"job {rec.id}: time.elapsed {elapsed!r} out of range", at)
    if elapsed is not None:
        run_s = float(elapsed)
    elif rec.start is not None and rec.end is not None:
        run_s = max(0.0, rec.end - rec.start)
    else:
        run_s = 0.0
    done = merger.add(rec, run_s, line)
    if done is not None:
        yield from _expanded(done, s.path, line)
