"""A cluster's job history as a trace (`gpuq trace export`): the window, the backend's export,
and the lines to write, streaming.

The default format is gpuq's job log (`gpuq.jobs/v1`, `gpuq.trace.joblog`): a header naming
the cluster, the backend and the window, then one job per line. A backend with an accounting
format of its own (`Capabilities.history_format`: Slurm's "sacct") can write that instead, as
its scheduler printed it. The backend's command or request runs before `export_history`
returns, so a cluster that cannot be reached fails before anything is written.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from gpuq.backends.base import Backend
from gpuq.backends.registry import available_backends, backend_class
from gpuq.errors import BadInput, GpuqError, Refused
from gpuq.service.cluster import Cluster
from gpuq.textsafe import visible
from gpuq.timefmt import LONGEST_S, format_time, parse_duration
from gpuq.trace.joblog import header_line, job_line
from gpuq.trace.record import TraceJob

__all__ = ["GPUQ_FORMAT", "HistoryExport", "export_history", "history_backends", "parse_when", "window_now"]

#: the name of gpuq's own format for `export_history`'s `fmt`
GPUQ_FORMAT: Final = "gpuq"


def parse_when(text: str, now: float, flag: str) -> float:
    """Epoch seconds from a `--since`/`--until` value: ``now``, a duration back from `now`
    (``30d``, ``12h``, ``1h30m``) or an ISO 8601 time (``2026-11-01``, ``2026-11-01T08:00``,
    with ``Z`` or an offset; without one it is local time, as Slurm's own times are). BadInput
    naming `flag` otherwise."""
    value = text.strip()
    if value.lower() == "now":
        return now
    if value[:1].isdigit() and not _looks_like_date(value):
        try:
            back = parse_duration(value, maximum=max(0.0, now))
        except ValueError as exc:
            raise BadInput(f"{flag} {visible(text)!r}: {exc}") from None
        return now - back
    try:
        moment = datetime.fromisoformat(value)
        epoch = moment.timestamp()
    except (ValueError, OverflowError, OSError):
        raise BadInput(
            f"{flag} {visible(text)!r}: not a time (give a duration back from now such as 30d or 12h, "
            "an ISO time such as 2026-11-01T08:00Z, or 'now')"
        ) from None
    if not 0 <= epoch <= LONGEST_S or math.isnan(epoch):
        raise BadInput(f"{flag} {visible(text)!r}: outside 1970..9999")
    return epoch


def window_now(cluster: Cluster, wall: float) -> float:
    """What ``now`` means for an export's window: the cluster's own clock where it keeps one
    (the demo's runs ahead of the wall clock), else the wall clock `wall`."""
    own = cluster.backend.cluster_time()
    return wall if own is None else own


def _looks_like_date(value: str) -> bool:
    """``2026-11-01…`` (a date), not ``30d`` or ``90``."""
    return len(value) >= 10 and value[4] == "-" and value[:4].isdigit()


def history_backends() -> list[str]:
    """The backends that export their history (for the error a backend without it gives)."""
    names = []
    for name in available_backends():
        try:
            cls = backend_class(name)
        except GpuqError:
            continue
        if cls.export_history is not Backend.export_history:
            names.append(name)
    return names


@dataclass(slots=True)
class HistoryExport:
    """An export under way: what it covers, and its lines (header first, each with its line
    end) to write as they come; `jobs` counts the jobs (or, for a raw format, the lines after
    the header) written so far. Close `lines` when stopping before its end (`close`)."""

    cluster: str
    backend: str
    since: float
    until: float
    format: str
    lines: Iterator[str] = field(default_factory=lambda: iter(()))
    jobs: int = 0
    #: NODESxGPUS of the cluster's GPU nodes when they all have as many GPUs ("" otherwise): a
    #: replay of the trace takes it as its `--cluster-shape`
    shape: str = ""

    def close(self) -> None:
        """Stop the export (the backend's command with it); nothing happens once it has ended."""
        _close(self.lines)

    @property
    def meta(self) -> dict[str, Any]:
        """The header's fields besides the format's name."""
        meta = {
            "cluster": self.cluster,
            "backend": self.backend,
            "since": format_time(self.since),
            "until": format_time(self.until),
        }
        if self.shape:
            meta["cluster_shape"] = self.shape
        return meta


def export_history(cluster: Cluster, *, since: float, until: float, fmt: str = GPUQ_FORMAT) -> HistoryExport:
    """Start exporting `cluster`'s jobs over ``[since, until]`` (epoch s) in `fmt` (`GPUQ_FORMAT`
    or the backend's `history_format`). The backend is asked before this returns: Unreachable,
    PermissionDenied and a backend without history (Refused, naming those with it) come now."""
    if not since < until:
        raise BadInput(f"--since {format_time(since)} is not before --until {format_time(until)}")
    backend = cluster.backend
    caps = cluster.capabilities
    if not caps.history:
        others = ", ".join(history_backends()) or "none here"
        raise Refused(f"backend {backend.name} keeps no job history to export (backends that do: {others})")
    if fmt not in (GPUQ_FORMAT, caps.history_format or GPUQ_FORMAT):
        own = f" or {caps.history_format}" if caps.history_format else ""
        raise BadInput(f"--format {visible(fmt)}: backend {backend.name} exports {GPUQ_FORMAT}{own}")
    export = HistoryExport(cluster.name, backend.name, since, until, fmt)
    if fmt == GPUQ_FORMAT:
        export.shape = _shape(cluster)
        jobs = backend.export_history(since, until)
        first = next(jobs, None)  # (runs the backend's command: its errors come before any output)
        export.cluster = cluster.name  # (a backend may learn its name while it reads)
        export.lines = _job_lines(export, jobs if first is None else _prepend(first, jobs))
    else:
        raw = backend.export_history_raw(since, until)
        header = next(raw, None)
        export.cluster = cluster.name
        export.lines = _raw_lines(export, header, raw)
    return export


def _shape(cluster: Cluster) -> str:
    """`HistoryExport.shape` from a look at the cluster's nodes ("" when they differ, or when
    the nodes cannot be read: the export says what it can without them)."""
    try:
        nodes = cluster.backend.nodes()
    except GpuqError:
        return ""
    counts = {node.gpus for node in nodes if node.gpus > 0}
    if len(counts) != 1:
        return ""
    return f"{sum(1 for node in nodes if node.gpus > 0)}x{counts.pop()}"


def _prepend(first: TraceJob, rest: Iterator[TraceJob]) -> Iterator[TraceJob]:
    try:
        yield first
        yield from rest
    finally:
        _close(rest)


def _job_lines(export: HistoryExport, jobs: Iterator[TraceJob]) -> Iterator[str]:
    try:
        yield header_line(export.meta)
        for job in jobs:
            yield job_line(job)
            export.jobs += 1
    finally:
        _close(jobs)


def _raw_lines(export: HistoryExport, header: str | None, lines: Iterator[str]) -> Iterator[str]:
    try:
        if header is not None:
            yield header + "\n"
        for line in lines:
            yield line + "\n"
            export.jobs += 1
    finally:
        _close(lines)


def _close(source: Iterator[Any]) -> None:
    """Stop the backend's read now (a sacct still printing is killed), not when the collector
    gets to it: a writer that stopped early (a closed pipe) holds it in its traceback."""
    close = getattr(source, "close", None)
    if close is not None:
        close()
