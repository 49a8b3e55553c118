"""The ranking table's rows and columns, the JSON and CSV documents, and the text charts."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuq.service.tuning import TuneReport, TuneRequest, tune
from gpuq.views.columns import Kind
from gpuq.views.tune import (
    BEST,
    CSV_FIELDS,
    FRONT,
    OTHER,
    percentile_lines,
    scatter_lines,
    sparkline,
    tune_csv,
    tune_json,
    tune_spec,
    tune_view,
    utilisation_line,
)
from tests.tune.helpers import fake_replay, write_trace

GRID = ("delta=0,50,100", "checkpoint_interval=10m,30m", "strategy=requeue,cancel")


@pytest.fixture
def report(tmp_path: Path) -> TuneReport:
    trace = write_trace(str(tmp_path / "t.jsonl"), 6)
    return tune(TuneRequest(trace, GRID, shape="2x4"), workers=1, replayer=fake_replay)


def test_spec_keeps_rank_values_score_and_mark(report: TuneReport) -> None:
    spec = tune_spec(report.grid.keys)
    assert spec.names == ("RANK", "POINT", "DELTA", "CHECKPOINT_INTERVAL", "STRATEGY", "U", "USEFUL U",
                          "MEAN WAIT", "P95 WAIT", "PREEMPT/JOB", "LOST GPU-H", "SCORE", "PARETO")  # fmt: skip
    always = {c.name for c in spec.columns if c.rank == 0}
    assert always == {"RANK", "DELTA", "CHECKPOINT_INTERVAL", "STRATEGY", "SCORE", "PARETO"}
    ranks = [c.rank for c in spec.columns if c.rank]
    assert len(ranks) == len(set(ranks))
    assert spec.columns[0].kind is Kind.ID
    assert tune_spec(["max_wait.Batch\x1b"]).names[2] == "MAX_WAIT.Batch\\x1b"


def test_rows_best_first(report: TuneReport) -> None:
    view = tune_view(report)
    assert len(view.rows) == 12
    assert [r[0] for r in view.rows] == [str(n) for n in range(1, 13)]
    best = report.ranking.best
    top = view.rows[0]
    assert top[1] == best.point.id
    assert top[2:5] == tuple(report.grid.axes[i].shown(v) for i, (_, v) in enumerate(best.point.values))
    assert top[-2] == f"{best.score:.4f}"
    assert [r[-1] for r in view.rows] == ["*" if r.pareto else "" for r in report.ranking.rows]
    assert all(len(r) == len(view.spec.columns) for r in view.rows)
    assert f"best {best.point.id}" in view.summary and "1 local process" in view.summary
    assert "2x4 GPUs" in view.title


def test_json_and_csv(report: TuneReport) -> None:
    doc = tune_json(report, policy_file="best.toml", charts=["c/tradeoff.png"])
    assert doc["best"] == report.ranking.best.point.id
    assert [p["rank"] for p in doc["points"]] == list(range(1, 13))
    first = doc["points"][0]
    assert first["params"] == {
        "delta": report.ranking.best.point.values[0][1],
        "checkpoint_interval": report.ranking.best.point.values[1][1],
        "strategy": first["params"]["strategy"],
    }
    assert first["params"]["strategy"] in ("requeue", "cancel")
    assert first["result"] == report.ranking.best.result.to_dict()
    assert doc["weights"] == {"alpha": 1.0, "beta": 0.5, "gamma": 0.2}
    assert doc["norms"]["wait_s"] == max(r.result.wait.mean_s for r in report.ranking.rows)
    assert (doc["policy_file"], doc["charts"], doc["cluster_shape"]) == ("best.toml", ["c/tradeoff.png"], "2x4")
    header, rows = tune_csv(report)
    assert header == ("rank", "id", "delta", "checkpoint_interval", "strategy", *CSV_FIELDS)
    assert [r[0] for r in rows] == list(range(1, 13))
    assert rows[0][header.index("score")] == report.ranking.best.score
    assert {r[header.index("pareto")] for r in rows} <= {"yes", "no"}


def test_scatter_shape_and_marks(report: TuneReport) -> None:
    lines = scatter_lines(report, width=30, height=8)
    assert len(lines) == 8 + 3
    plot = [line.split("│", 1)[1] for line in lines[:8]]
    assert all(len(cells) == 30 for cells in plot)
    text = "".join(plot)
    assert text.count(BEST) == 1
    front = sum(1 for r in report.ranking.rows if r.pareto)
    assert 1 <= text.count(FRONT) + 1 <= front  # (points may share a cell)
    assert text.count(OTHER) <= len(report.ranking.rows) - front
    # the best point sits at its useful utilisation's height: the top row when it has the highest
    best_u = report.ranking.best.u
    if best_u == max(r.u for r in report.ranking.rows):
        assert BEST in plot[0]
    assert lines[0].startswith(f"{100 * max(r.u for r in report.ranking.rows):.1f}%")


def test_sparkline() -> None:
    assert sparkline([0, 0.5, 1.0], 10, top=1.0) == "▁▅█"
    assert sparkline([0, 1, 0, 1], 2, top=1.0) == "▅▅"  # each cell the mean of its share
    assert sparkline([2, 4], 5) == "▅█"
    assert sparkline([], 5) == "" and sparkline([0.0, 0.0], 5) == "▁▁"
    assert len(sparkline([float(i) for i in range(1000)], 40)) == 40


def test_percentile_and_utilisation_lines(report: TuneReport) -> None:
    lines = percentile_lines(report, width=20)
    assert [line.split()[0] for line in lines] == ["all", "batch"]
    assert all(len(line.split()[1]) == 20 for line in lines)
    assert len(utilisation_line(report, width=12)) == 12
