"""`gpuq replay`: its JSON document, its tables at 80 columns, CSV, the event log, bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from gpuq.cli.main import cli
from gpuq.trace.joblog import write_jobs
from gpuq.views.replay import CSV_FIELDS

from .helpers import job
from .test_model_and_metrics import ISSUE_KEYS, MODEL_KEYS, WAIT_KEYS


@pytest.fixture(autouse=True)
def _env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.delenv("NO_COLOR", raising=False)


@pytest.fixture
def trace(tmp_path: Path) -> str:
    """200 jobs of every class on a 2x8 cluster's worth of load: queues and preemptions."""
    classes = ("urgent", "high", "normal", "low", "batch")
    jobs = [job(str(i), 60.0 * i, 1800.0 + 37 * (i % 11), 1 + i % 8, cls=classes[i % 5], interval=600.0)
            for i in range(200)]  # fmt: skip
    path = tmp_path / "jobs.jsonl"
    with path.open("w", encoding="utf-8") as out:
        write_jobs(jobs, out)
    return str(path)


def gpuq(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), prog_name="gpuq")


def doc(result: Result) -> Any:
    assert result.exit_code == 0, (result.output, result.exception)
    return json.loads(result.stdout)


def test_json_has_exactly_the_documented_keys(trace: str) -> None:
    out = doc(gpuq("replay", trace, "--cluster-shape", "2x8", "-o", "json"))
    assert set(out) == ISSUE_KEYS | MODEL_KEYS
    assert set(out["wait"]) == WAIT_KEYS
    assert set(out["classes"]) == {"urgent", "high", "normal", "low", "batch"}
    for stats in out["classes"].values():
        assert set(stats) == WAIT_KEYS | {"sla_breaches", "jobs", "target_p95_s"}
    assert out["jobs"] == 200 and out["nodes"] == 2 and out["gpus_per_node"] == 8
    assert out["preemptions"] > 0 and out["strategy"] == "requeue"


def test_the_options_reach_the_replay(trace: str, tmp_path: Path) -> None:
    base = doc(gpuq("replay", trace, "--cluster-shape", "2x8", "-o", "json"))
    free = doc(gpuq("replay", trace, "--cluster-shape", "2x8", "--checkpoint-cost", "0", "--restore-cost", "0",
                    "-o", "json"))  # fmt: skip
    costly = doc(gpuq("replay", trace, "--cluster-shape", "2x8", "--checkpoint-cost", "30s", "--restore-cost",
                      "1m", "--checkpoint-interval", "20m", "--strategy", "cancel", "-o", "json"))  # fmt: skip
    # the policy's checkpoint costs unless the options say otherwise
    assert base["checkpoint_overhead_gpu_hours"] > 0.0 and free["checkpoint_overhead_gpu_hours"] == 0.0
    assert costly["checkpoint_overhead_gpu_hours"] > 0.0 and costly["strategy"] == "cancel"
    assert costly["suggested_checkpoint_interval_s"] is not None
    none = doc(gpuq("replay", trace, "--cluster-shape", "2x8", "--no-preemption", "-o", "json"))
    assert none["preemptions"] == 0 and none["strategy"] == "none"
    policy = tmp_path / "policy.toml"
    policy.write_text('[preemption]\nmode = "suspend"\ndelta = 5000\n[aging]\ndefault_rate = 0\n', encoding="utf-8")
    calm = doc(gpuq("replay", trace, "--cluster-shape", "2x8", "--policy", str(policy), "-o", "json"))
    assert calm["strategy"] == "suspend" and calm["preemptions"] == 0  # no gap exceeds Δ = 5000
    again = doc(gpuq("replay", trace, "--cluster-shape", "2x8", "-o", "json"))
    for d in (base, again):
        d.pop("sim_wall_s")
    assert base == again


