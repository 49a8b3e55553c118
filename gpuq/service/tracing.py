"""Opening a trace for front ends: `open_trace` picks the reader (a preset, a column mapping, or
what the file looks like) and applies the class rules, streaming `TraceJob`s.

Formats read (`gpuq.trace.sniff` tells them apart): gpuq's job log (`gpuq.jobs/v1`), a
`gpuq.snapshot/v1` file or a directory of them, an incident recording directory
(`gpuq.recording/v1`), Slurm's `sacct --json` and `sacct --parsable2` (read by
`gpuq.backends.slurm.trace`), the public traces by `--preset`, and any CSV with `--columns`.
"""

from __future__ import annotations

import bisect
import math
import os
from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuq.errors import BadInput, NotFound
from gpuq.textsafe import visible
from gpuq.timefmt import format_time
from gpuq.trace import FORMATS, PRESETS, TraceError, TraceJob

if TYPE_CHECKING:
    from gpuq.policy.config import Policy

__all__ = [
    "FORMATS",
    "NO_GPU",
    "PRESETS",
    "RecordedWaits",
    "TraceError",
    "TraceJob",
    "TraceSla",
    "open_trace",
    "parse_columns",
    "recorded_waits",
    "trace_end",
    "trace_format",
    "trace_shape",
    "trace_sla",
]


def parse_columns(spec: str | Mapping[str, str]) -> dict[str, str]:
    """`--columns` as {TraceJob field: CSV column}; BadInput for a bad mapping
    (`gpuq.trace.csvmap.parse_columns`)."""
    from gpuq.trace.csvmap import parse_columns as parse

    return parse(spec)


def trace_format(path: str, *, preset: str | None = None, columns: Mapping[str, str] | None = None) -> str:
    """The format `open_trace` would read `path` as (one of `gpuq.trace.FORMATS`)."""
    if not os.path.exists(path):
        raise NotFound(f"{visible(path)}: no such trace file or directory")
    if preset is not None and columns:
        raise BadInput("give --preset or --columns, not both")
    if preset is not None:
        if preset not in PRESETS:
            raise BadInput(f"unknown preset {visible(preset)!r} (one of {', '.join(PRESETS)})")
        return preset
    if columns:
        return "csv"
    from gpuq.trace.sniff import sniff

    return sniff(path)


def open_trace(
    path: str,
    *,
    preset: str | None = None,
    columns: Mapping[str, str] | None = None,
    class_from: str | None = None,
    seed: int = 0,
) -> Iterator[TraceJob]:
    """The jobs of the trace at `path`, one at a time, with classes and priorities assigned
    (`gpuq.trace.classes`). NotFound for a missing path; BadInput (exit 2) for an unknown
    preset, a bad column mapping, a path of no known format; TraceError for a malformed line.

    The format is checked before this returns (so a bad option fails at once); the file itself
    is read as the jobs are taken."""
    from gpuq.trace.classes import assign_classes

    fmt = trace_format(path, preset=preset, columns=columns)
    return assign_classes(_jobs(path, fmt, columns, class_from), seed=seed)


def _jobs(path: str, fmt: str, columns: Mapping[str, str] | None, class_from: str | None) -> Iterator[TraceJob]:
    if fmt == "sacct-json":
        from gpuq.backends.slurm.trace import read_sacct_json  # (another part's module; loaded when used)

        return _class_field(read_sacct_json(path), class_from)
    if fmt == "sacct-parsable":
        from gpuq.backends.slurm.trace import read_sacct_parsable

        return _class_field(read_sacct_parsable(path), class_from)
    if fmt == "recording":
        return _class_field(_recording(path), class_from)
    from gpuq.trace.sniff import read_trace

    return read_trace(path, fmt, columns=columns, class_from=class_from)


def _class_field(jobs: Iterator[TraceJob], class_from: str | None) -> Iterator[TraceJob]:
    from gpuq.trace.classes import class_from_field

    return jobs if class_from is None else class_from_field(jobs, class_from)


def _recording(path: str) -> Iterator[TraceJob]:
    """Each recorded cluster's frames followed as a snapshot history (ids prefixed with the
    cluster's name when the recording holds several)."""
    from gpuq.backends.recording import Recording
    from gpuq.trace.snapshots import follow_snapshots

    recording = Recording.open(Path(path), cache_size=2)  # frames are read in order: one kept
    clusters = recording.clusters
    for cluster in clusters:
        frames = (recording.snapshot_at(cluster, i) for i in range(len(recording.times(cluster))))
        prefix = f"{cluster}/" if len(clusters) > 1 else ""
        yield from follow_snapshots(frames, str(recording.path(cluster)), id_prefix=prefix)


# ---------------------------------------------------------------------------- recorded waits


@dataclass(frozen=True, slots=True)
class RecordedWaits:
    """The waits (start − submit, as recorded) of one class or of every job; percentiles are
    nearest-rank (`gpuq.sla.nearest_rank`); None where no job started. Jobs that never started
    count as pending (`never_started`) with censored waits, as the live SLA counts pending jobs:
    up to their end (cancelled while waiting), else up to the trace's end."""

    count: int
    never_started: int
    mean_s: float | None
    p50_s: float | None
    p95_s: float | None
    p99_s: float | None
    max_s: float | None
    target_p95_s: float | None = None
    #: jobs whose wait (censored waits included) exceeded the class's target P95 (None without a target)
    sla_breaches: int | None = None
    #: the P95 (over started jobs, or with the never-started jobs' censored waits) exceeds the target
    breach: bool = False
    #: the P95 with the never-started jobs' censored waits counted
    p95_incl_pending_s: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "never_started": self.never_started,
            "p95_incl_pending_s": self.p95_incl_pending_s,
            "mean_s": self.mean_s,
            "p50_s": self.p50_s,
            "p95_s": self.p95_s,
            "p99_s": self.p99_s,
            "max_s": self.max_s,
            "target_p95_s": self.target_p95_s,
            "sla_breaches": self.sla_breaches,
            "breach": self.breach,
        }


