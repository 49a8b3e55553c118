"""What `gpuq replay` shows: one replay (a summary and its waits per class), or `--compare`'s
strategies side by side (one row each); and its JSON and CSV documents.

Columns are declared as in `gpuq.views.columns` (kind and importance): at a narrow width the
least important drop first; the strategy, the class and the headline figures always stay.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from gpuq.service.replay import ClassStats, ReplayReport, ReplayResult
from gpuq.service.tuning import SHAPE_FROM_HEADER
from gpuq.textsafe import visible
from gpuq.timefmt import format_duration
from gpuq.views.columns import Column, Kind, TableSpec

__all__ = [
    "CSV_FIELDS",
    "REPLAY_CLASSES",
    "REPLAY_COMPARE",
    "REPLAY_SUMMARY",
    "ReplayView",
    "replay_csv",
    "replay_json",
    "replay_view",
    "replay_warnings",
    "thrash_warning",
]

ID, NUMBER, PLAIN, TEXT = Kind.ID, Kind.NUMBER, Kind.PLAIN, Kind.TEXT
C = Column

#: one replay's figures, one per line
REPLAY_SUMMARY: Final = TableSpec("replay-summary", (C("FIELD", PLAIN), C("VALUE", TEXT)), header=False)
#: one replay's waits per class ("(all)" first)
REPLAY_CLASSES: Final = TableSpec("replay-classes", (
    C("CLASS", ID), C("JOBS", NUMBER, 5), C("MEAN", NUMBER, 3), C("P50", NUMBER, 4), C("P95", NUMBER),
    C("P99", NUMBER, 2), C("MAX", NUMBER, 1), C("TARGET", NUMBER, 6), C("BREACHES", NUMBER),
))  # fmt: skip
#: `--compare`: one row per strategy
REPLAY_COMPARE: Final = TableSpec("replay-compare", (
    C("STRATEGY", ID), C("UTIL", NUMBER, 6), C("USEFUL", NUMBER), C("MEAN WAIT", NUMBER, 3), C("P95 WAIT", NUMBER),
    C("P99 WAIT", NUMBER, 8), C("MAX WAIT", NUMBER, 5), C("PREEMPT", NUMBER), C("PER JOB", NUMBER, 9),
    C("MAX/DAY", NUMBER, 7), C("LOST GPU-H", NUMBER), C("CKPT GPU-H", NUMBER, 4), C("BREACHES", NUMBER, 2),
    C("MAKESPAN", NUMBER, 10), C("CANCELLED", NUMBER, 1),
))  # fmt: skip

#: `-o csv`: after `strategy` and `class`, the class fields (every row), then the replay's own
#: (on the `all` row of each strategy only)
_CLASS_FIELDS: Final = ("jobs", "mean_s", "p50_s", "p95_s", "p99_s", "max_s", "sla_breaches", "target_p95_s")
_RESULT_FIELDS: Final = (
    "gpu_hours", "utilisation", "useful_utilisation", "preemptions", "preemptions_per_job",
    "preemptions_per_gpu_hour", "max_preemptions_per_job_day", "lost_gpu_hours", "checkpoint_overhead_gpu_hours",
    "makespan_s", "suggested_checkpoint_interval_s", "cancelled", "unfinished", "events", "sim_wall_s",
)  # fmt: skip
CSV_FIELDS: Final = ("strategy", "class", *_CLASS_FIELDS, *_RESULT_FIELDS)
_ALL: Final = "(all)"


def _pct(fraction: float) -> str:
    return f"{100 * fraction:.1f}%"


def _hours(gpu_hours: float) -> str:
    return f"{gpu_hours:,.1f}"


def _breaches(result: ReplayResult) -> int:
    return sum(c.sla_breaches for c in result.classes.values())


@dataclass(frozen=True, slots=True)
class ReplayView:
    title: str
    #: one replay: FIELD/VALUE rows; `--compare`: empty
    summary: tuple[tuple[str, str], ...]
    #: one replay: its classes; `--compare`: empty
    classes: tuple[tuple[str, ...], ...]
    #: `--compare`: one row per strategy; one replay: empty
    compare: tuple[tuple[str, ...], ...]


def _summary(r: ReplayResult) -> tuple[tuple[str, str], ...]:
    rows = [
        ("strategy", r.strategy),
        ("jobs", f"{r.jobs:,} ({r.gpu_hours:,.1f} GPU-hours)" + _left_out(r)),
        ("utilisation", f"{_pct(r.utilisation)} (useful {_pct(r.useful_utilisation)})"),
        ("wait", f"mean {format_duration(r.wait.mean_s)}, P50 {format_duration(r.wait.p50_s)}, "
                 f"P95 {format_duration(r.wait.p95_s)}, P99 {format_duration(r.wait.p99_s)}, "
                 f"longest {format_duration(r.wait.max_s)}"),
        ("SLA breaches", f"{_breaches(r):,} jobs waited past their class's target P95"),
        ("preemptions", f"{r.preemptions:,} ({r.preemptions_per_job:.3f} per job, {r.preemptions_per_gpu_hour:.3f} "
                        f"per GPU-hour; at most {r.max_preemptions_per_job_day} of one job in a day)"),
        ("lost work", f"{_hours(r.lost_gpu_hours)} GPU-hours"),
        ("checkpoint overhead", f"{_hours(r.checkpoint_overhead_gpu_hours)} GPU-hours"),
        ("suggested interval", "-" if r.suggested_checkpoint_interval_s is None
         else f"{format_duration(r.suggested_checkpoint_interval_s)} (Young/Daly: √(2 × save cost × mean time "
              f"between preemptions))"),
        ("makespan", format_duration(r.makespan_s)),
    ]  # fmt: skip
    if r.thrash is not None and r.thrash.flagged:
        rows.append(("thrash guard", r.thrash.summary()))
    if r.cancelled:
        rows.append(("cancelled", f"{r.cancelled:,} jobs killed by a preemption (their work lost)"))
    if r.unfinished:
        rows.append(("unfinished", f"{r.unfinished:,} jobs still queued or running at the replay's horizon"))
    rows.append(("simulation", f"{r.events:,} events in {r.sim_wall_s:.2f}s"))
    return tuple(rows)


def _left_out(r: ReplayResult) -> str:
    """The trace's jobs the replay left out, and why."""
    why = []
    if r.skipped:
        why.append(f"{r.skipped:,} without GPUs")
    if r.never_started:
        why.append(f"{r.never_started:,} that never started (run time unknown)")
    return f"; left out: {', '.join(why)}" if why else ""


