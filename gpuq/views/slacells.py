"""The console's SLA view as cells: per class the percentiles and verdict of `gpuq.views.sla`, the
pending jobs' oldest wait, a histogram of waits, and a trend of P95 over the session.

The percentiles are `gpuq.sla`'s (nearest rank, pending jobs counted as censored waits); the
waits here are the same ones, per class, so that the histogram and the oldest pending wait agree
with the table (`class_waits` counts what `sla_report` counts).
"""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

from gpuq.model import JobState, Snapshot
from gpuq.sla import WaitStats
from gpuq.timefmt import format_duration
from gpuq.views.pacing import Pause, no_pause, paced
from gpuq.views.sla import SlaRow

__all__ = [
    "ALL",
    "BARS",
    "HISTORY_POINTS",
    "LADDER",
    "TREND_POINTS",
    "VERDICT_TEXT",
    "VERDICT_TONE",
    "ClassWaits",
    "HistogramBin",
    "P95History",
    "class_waits",
    "histogram_edges",
    "judged_p95",
    "sla_cells",
    "sla_tones",
    "sparkline",
    "wait_histogram",
]

#: the row of every job (`gpuq.views.sla.sla_view` names it so)
ALL = "(all)"
VERDICT_TEXT = {"breach": "BREACH", "at_risk": "at risk", "ok": "ok", "": "-"}
VERDICT_TONE: dict[str, str | None] = {"breach": "breach", "at_risk": "risk", "ok": "ok", "": None}
#: points of P95 kept per class and cluster (a refresh every 2 s: the last ten minutes)
HISTORY_POINTS = 300
#: points of the trend in the table's TREND column (the P95 the verdict is on)
TREND_POINTS = 8
BARS = "▁▂▃▄▅▆▇█"
#: the histogram's bin edges (seconds): steps an operator reads at a glance
LADDER = (0.0, 60.0, 300.0, 900.0, 1800.0, 3600.0, 7200.0, 14400.0, 28800.0, 86400.0, 172800.0, 604800.0)


def judged_p95(stats: WaitStats) -> float | None:
    """The P95 a class's SLA verdict is judged on: the larger of the started jobs' P95 and the
    P95 with pending jobs counted (`gpuq.sla`: pending jobs that never start must show)."""
    values = [v for v in (stats.p95_s, stats.p95_incl_pending_s) if v is not None]
    return max(values) if values else None


@dataclass(frozen=True, slots=True)
class ClassWaits:
    """A class's waits (seconds, ascending): of jobs that started, and of jobs still pending."""

    started: tuple[float, ...] = ()
    pending: tuple[float, ...] = ()

    @property
    def oldest_pending_s(self) -> float | None:
        return self.pending[-1] if self.pending else None

    @property
    def count(self) -> int:
        return len(self.started) + len(self.pending)


def class_waits(snapshot: Snapshot, now: float | None = None, pause: Pause = no_pause) -> dict[str, ClassWaits]:
    """Every class's waits at `now` (the snapshot's time when None), and every job's under
    `ALL`: the jobs and waits `gpuq.sla.sla_report` counts without a window. `pause` is called
    every `STEP` jobs and between the sorts (gpuq/views/pacing.py)."""
    at = snapshot.now if now is None else now
    started: dict[str, list[float]] = {}
    pending: dict[str, list[float]] = {}
    for job in paced(snapshot.jobs, pause):
        if job.start_time is None and job.state is not JobState.PENDING:
            continue
        wait = job.wait_s(at)
        assert wait is not None
        (started if job.start_time is not None else pending).setdefault(job.job_class, []).append(wait)
    names = set(started) | set(pending) | {c.name for c in snapshot.classes}
    out: dict[str, ClassWaits] = {}
    for n in sorted(names):
        pause()
        out[n] = ClassWaits(tuple(sorted(started.get(n, ()))), tuple(sorted(pending.get(n, ()))))
    pause()
    every_started = tuple(sorted(w for s in started.values() for w in s))
    pause()
    out[ALL] = ClassWaits(every_started, tuple(sorted(w for p in pending.values() for w in p)))
    return out


