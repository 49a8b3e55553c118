"""`gpuq tune` end to end on a small trace (the real replay): table, JSON, CSV, the policy file it
writes, charts, a job array task's own mode, and clear errors for bad input."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from gpuq.config import load_policy_file
from gpuq.policy.config import Mode
from gpuq.replay.model import ReplayConfig
from gpuq.tune.files import read_result_file, task_share, write_points_file
from gpuq.tune.grid import KEYS, apply_point, parse_grid
from gpuq.tune.score import rank
from tests.tune.helpers import write_trace

Gpuq = Callable[..., Result]
GRID = ["--grid", "delta=0,500", "--grid", "min_runtime=0,10m", "--grid", "strategy=requeue,cancel"]
SHAPE = ["--cluster-shape", "1x4"]


@pytest.fixture
def trace(tmp_path: Path) -> str:
    return write_trace(str(tmp_path / "jobs.jsonl"), 30)


def test_table(gpuq: Gpuq, trace: str) -> None:
    result = gpuq("tune", trace, *GRID, *SHAPE, "-j", "1")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("8 points on ") and "1x4 GPUs" in lines[0]
    assert lines[1].split()[:5] == ["RANK", "POINT", "DELTA", "MIN_RUNTIME", "STRATEGY"]
    assert [line.split()[0] for line in lines[2:10]] == [str(n) for n in range(1, 9)]
    assert "Trade-off:" in result.stdout and "Waits by percentile" in result.stdout
    assert result.stderr.startswith("gpuq tune: 8 points replayed in ") and "1 local process" in result.stderr


def test_json_best_policy_and_csv(gpuq: Gpuq, trace: str, tmp_path: Path) -> None:
    policy = tmp_path / "best.toml"
    result = gpuq("tune", trace, *GRID, *SHAPE, "-o", "json", "--write-policy", str(policy), "-j", "2")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert [p["rank"] for p in doc["points"]] == list(range(1, 9))
    assert doc["best"] == doc["points"][0]["id"] and doc["policy_file"] == str(policy)
    assert doc["ran_on"] == "2 local processes"
    scores = [p["score"] for p in doc["points"]]
    assert scores == sorted(scores, reverse=True)
    assert all(p["result"]["jobs"] == 30 for p in doc["points"])
    # the policy file is the best point's policy, and --policy reads it
    best = next(p for p in parse_grid(GRID[1::2]).points() if p.id == doc["best"])
    written = load_policy_file(policy).policy
    assert written == apply_point(ReplayConfig(), best).policy
    assert written.delta == doc["points"][0]["params"]["delta"]
    assert written.mode is Mode(doc["points"][0]["params"]["strategy"])
    # replaying with it as the base gives the best point's figures again
    again = gpuq("tune", trace, "--policy", str(policy), "--grid", f"delta={written.delta:g}", *SHAPE, "-o", "json")
    assert again.exit_code == 0, again.output
    first = json.loads(again.stdout)["points"][0]["result"]
    assert {**first, "sim_wall_s": 0} == {**doc["points"][0]["result"], "sim_wall_s": 0}
    csv_out = gpuq("tune", trace, *GRID, *SHAPE, "-o", "csv", "-j", "1")
    assert csv_out.exit_code == 0
    rows = csv_out.stdout.splitlines()
    assert rows[0].startswith("rank,id,delta,min_runtime,strategy,utilisation,useful_utilisation,")
    assert len(rows) == 9 and [r.split(",")[1] for r in rows[1:]] == [p["id"] for p in doc["points"]]


def test_charts_option(gpuq: Gpuq, trace: str, tmp_path: Path) -> None:
    result = gpuq("tune", trace, "--grid", "delta=0,500", *SHAPE, "--charts", str(tmp_path / "charts"), "-j", "1")
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (tmp_path / "charts").iterdir()) == ["tradeoff.png", "utilisation.png",
                                                                      "wait-cdf.png"]  # fmt: skip
    assert f"chart: {tmp_path / 'charts' / 'tradeoff.png'}" in result.stdout


def test_array_tasks_merge_to_the_local_ranking(gpuq: Gpuq, trace: str, tmp_path: Path) -> None:
    """What each task of a job array does, run here: the merged results rank as the local run."""
    specs = GRID[1::2]
    grid = write_points_file(tmp_path / "points.json", specs, 3)
    policy = tmp_path / "policy.toml"
    policy.write_text("[preemption]\nmode = 'requeue'\n")
    for task in range(3):
        result = gpuq("tune", trace, "--points", str(tmp_path / "points.json"), "--task-index", str(task),
                      "--out", str(tmp_path), "--policy", str(policy), *SHAPE)  # fmt: skip
        assert result.exit_code == 0, result.output
        assert f"task {task} wrote" in result.stderr
    points = grid.points()
    merged = {}
    for task in range(3):
        share = task_share(points, task, 3)
        merged.update(zip((p.index for p in share), read_result_file(tmp_path / f"result-{task}.json", share),
                          strict=True))  # fmt: skip
    local = json.loads(gpuq("tune", trace, *GRID, *SHAPE, "--policy", str(policy), "-o", "json", "-j", "2").stdout)
    ranking = rank(points, [merged[p.index] for p in points])
    assert [r.point.id for r in ranking.rows] == [p["id"] for p in local["points"]]
    assert [r.score for r in ranking.rows] == [p["score"] for p in local["points"]]


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--grid", "speed=1"], 2, "unknown key 'speed' (valid: " + ", ".join(KEYS) + ")"),
        (["--grid", "delta=x"], 2, "--grid delta=x: 'x' is not a number"),
        ([], 2, "give at least one --grid"),
        (["--grid", "delta=0", "--weights", "alpha=1,omega=2"], 2, "--weights alpha=1,omega=2: expected alpha=A"),
        (["--grid", "delta=0", "--cluster-shape", "64by8"], 2, "--cluster-shape '64by8': expected NODESxGPUS"),
        (["--grid", "delta=0", "--strategy", "kill"], 2, "'kill' is not one of"),
        (["--grid", "delta=0", "--partition", "gpu"], 2, "--partition, --work-dir and --tasks are for --on slurm"),
        (["--grid", "delta=0", "--on", "slurm", "-j", "2"], 2, "--jobs is for --on local"),
        (["--points", "p.json"], 2, "a job array task takes --points, --task-index and --out together"),
        (["--grid", "delta=0", "--policy", "/nonexistent/p.toml"], 2, "/nonexistent/p.toml"),
    ],
)
def test_bad_input(gpuq: Gpuq, trace: str, args: list[str], code: int, message: str) -> None:
    result = gpuq("tune", trace, *args)
    assert result.exit_code == code, result.output
    assert message in result.stderr
    assert "Traceback" not in result.output and result.stdout == ""


def test_missing_trace(gpuq: Gpuq, tmp_path: Path) -> None:
    result = gpuq("tune", str(tmp_path / "none.jsonl"), "--grid", "delta=0")
    assert result.exit_code == 1
    assert "none.jsonl: no such trace file" in result.stderr


def test_malformed_trace_line_names_file_and_line(gpuq: Gpuq, trace: str) -> None:
    with open(trace, "a", encoding="utf-8") as out:
        out.write('{"id": "x", "submit_time": "soon", "duration_s": 1, "gpus": 1}\n')
    result = gpuq("tune", trace, "--grid", "delta=0,50", "-j", "2")
    assert result.exit_code == 2, result.output
    assert f"{trace}:32" in result.stderr
