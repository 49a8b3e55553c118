"""Truthful times in traces: jobs that never started wait until the trace's end (censored, as the
live SLA counts pending jobs) and are never replayed as jobs of no length; `sla --trace` and
`replay` count the same jobs (GPU jobs) and say what they left out; a trace `gpuq trace export`
wrote carries the cluster's shape, which `replay` takes unless `--cluster-shape` is given."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from gpuq.cli.main import cli
from gpuq.cli.options import Injected
from gpuq.service.replay import ReplayRequest, replay_trace
from gpuq.service.tracing import trace_sla
from gpuq.timefmt import format_time
from gpuq.trace import TraceJob
from gpuq.trace.joblog import write_jobs
from tests.cli.conftest import CLI_CLOCK_START, DEMO_STILL
from tests.clock import FixedClock

END = 10_000.0  # the trace's end, as its header says
JOBS = [
    TraceJob("a", 0.0, 600.0, 1, "high", start_time=100.0, end_time=700.0),  # waited 100
    TraceJob("b", 0.0, 600.0, 2, "high", start_time=300.0, end_time=900.0),  # 300
    TraceJob("w", 4000.0, 0.0, 1, "high", state="pending"),  # never started: waits until the end, 6000
    TraceJob("c", 1000.0, 0.0, 1, "high", end_time=1500.0, state="cancelled"),  # cancelled waiting: 500
    TraceJob("cpu1", 0.0, 50.0, 0, "high", start_time=9000.0, end_time=9050.0),  # no GPU: left out
    TraceJob("cpu2", 0.0, 0.0, 0, "high"),  # no GPU, never started: left out
]
POLICY = '[classes.high]\ntarget_p95 = "1h"\n'


@pytest.fixture
def trace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    path = tmp_path / "jobs.jsonl"
    with path.open("w") as out:
        write_jobs(JOBS, out, {"cluster": "lab", "since": format_time(0.0), "until": format_time(END)})
    (tmp_path / "policy.toml").write_text(POLICY)
    return str(path)


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), prog_name="gpuq", obj=Injected(clock=FixedClock(CLI_CLOCK_START)))


def test_jobs_that_never_started_wait_until_the_traces_end(trace: str) -> None:
    result = run("sla", "--trace", trace, "--policy", str(Path(trace).parent / "policy.toml"), "-o", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["end"] == format_time(END)
    high = doc["classes"]["high"]
    assert (high["count"], high["never_started"]) == (2, 2)
    assert (high["p95_s"], high["max_s"]) == (300.0, 300.0)  # the started jobs' waits alone
    # waits 100, 300, 500 (cancelled while waiting), 6000 (still waiting at the end): P95 = 4th
    assert high["p95_incl_pending_s"] == 6000.0
    assert (high["sla_breaches"], high["breach"]) == (1, True)  # the job still waiting is past the 1 h target


def test_a_trace_without_a_recorded_end_ends_at_its_latest_time(tmp_path: Path) -> None:
    path = tmp_path / "plain.jsonl"
    with path.open("w") as out:
        write_jobs([TraceJob("a", 0.0, 60.0, 1, "high", start_time=100.0, end_time=5000.0),
                    TraceJob("w", 1000.0, 0.0, 1, "high")], out)  # fmt: skip
    report = trace_sla(str(path))
    assert report.end == 5000.0
    assert report.classes["high"].p95_incl_pending_s == 4000.0  # w waited 1000 .. 5000


def test_sla_trace_and_replay_count_the_same_jobs_and_say_what_they_left_out(trace: str) -> None:
    sla = trace_sla(trace)
    replayed = replay_trace(ReplayRequest(trace, shape="1x4")).results[0]
    # GPU jobs only, in both: the two without GPUs are left out of both, and said so.
    assert sla.jobs == 4 and sla.left_out == {"no_gpu": 2}
    assert replayed.skipped == 2
    # The two that never started (no run time recorded) are not replayed as jobs of no length:
    # left out of the replay, and counted; `sla --trace` counts them as waiting.
    assert (replayed.jobs, replayed.never_started) == (2, 2)
    assert sla.jobs == replayed.jobs + replayed.never_started
    assert replayed.wait.count == 2


def test_the_tables_say_what_was_left_out(trace: str) -> None:
    sla = run("sla", "--trace", trace)
    assert sla.exit_code == 0, sla.output
    assert " ".join(sla.stdout.split("CLASS")[0].split()) == (
        f"{trace} (jobs): recorded queue waits of 4 GPU jobs, 2 never started (counted as waiting until "
        f"{format_time(END)}); 2 without GPUs left out"
    )
    replayed = run("replay", trace, "--cluster-shape", "1x4")
    assert replayed.exit_code == 0, replayed.output
    assert "left out: 2 without GPUs, 2 that never started (run time unknown)" in replayed.stdout


def test_replay_takes_the_shape_from_the_traces_header(tmp_path: Path) -> None:
    path = tmp_path / "shaped.jsonl"
    with path.open("w") as out:
        write_jobs(JOBS[:2], out, {"cluster": "lab", "cluster_shape": "3x4"})
    assert (
        replay_trace(ReplayRequest(str(path))).base.nodes,
        replay_trace(ReplayRequest(str(path))).base.gpus_per_node,
    ) == (3, 4)
    given = replay_trace(ReplayRequest(str(path), shape="2x8")).base
    assert (given.nodes, given.gpus_per_node) == (2, 8)  # --cluster-shape wins


def test_a_bad_shape_in_a_header_is_the_traces_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    with path.open("w") as out:
        write_jobs(JOBS[:2], out, {"cluster_shape": "lots"})
    result = run("replay", str(path))
    assert result.exit_code == 2
    assert (
        result.stderr == f"gpuq: error: {path}: header cluster_shape 'lots' is not NODESxGPUS (give --cluster-shape)\n"
    )


def test_an_exported_demo_trace_replays_on_the_demos_shape(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    out = tmp_path / "demo.jsonl"
    exported = run("trace", "export", *DEMO_STILL, "--since", "2h", "-o", str(out))
    assert exported.exit_code == 0, exported.output
    header = json.loads(out.read_text().splitlines()[0])
    assert header["cluster_shape"] == "16x8"  # the demo's 16 nodes of 8 GPUs
    doc = json.loads(run("replay", str(out), "-o", "json").stdout)
    assert (doc["nodes"], doc["gpus_per_node"]) == (16, 8)
