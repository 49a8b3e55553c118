"""What `gpuq tune` shows: the ranking table, its JSON and CSV documents, and small text charts
(the trade-off scatter, the best point's utilisation over time, its waits by percentile).

The table's columns are the grid's own keys between fixed ones, so its `TableSpec` is made per
run (`tune_spec`), with importances as in `gpuq.views.columns`: the rank, the point's values,
the score and the Pareto mark are always shown; the other figures go first when space is short.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gpuq.service.tuning import TuneReport
from gpuq.textsafe import visible
from gpuq.timefmt import format_duration
from gpuq.views.columns import Column, Kind, TableSpec
from gpuq.views.replay import shape_note, thrash_warning

__all__ = [
    "CSV_FIELDS",
    "TuneView",
    "percentile_lines",
    "scatter_lines",
    "sparkline",
    "tune_csv",
    "tune_json",
    "tune_spec",
    "tune_view",
    "tune_warnings",
    "utilisation_line",
]

_BLOCKS = "▁▂▃▄▅▆▇█"
#: scatter marks, strongest first where points share a cell
BEST, FRONT, OTHER = "★", "●", "·"

#: the figures of each point in CSV and JSON, after the point's own values
CSV_FIELDS = (
    "utilisation", "useful_utilisation", "wait_mean_s", "wait_p95_s", "preemptions_per_job", "lost_gpu_hours",
    "t_wait", "f_preempt", "score", "pareto",
)  # fmt: skip


def _header(key: str) -> str:
    head, dot, rest = key.partition(".")
    return head.upper() + dot + visible(rest)


def tune_spec(keys: Sequence[str]) -> TableSpec:
    """The ranking table for a grid of `keys`."""
    columns = [Column("RANK", Kind.ID), Column("POINT", Kind.ID, 7)]
    columns += [Column(_header(k), Kind.PLAIN if k == "strategy" else Kind.NUMBER) for k in keys]
    columns += [
        Column("U", Kind.NUMBER, 6), Column("USEFUL U", Kind.NUMBER, 1), Column("MEAN WAIT", Kind.NUMBER, 2),
        Column("P95 WAIT", Kind.NUMBER, 4), Column("PREEMPT/JOB", Kind.NUMBER, 3), Column("LOST GPU-H", Kind.NUMBER, 5),
        Column("SCORE", Kind.NUMBER), Column("PARETO", Kind.PLAIN),
    ]  # fmt: skip
    return TableSpec("tune", tuple(columns))


def _percent(fraction: float) -> str:
    return f"{100 * fraction:.1f}%"


@dataclass(frozen=True, slots=True)
class TuneView:
    spec: TableSpec
    #: best first, as the table's cells
    rows: tuple[tuple[str, ...], ...]
    title: str
    #: one line on the best point and the run
    summary: str


def tune_view(report: TuneReport) -> TuneView:
    ranking = report.ranking
    axes = report.grid.axes
    rows = []
    for row in ranking.rows:
        r = row.result
        values = tuple(axes[i].shown(v) for i, (_, v) in enumerate(row.point.values))
        rows.append((
            str(row.rank), row.point.id, *values, _percent(r.utilisation), _percent(r.useful_utilisation),
            format_duration(r.wait.mean_s), format_duration(r.wait.p95_s), f"{r.preemptions_per_job:.3f}",
            f"{r.lost_gpu_hours:.1f}", f"{row.score:.4f}", "*" if row.pareto else "",
        ))  # fmt: skip
    front = sum(1 for row in ranking.rows if row.pareto)
    best = ranking.best
    w = ranking.weights
    title = (f"{len(rows)} points on {visible(report.trace)}, {report.base.nodes}x{report.base.gpus_per_node} GPUs"
             f"{shape_note(report.shape_source)}, "
             f"score = {w.alpha:g}·U − {w.beta:g}·T_wait − {w.gamma:g}·f_preempt")  # fmt: skip
    summary = (f"best {best.point.id}: {visible(best.point.label)} (score {best.score:.4f}); {front} on the Pareto "
               f"front; replayed in {report.wall_s:.1f}s on {report.ran_on}")  # fmt: skip
    return TuneView(tune_spec(report.grid.keys), tuple(rows), title, summary)


def tune_warnings(report: TuneReport, named: int = 8) -> list[str]:
    """When points thrash (`gpuq.policy.thrash`): a line naming them (the first `named`, by rank),
    and the best-ranked one's warning with its worst jobs; else nothing."""
    thrashing = [row for row in report.ranking.rows if row.result.thrash is not None and row.result.thrash.flagged]
    if not thrashing:
        return []
    ids = ", ".join(row.point.id for row in thrashing[:named]) + (", …" if len(thrashing) > named else "")
    first = thrashing[0]
    lines = [f"{len(thrashing)} of {len(report.ranking.rows)} points thrash ({ids}); each point's result.thrash "
             "in -o json has the figures"]  # fmt: skip
    line = thrash_warning(f"{first.point.id} ({visible(first.point.label)}, rank {first.rank})", first.result)
    if line is not None:
        lines.append(line)
    return lines


def _point_doc(report: TuneReport, index: int) -> dict[str, Any]:
    row = report.ranking.rows[index]
    r = row.result
    return {
        "rank": row.rank,
        "id": row.point.id,
        "params": {k: (v.value if hasattr(v, "value") else v) for k, v in row.point.values},
        "score": row.score,
        "pareto": row.pareto,
        "u": row.u,
        "t_wait": row.t_wait,
        "f_preempt": row.f_preempt,
        "result": r.to_dict(),
    }


