"""A tuning run's charts as PNG files (matplotlib, the optional extra ``gpuq[charts]``).

- ``wait-cdf.png``: the best point's queue-wait CDF per class and overall (from
  `ReplayResult.wait_percentiles`);
- ``utilisation.png``: the best point's GPU utilisation over time (`utilisation_series`);
- ``tradeoff.png``: every point's useful utilisation against its mean wait, the Pareto front
  marked and joined, the best point labelled.

matplotlib is imported only here, only when charts are asked for, through its object-oriented
API on the Agg canvas (no pyplot, no display, no global backend switch).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpuq.errors import Refused
from gpuq.textsafe import visible
from gpuq.tune.score import Ranking

__all__ = ["CHART_FILES", "write_charts"]

CHART_FILES = ("wait-cdf.png", "utilisation.png", "tradeoff.png")
_DPI = 100


def _matplotlib() -> tuple[Any, Any]:
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise Refused(
            "--charts needs matplotlib, which is not installed: pip install 'gpuq[charts]' (or matplotlib)"
        ) from None
    return Figure, FigureCanvasAgg


def _unit(seconds: float) -> tuple[float, str]:
    """A divisor and its name for an axis of durations up to `seconds`."""
    if seconds >= 2 * 86400:
        return 86400.0, "days"
    if seconds >= 2 * 3600:
        return 3600.0, "hours"
    if seconds >= 120:
        return 60.0, "minutes"
    return 1.0, "seconds"


def _text(text: str) -> str:
    """Outside text (a class name) as matplotlib shows it literally: controls escaped, and no
    ``$`` read as the start of a formula."""
    return visible(text).replace("$", r"\$")


def _save(figure: Any, canvas_type: Any, path: Path) -> None:
    canvas_type(figure)
    figure.savefig(path, dpi=_DPI, format="png")


def write_charts(ranking: Ranking, directory: str | Path) -> list[Path]:
    """Write the three charts into `directory` (created when missing); their paths."""
    figure_type, canvas_type = _matplotlib()
    out = Path(directory)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise Refused(f"--charts {out}: cannot create the directory ({exc.strerror or exc})") from None
    best = ranking.best
    paths = [out / name for name in CHART_FILES]
    try:
        _wait_cdf(figure_type, canvas_type, best.result.wait_percentiles, best.point.label, paths[0])
        _utilisation(figure_type, canvas_type, best.result.utilisation_series, best.point.label, paths[1])
        _tradeoff(figure_type, canvas_type, ranking, paths[2])
    except OSError as exc:
        raise Refused(f"--charts {out}: cannot write a chart ({exc.strerror or exc})") from None
    return paths


def _wait_cdf(figure_type: Any, canvas_type: Any, percentiles: Any, label: str, path: Path) -> None:
    figure = figure_type(figsize=(7, 4.5))
    axes = figure.add_subplot()
    longest = max((max(v) for v in percentiles.values() if v), default=0.0)
    divisor, unit = _unit(longest)
    for name in sorted(percentiles, key=lambda n: (n != "all", n)):
        waits = percentiles[name]
        if not waits:
            continue
        fractions = [i / (len(waits) - 1) if len(waits) > 1 else 1.0 for i in range(len(waits))]
        axes.step([w / divisor for w in waits], fractions, where="post", label=_text(name),
                  linewidth=2.2 if name == "all" else 1.4)  # fmt: skip
    axes.set_xlabel(f"queue wait ({unit})")
    axes.set_ylabel("fraction of jobs")
    axes.set_ylim(0, 1.02)
    axes.set_title(f"Wait CDF per class, best point ({_text(label)})", fontsize=10)
    axes.grid(alpha=0.3)
    if percentiles:
        axes.legend(fontsize=8)
    figure.tight_layout()
    _save(figure, canvas_type, path)


def _utilisation(figure_type: Any, canvas_type: Any, series: Any, label: str, path: Path) -> None:
    figure = figure_type(figsize=(7, 3.5))
    axes = figure.add_subplot()
    if series:
        divisor, unit = _unit(series[-1][0])
        axes.step([t / divisor for t, _ in series], [100 * u for _, u in series], where="post")
        axes.set_xlabel(f"time since the first submit ({unit})")
    axes.set_ylabel("GPUs busy (%)")
    axes.set_ylim(0, 102)
    axes.set_title(f"Utilisation over time, best point ({_text(label)})", fontsize=10)
    axes.grid(alpha=0.3)
    figure.tight_layout()
    _save(figure, canvas_type, path)


def _tradeoff(figure_type: Any, canvas_type: Any, ranking: Ranking, path: Path) -> None:
    figure = figure_type(figsize=(7, 4.5))
    axes = figure.add_subplot()
    rows = ranking.by_index()
    divisor, unit = _unit(max(r.result.wait.mean_s for r in rows))
    others = [r for r in rows if not r.pareto]
    front = [r for r in rows if r.pareto]
    axes.scatter([r.result.wait.mean_s / divisor for r in others], [100 * r.u for r in others], s=18,
                 color="0.6", label="dominated")  # fmt: skip
    # (not joined: the front is over three objectives, this is its shadow on two)
    axes.scatter([r.result.wait.mean_s / divisor for r in front], [100 * r.u for r in front], s=30, color="tab:red",
                 label="Pareto front (U, wait, preemptions)")  # fmt: skip
    best = ranking.best
    axes.annotate(f"best: {best.point.id}", (best.result.wait.mean_s / divisor, 100 * best.u),
                  textcoords="offset points", xytext=(6, 6), fontsize=8)  # fmt: skip
    axes.set_xlabel(f"mean queue wait ({unit})")
    axes.set_ylabel("useful utilisation (%)")
    axes.set_title("Trade-off: utilisation against wait", fontsize=10)
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8)
    figure.tight_layout()
    _save(figure, canvas_type, path)