@dataclass(frozen=True, slots=True)
class TraceSla:
    """`gpuq sla --trace`: what really happened, per class and overall."""

    trace: str
    format: str
    jobs: int
    overall: RecordedWaits
    classes: Mapping[str, RecordedWaits]
    #: jobs of the trace not counted, by why (`LEFT_OUT`), as `replay` leaves them out
    left_out: Mapping[str, int] = field(default_factory=dict)
    #: the trace's end (epoch s): its header's `until`, else its latest recorded time
    end: float | None = None

    @property
    def never_started(self) -> int:
        return self.overall.never_started

    def to_dict(self) -> dict[str, Any]:
        """The `gpuq sla --trace -o json` document (stable interface)."""
        return {
            "trace": self.trace,
            "format": self.format,
            "jobs": self.jobs,
            "never_started": self.never_started,
            "left_out": dict(self.left_out),
            "end": None if self.end is None else format_time(self.end),
            "overall": self.overall.to_dict(),
            "classes": {name: waits.to_dict() for name, waits in sorted(self.classes.items())},
        }


def recorded_waits(waits: list[float], pending: list[float], target_p95_s: float | None = None) -> RecordedWaits:
    """The statistics of `waits` and the censored waits of jobs that never started (`pending`;
    both sorted in place) against `target_p95_s`."""
    from gpuq.sla import wait_stats

    stats = wait_stats(waits, pending, target_p95_s)
    mean = math.fsum(waits) / len(waits) if waits else None
    breaches = None
    if target_p95_s is not None:
        pending.sort()
        breaches = len(waits) - bisect.bisect_right(waits, target_p95_s)
        breaches += len(pending) - bisect.bisect_right(pending, target_p95_s)
    return RecordedWaits(stats.count, len(pending), mean, stats.p50_s, stats.p95_s, stats.p99_s, stats.max_s,
                         target_p95_s, breaches, stats.breach, stats.p95_incl_pending_s)  # fmt: skip


#: why `sla --trace` and `replay` leave a trace's job out (the key of `TraceSla.left_out`)
NO_GPU = "no_gpu"


def trace_sla(
    path: str,
    *,
    policy: Policy | None = None,
    preset: str | None = None,
    columns: Mapping[str, str] | None = None,
    class_from: str | None = None,
    seed: int = 0,
) -> TraceSla:
    """Read the trace at `path` once and report its recorded waits per class and overall; a
    class's target P95 is the policy's (else the demo class's of that name, else none)."""
    from gpuq.policy.config import DEFAULT_POLICY
    from gpuq.trace.classes import default_classes

    fmt = trace_format(path, preset=preset, columns=columns)
    waits: dict[str, list[float]] = defaultdict(list)
    # never started: (submit, end or None) per class, censored once the trace's end is known
    never: dict[str, list[tuple[float, float | None]]] = defaultdict(list)
    jobs = 0
    no_gpu = 0
    latest = -math.inf
    for job in open_trace(path, preset=preset, columns=columns, class_from=class_from, seed=seed):
        for t in (job.submit_time, job.start_time, job.end_time):
            if t is not None and t > latest:
                latest = t
        if job.gpus <= 0:  # (as `replay` leaves them out: the SLA is about GPU jobs)
            no_gpu += 1
            continue
        jobs += 1
        name = job.job_class or ""
        wait = job.recorded_wait_s
        if wait is None:
            never[name].append((job.submit_time, job.end_time))
        else:
            waits[name].append(wait)
    end = trace_end(path, fmt)
    if end is None and latest > -math.inf:
        end = latest
    chosen = policy or DEFAULT_POLICY
    bases = {c.name: c for c in default_classes()}
    classes: dict[str, RecordedWaits] = {}
    everything: list[float] = []
    all_pending: list[float] = []
    for name in sorted(set(waits) | set(never)):
        target = chosen.resolve_class(bases.get(name), name).target_p95_s
        started = waits.get(name, [])
        pending = [max(0.0, (until if until is not None else end or submit) - submit)
                   for submit, until in never.get(name, ())]  # fmt: skip
        everything.extend(started)
        all_pending.extend(pending)
        classes[name] = recorded_waits(started, pending, target)
    overall = recorded_waits(everything, all_pending)
    left_out = {NO_GPU: no_gpu} if no_gpu else {}
    return TraceSla(path, fmt, jobs, overall, classes, left_out, end)


def trace_end(path: str, fmt: str) -> float | None:
    """When the trace ends, as its header says (a gpuq job log's `until`); None otherwise."""
    header = _joblog_header(path, fmt)
    until = None if header is None else header.get("until")
    if not isinstance(until, str):
        return None
    from gpuq.timefmt import parse_time

    try:
        return parse_time(until)
    except ValueError:
        return None


def trace_shape(path: str, fmt: str) -> str | None:
    """The cluster shape (NODESxGPUS) a gpuq job log's header records (`gpuq trace export`
    writes it), else None."""
    header = _joblog_header(path, fmt)
    shape = None if header is None else header.get("cluster_shape")
    return shape if isinstance(shape, str) and shape else None


def _joblog_header(path: str, fmt: str) -> dict[str, Any] | None:
    if fmt != "jobs" or os.path.isdir(path):
        return None
    from gpuq.trace.joblog import read_header

    return read_header(path)