def test_compare_puts_the_strategies_side_by_side(trace: str) -> None:
    out = doc(gpuq("replay", trace, "--cluster-shape", "2x8", "--compare", "-o", "json"))
    assert list(out["strategies"]) == ["cancel", "requeue", "graceful", "suspend", "none"]
    assert out["strategies"]["cancel"]["lost_gpu_hours"] > out["strategies"]["suspend"]["lost_gpu_hours"] == 0.0
    table = gpuq("replay", trace, "--cluster-shape", "2x8", "--compare")
    assert table.exit_code == 0, table.output
    lines = table.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), lines
    at = next(i for i, line in enumerate(lines) if line.startswith("STRATEGY"))
    assert lines[at].split()[:3] == ["STRATEGY", "USEFUL", "MEAN"]  # (the lesser columns dropped at 80)
    assert [line.split()[0] for line in lines[at + 1 : at + 6]] == ["cancel", "requeue", "graceful", "suspend", "none"]
    assert "hidden" in table.stdout


def test_one_replay_s_tables_fit_80_columns(trace: str) -> None:
    result = gpuq("replay", trace, "--cluster-shape", "2x8", "--checkpoint-cost", "30s")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), lines
    text = result.stdout
    assert "utilisation" in text and "suggested interval" in text and "Young/Daly" in text
    rows = {line.split()[0] for line in lines if line[:1] != " " and line.split()}
    assert {"(all)", "urgent", "high", "normal", "low", "batch", "CLASS"} <= rows


def test_csv_rows_per_strategy_and_class(trace: str) -> None:
    result = gpuq("replay", trace, "--cluster-shape", "2x8", "-o", "csv")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert tuple(lines[0].split(",")) == CSV_FIELDS
    assert [line.split(",")[1] for line in lines[1:]] == ["all", "batch", "high", "low", "normal", "urgent"]
    assert lines[1].split(",")[2] == "200"


def test_the_event_log_is_written_as_json_lines(trace: str, tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    out = doc(gpuq("replay", trace, "--cluster-shape", "2x8", "--events", str(events), "-o", "json"))
    lines = [json.loads(line) for line in events.read_text(encoding="utf-8").splitlines()]
    kinds = [e["event"] for e in lines]
    assert kinds.count("submit") == kinds.count("finish") == 200
    assert kinds.count("preempt") == out["preemptions"]
    start = next(e for e in lines if e["event"] == "start")
    assert set(start) == {"strategy", "time", "t", "event", "job", "by", "gpus", "allocation"}
    assert sum(len(v) for v in start["allocation"].values()) == start["gpus"]
    assert start["time"] == pytest.approx(out["origin_s"] + start["t"])
    preempt = next(e for e in lines if e["event"] == "preempt")
    assert preempt["by"] is not None and "allocation" not in preempt


@pytest.mark.parametrize(
    ("args", "code", "words"),
    [
        (("--cluster-shape", "64by8"), 2, "expected NODESxGPUS"),
        (("--strategy", "kill"), 2, "'kill' is not one of"),
        (("--checkpoint-cost", "5 parsecs"), 2, "not a duration"),
        (("--checkpoint-interval", "-5m"), 2, "--checkpoint-interval"),
        (("--compare", "--strategy", "cancel"), 2, "--strategy or --compare"),
        (("--compare", "--no-preemption"), 2, "--no-preemption or --compare"),
        (("--cluster-shape", "1x4"), 2, "need more GPUs than the 1x4 cluster has"),
        (("--events", "/nonexistent-dir/e.jsonl"), 1, "cannot write it"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_and_an_exit_code(trace: str, args: tuple[str, ...], code: int, words: str) -> None:
    result = gpuq("replay", trace, *args)
    assert result.exit_code == code, result.output
    assert words in result.stderr
    assert "Traceback" not in result.output


def test_a_missing_or_malformed_trace(tmp_path: Path) -> None:
    missing = gpuq("replay", str(tmp_path / "nope.jsonl"))
    assert missing.exit_code == 1 and "no such trace" in missing.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"format": "gpuq.jobs/v1"}\n{"id": "1", "submit_time": 0, "duration_s": 60, "gpus": 1}\n'
                   '{"id": "2", "submit_time": "soon", "duration_s": 60, "gpus": 1}\n', encoding="utf-8")  # fmt: skip
    result = gpuq("replay", str(bad))
    assert result.exit_code == 2, result.output
    assert f"{bad}:3" in result.stderr and "Traceback" not in result.output