@dataclass(frozen=True, slots=True)
class HistogramBin:
    #: waits from `low` (included) to `high` (excluded; None: no upper edge)
    low: float
    high: float | None
    started: int
    pending: int

    @property
    def count(self) -> int:
        return self.started + self.pending

    @property
    def label(self) -> str:
        """`5m–15m`, or `≥7d00h` for the last, open bin."""
        if self.high is None:
            return f"≥{format_duration(self.low)}"
        return f"{format_duration(self.low)}–{format_duration(self.high)}"


def histogram_edges(longest: float, bins: int = 8) -> tuple[float, ...]:
    """Bin edges from `LADDER` up to the first past `longest` (the last bin is open when
    `longest` is past the ladder's end): at most `bins` bins, every other edge dropped until
    they fit. Returns the lower edges and, last, the upper edge (or none when open)."""
    if bins < 1:
        raise ValueError("a histogram needs a bin")
    lows = [e for e in LADDER if e <= longest] or [0.0]
    upper = next((e for e in LADDER if e > longest), None)
    while len(lows) > bins:
        lows = lows[::2]
    return (*lows, upper) if upper is not None else tuple(lows)


def wait_histogram(waits: ClassWaits, bins: int = 8) -> tuple[HistogramBin, ...]:
    """The class's waits in `histogram_edges` bins, started and pending counted apart: the
    counts sum to `waits.count`."""
    longest = max(waits.started[-1] if waits.started else 0.0, waits.pending[-1] if waits.pending else 0.0)
    edges = histogram_edges(longest, bins)
    open_end = edges[-1] <= longest  # no upper edge: the last bin takes every longer wait
    lows = edges if open_end else edges[:-1]
    started = [0] * len(lows)
    pending = [0] * len(lows)
    for values, counts in ((waits.started, started), (waits.pending, pending)):
        for w in values:
            counts[max(0, bisect.bisect_right(lows, w) - 1)] += 1
    highs: list[float | None] = [*lows[1:], None if open_end else edges[-1]]
    return tuple(HistogramBin(lo, hi, s, p) for lo, hi, s, p in zip(lows, highs, started, pending, strict=True))


def sparkline(values: Sequence[float | None], width: int) -> str:
    """The last `width` values as block characters from 0 (`▁`) to their largest (`█`); a
    missing value (no job had started) is a space. One character per value, newest last."""
    shown = list(values[-width:]) if width > 0 else []
    known = [v for v in shown if v is not None]
    top = max(known, default=0.0)
    if top <= 0:
        return "".join(" " if v is None else BARS[0] for v in shown)
    last = len(BARS) - 1
    return "".join(" " if v is None else BARS[min(last, int(v / top * last + 0.5))] for v in shown)


@dataclass
class P95History:
    """P95 per key (cluster, class) over the session: `(cluster time, value)` points, the last
    `limit` kept. A point no later than the key's last is ignored (a recompute of the same
    snapshot, or a worker's answer that arrived late)."""

    limit: int = HISTORY_POINTS
    _points: dict[Hashable, deque[tuple[float, float | None]]] = field(default_factory=dict)

    def add(self, key: Hashable, at: float, value: float | None) -> bool:
        points = self._points.get(key)
        if points is None:
            points = self._points[key] = deque(maxlen=self.limit)
        if points and at <= points[-1][0]:
            return False
        points.append((at, value))
        return True

    def points(self, key: Hashable) -> tuple[tuple[float, float | None], ...]:
        return tuple(self._points.get(key, ()))

    def values(self, key: Hashable) -> list[float | None]:
        return [v for _, v in self._points.get(key, ())]


def sla_cells(
    row: SlaRow, waits: ClassWaits | None, trend: Sequence[float | None], cluster: str = ""
) -> tuple[str, ...]:
    """The cells of `gpuq.views.columns.CONSOLE_SLA` for one class (`trend`: its P95 history)."""
    s = row.stats
    oldest = waits.oldest_pending_s if waits is not None else None
    d = format_duration
    return (
        row.name, cluster, str(s.count), str(s.pending), d(oldest), d(s.p50_s), d(s.p95_s), d(s.p99_s), d(s.max_s),
        d(s.p95_incl_pending_s), d(s.target_p95_s), VERDICT_TEXT[row.verdict], sparkline(trend, TREND_POINTS),
    )  # fmt: skip


def sla_tones(row: SlaRow) -> tuple[str | None, ...]:
    tone = VERDICT_TONE[row.verdict]
    pending = "pending" if row.stats.pending else None
    return (None, None, None, pending, pending, None, None, None, None, tone, None, tone, tone)