def _class_row(name: str, stats: ClassStats) -> tuple[str, ...]:
    w = stats.wait
    return (visible(name), f"{stats.jobs:,}", format_duration(w.mean_s), format_duration(w.p50_s),
            format_duration(w.p95_s), format_duration(w.p99_s), format_duration(w.max_s),
            format_duration(stats.target_p95_s), f"{stats.sla_breaches:,}")  # fmt: skip


def _compare_row(r: ReplayResult) -> tuple[str, ...]:
    w = r.wait
    return (r.strategy, _pct(r.utilisation), _pct(r.useful_utilisation), format_duration(w.mean_s),
            format_duration(w.p95_s), format_duration(w.p99_s), format_duration(w.max_s), f"{r.preemptions:,}",
            f"{r.preemptions_per_job:.3f}", str(r.max_preemptions_per_job_day), _hours(r.lost_gpu_hours),
            _hours(r.checkpoint_overhead_gpu_hours), f"{_breaches(r):,}", format_duration(r.makespan_s),
            f"{r.cancelled:,}")  # fmt: skip


def shape_note(source: str) -> str:
    """Where a replay's cluster shape came from, when it is not what the user gave or the
    default: the trace's header (`cluster_shape`)."""
    return f" (shape from {source})" if source == SHAPE_FROM_HEADER else ""


def replay_view(report: ReplayReport) -> ReplayView:
    first = report.results[0]
    base = report.base
    title = (f"{visible(report.trace)}: {first.jobs:,} jobs replayed on {base.nodes}x{base.gpus_per_node} GPUs"
             f"{shape_note(report.shape_source)}, policy {visible(report.policy_source)}")  # fmt: skip
    if report.compare:
        return ReplayView(title + ", strategies compared", (), (), tuple(_compare_row(r) for r in report.results))
    rows = [_class_row(_ALL, ClassStats(first.wait, first.jobs, _breaches(first)))]
    rows += [_class_row(name, stats) for name, stats in first.classes.items()]
    return ReplayView(title, _summary(first), tuple(rows), ())


def thrash_warning(label: str, result: ReplayResult) -> str | None:
    """The warning line for a replay whose preemptions thrash (`gpuq.policy.thrash`), else None;
    `label` names the replay (a strategy, a tuning point)."""
    thrash = result.thrash
    if thrash is None or not thrash.flagged:
        return None
    return (f"{label}: {thrash.summary()}; {result.preemptions_per_job:.2f} preemptions per job — raise Δ, "
            "set min_runtime and max_preemptions_per_day, or checkpoint more often")


def replay_warnings(report: ReplayReport) -> list[str]:
    """A warning line per replay of the report that thrashes."""
    lines = (thrash_warning(f"strategy {r.strategy}", r) for r in report.results)
    return [line for line in lines if line is not None]


def replay_json(report: ReplayReport) -> dict[str, Any]:
    """One replay: its `ReplayResult.to_dict()` (the issue's keys, then the model's others).
    `--compare`: ``{"strategies": {"<strategy>": {...the same document...}}}``."""
    if not report.compare:
        return report.results[0].to_dict()
    return {"strategies": {r.strategy: r.to_dict() for r in report.results}}


def _class_cells(stats: ClassStats) -> list[Any]:
    w = stats.wait
    return [stats.jobs, w.mean_s, w.p50_s, w.p95_s, w.p99_s, w.max_s, stats.sla_breaches, stats.target_p95_s]


def replay_csv(results: Sequence[ReplayResult]) -> tuple[tuple[str, ...], list[list[Any]]]:
    """(header, rows): per strategy an ``all`` row (its waits and its own figures), then one row
    per class (its waits; the replay's own columns empty)."""
    rows: list[list[Any]] = []
    for r in results:
        overall = ClassStats(r.wait, r.jobs, _breaches(r))
        own = [getattr(r, name) for name in _RESULT_FIELDS]
        rows.append([r.strategy, "all", *_class_cells(overall), *own])
        for name, stats in r.classes.items():
            rows.append([r.strategy, name, *_class_cells(stats), *([None] * len(_RESULT_FIELDS))])
    return CSV_FIELDS, rows