def tune_json(report: TuneReport, *, policy_file: str | None = None, charts: Sequence[str] = ()) -> dict[str, Any]:
    """``{"trace", "cluster_shape", "weights", "norms", "best", "points": [{"rank", "id", "params",
    "score", "pareto", "u", "t_wait", "f_preempt", "result": {...replay's -o json...}}], "wall_s",
    "ran_on", "policy_file", "charts"}``, best first."""
    ranking = report.ranking
    return {
        "trace": report.trace,
        "cluster_shape": f"{report.base.nodes}x{report.base.gpus_per_node}",
        "weights": {"alpha": ranking.weights.alpha, "beta": ranking.weights.beta, "gamma": ranking.weights.gamma},
        "norms": {"wait_s": ranking.norms.wait_s, "preemptions_per_job": ranking.norms.preemptions_per_job},
        "best": ranking.best.point.id,
        "points": [_point_doc(report, i) for i in range(len(ranking.rows))],
        "wall_s": report.wall_s,
        "ran_on": report.ran_on,
        "work_dir": report.work_dir,
        "policy_file": policy_file,
        "charts": list(charts),
    }


def tune_csv(report: TuneReport) -> tuple[tuple[str, ...], list[list[Any]]]:
    """(header, rows): rank, id, the grid's keys, then `CSV_FIELDS`; best first."""
    header = ("rank", "id", *report.grid.keys, *CSV_FIELDS)
    rows = []
    for row in report.ranking.rows:
        r = row.result
        values = [v.value if hasattr(v, "value") else v for _, v in row.point.values]
        rows.append([row.rank, row.point.id, *values, r.utilisation, r.useful_utilisation, r.wait.mean_s,
                     r.wait.p95_s, r.preemptions_per_job, r.lost_gpu_hours, row.t_wait, row.f_preempt, row.score,
                     "yes" if row.pareto else "no"])  # fmt: skip
    return header, rows


# -- text charts


def sparkline(values: Sequence[float], width: int, top: float | None = None) -> str:
    """`values` resampled to at most `width` cells (each the mean of its share), drawn with
    block characters from 0 to `top` (default: the largest value)."""
    if not values or width < 1:
        return ""
    cells = min(width, len(values))
    means = []
    for c in range(cells):
        share = values[c * len(values) // cells : max((c + 1) * len(values) // cells, c * len(values) // cells + 1)]
        means.append(sum(share) / len(share))
    high = max(means) if top is None else top
    if high <= 0:
        return _BLOCKS[0] * cells
    return "".join(_BLOCKS[min(len(_BLOCKS) - 1, max(0, round(m / high * (len(_BLOCKS) - 1))))] for m in means)


def _cell(value: float, low: float, high: float, cells: int) -> int:
    """The cell of `value` on an axis of `cells` from `low` to `high` (the middle when flat)."""
    if high <= low:
        return cells // 2
    return min(cells - 1, max(0, round((value - low) / (high - low) * (cells - 1))))


def scatter_lines(report: TuneReport, width: int = 48, height: int = 10) -> list[str]:
    """The trade-off: useful utilisation (up) against mean wait (right), one mark per point:
    ★ the best, ● on the Pareto front, · dominated."""
    rows = report.ranking.rows
    waits = [r.result.wait.mean_s for r in rows]
    us = [r.u for r in rows]
    w_low, w_high = min(waits), max(waits)
    u_low, u_high = min(us), max(us)
    grid = [[" "] * width for _ in range(height)]
    strength = {" ": 0, OTHER: 1, FRONT: 2, BEST: 3}
    for row in rows:
        x = _cell(row.result.wait.mean_s, w_low, w_high, width)
        y = _cell(row.u, u_low, u_high, height)
        mark = BEST if row.rank == 1 else FRONT if row.pareto else OTHER
        cell = grid[height - 1 - y]
        if strength[mark] > strength[cell[x]]:
            cell[x] = mark
    top_label, low_label = _percent(u_high), _percent(u_low)
    pad = max(len(top_label), len(low_label))
    lines = []
    for i, cells in enumerate(grid):
        label = top_label if i == 0 else low_label if i == height - 1 else ""
        lines.append(f"{label:>{pad}} │{''.join(cells)}")
    lines.append(" " * pad + " └" + "─" * width)
    left, right = format_duration(w_low), format_duration(w_high)
    lines.append(" " * pad + "  " + left + right.rjust(max(1, width - len(left))))
    lines.append(" " * pad + f"  useful utilisation ↑ against mean wait →   {BEST} best  {FRONT} Pareto  {OTHER} other")
    return lines


def percentile_lines(report: TuneReport, width: int = 40) -> list[str]:
    """The best point's waits by percentile (0 … 100), one sparkline per class, all on one scale."""
    best = report.ranking.best.result
    series = best.wait_percentiles
    if not series:
        return []
    top = max((max(v) for v in series.values() if v), default=0.0)
    names = sorted(series, key=lambda n: (n != "all", n))
    pad = max(len(visible(n)) for n in names)
    lines = []
    for name in names:
        waits = series[name]
        if not waits:
            continue
        p95 = waits[min(95, len(waits) - 1)]
        lines.append(f"{visible(name):<{pad}} {sparkline(waits, width, top)}  P95 {format_duration(p95)}")
    return lines


def utilisation_line(report: TuneReport, width: int = 60) -> str:
    """The best point's utilisation over time, 0 to 100%."""
    series = report.ranking.best.result.utilisation_series
    return sparkline([u for _, u in series], width, top=1.0)
