"""`gpuq sla --trace`: the recorded waits of a small trace against hand-computed figures, in
every output format, and its errors."""

from __future__ import annotations

import csv
import io
import json
import warnings
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from gpuq.cli.main import cli
from gpuq.trace import TraceJob
from gpuq.trace.joblog import write_jobs

JOBS = [
    TraceJob("h1", 0.0, 10.0, 1, "high", start_time=60.0),  # waits 60
    TraceJob("h2", 100.0, 10.0, 1, "high", start_time=400.0),  # 300
    TraceJob("h3", 200.0, 10.0, 1, "high", start_time=2200.0),  # 2000
    TraceJob("l1", 0.0, 10.0, 1, "low", start_time=3000.0),  # 3000
    TraceJob("l2", 0.0, 10.0, 1, "low"),  # never started
    TraceJob("n1", 50.0, 10.0, 1, "normal"),  # never started
]
POLICY = '[classes.high]\ntarget_p95 = "1000s"\n\n[classes.low]\ntarget_p95 = "1h"\n'


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    trace, policy = tmp_path / "jobs.jsonl", tmp_path / "policy.toml"
    with trace.open("w") as out:
        write_jobs(JOBS, out)
    policy.write_text(POLICY)
    return str(trace), str(policy)


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), prog_name="gpuq")


def _stats(count: int, never: int, mean: float | None, p50: float | None, p95: float | None, max_s: float | None,
           target: float | None, breaches: int | None, breach: bool,
           with_never: float | None) -> dict[str, Any]:  # fmt: skip
    return {"count": count, "never_started": never, "mean_s": mean, "p50_s": p50, "p95_s": p95, "p99_s": max_s,
            "max_s": max_s, "target_p95_s": target, "sla_breaches": breaches, "breach": breach,
            "p95_incl_pending_s": with_never}  # fmt: skip


def test_json_has_the_hand_computed_figures(files: tuple[str, str]) -> None:
    trace, policy = files
    result = run("sla", "--trace", trace, "--policy", policy, "-o", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert (doc["trace"], doc["format"], doc["jobs"], doc["never_started"]) == (trace, "jobs", 6, 2)
    # no header: the trace ends at its latest time, l1's start at 3000; l2 and n1 wait until then
    assert (doc["end"], doc["left_out"]) == ("1970-01-01T00:50:00Z", {})
    # overall: waits 60, 300, 2000, 3000; nearest rank: P50 = 2nd, P95 = P99 = 4th; with the
    # censored 3000 and 2950, P95 is the 6th of six
    assert doc["overall"] == _stats(4, 2, 1340.0, 300.0, 3000.0, 3000.0, None, None, False, 3000.0)
    high = doc["classes"]["high"]
    assert high.pop("mean_s") == pytest.approx(2360.0 / 3)
    assert high == {k: v for k, v in _stats(3, 0, 0, 300.0, 2000.0, 2000.0, 1000.0, 1, True, 2000.0).items()
                    if k != "mean_s"}  # fmt: skip
    assert doc["classes"]["low"] == _stats(1, 1, 3000.0, 3000.0, 3000.0, 3000.0, 3600.0, 0, False, 3000.0)
    # no policy override for normal: the demo class's 2 h target
    assert doc["classes"]["normal"] == _stats(0, 1, None, None, None, None, 7200.0, 0, False, 2950.0)


def test_the_table_names_what_was_left_out(files: tuple[str, str]) -> None:
    trace, policy = files
    result = run("sla", "--trace", trace, "--policy", policy, "-o", "wide")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == (f"{trace} (jobs): recorded queue waits of 6 GPU jobs, 2 never started (counted as waiting "
                        "until 1970-01-01T00:50:00Z)")  # fmt: skip
    assert lines[1].split() == ["CLASS", "STARTED", "NEVER", "MEAN", "P50", "P95", "P99", "MAX", "P95+NEVER", "TARGET",
                                "BREACHES", "SLA"]  # fmt: skip
    rows = {line.split()[0]: line.split() for line in lines[2:]}
    assert rows["high"] == ["high", "3", "0", "13m", "5m", "33m", "33m", "33m", "33m", "16m", "1", "BREACH"]
    assert rows["low"] == ["low", "1", "1", "50m", "50m", "50m", "50m", "50m", "50m", "1h00m", "0", "ok"]
    assert rows["normal"][1:3] == ["0", "1"] and rows["normal"][-1] == "ok"  # judged on its one censored wait
    assert rows["(all)"][:3] == ["(all)", "4", "2"]


def test_csv_has_one_row_per_class(files: tuple[str, str]) -> None:
    trace, policy = files
    result = run("sla", "--trace", trace, "--policy", policy, "-o", "csv")
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [r["class"] for r in rows] == ["(all)", "high", "low", "normal"]
    assert (rows[1]["p95_s"], rows[1]["sla_breaches"], rows[1]["breach"]) == ("2000.0", "1", "True")
    assert (rows[3]["count"], rows[3]["never_started"], rows[3]["p50_s"]) == ("0", "1", "")


def test_the_seed_of_the_class_rules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    trace = tmp_path / "plain.jsonl"
    with trace.open("w") as out:
        write_jobs((TraceJob(str(i), 0.0, 1.0, 1, start_time=float(i)) for i in range(60)), out)

    def counts(*seed: str) -> dict[str, int]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = run("sla", "--trace", str(trace), *seed, "-o", "json")
        assert result.exit_code == 0, result.output
        assert not [w for w in caught if "more than once" in str(w.message)]
        return {k: v["count"] for k, v in json.loads(result.stdout)["classes"].items()}

    assert counts("--seed", "3") == counts("--seed", "3") != counts("--seed", "4")
    assert counts() == counts("--seed", "0")
    assert sum(counts("--seed", "9").values()) == 60


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--trace", "/nonexistent/trace.jsonl"], 1, "/nonexistent/trace.jsonl: no such trace file or directory"),
        (["--trace", "{bad}"], 2, "{bad}:2:11: submit_time: expected a number, got a string: 'noon'"),
        (["--trace", "{bad}", "--preset", "sge"], 2, "Invalid value for '--preset'"),
        (["--trace", "{bad}", "--columns", "colour=x"], 2, "unknown key 'colour'"),
        (["--trace", "{bad}", "--since", "1h"], 2, "--since reads a live cluster's queue"),
        (["--preset", "helios"], 2, "--preset, --columns and --class-from go with --trace"),
    ],
)
def test_errors_are_one_line_and_an_exit_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str],
                                              code: int, message: str) -> None:  # fmt: skip
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id":"a","submit_time":1,"duration_s":1,"gpus":1}\n{"id":"b","submit_time":"noon"}\n')
    result = run("sla", *(a.replace("{bad}", str(bad)) for a in args))
    assert result.exit_code == code, result.output
    assert message.replace("{bad}", str(bad)) in result.output
    assert "Traceback" not in result.output
