"""The shipped preemption defaults on a public-shaped trace at full load (1–64-GPU jobs,
`gpuq.trace.synthetic.public_shape`; the full-size figures are `benchmarks/bench_defaults.py`'s),
the thrash guard over a replay, and the warnings `gpuq replay` and `gpuq tune` print."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from gpuq.policy.config import DEFAULT_POLICY, UNGUARDED_POLICY, Policy
from gpuq.replay.model import ReplayConfig, ReplayResult
from gpuq.replay.run import replay
from gpuq.trace.joblog import write_jobs
from gpuq.trace.record import TraceJob
from gpuq.trace.synthetic import public_shape

#: the tests' scale: 600 jobs of 1–64 GPUs offering all of 8x8 GPUs (~23 days of submits)
JOBS, NODES = 600, 8
UNGUARDED_TOML = """[preemption]
delta = 0
min_runtime = "0s"
max_preemptions_per_day = 0
default_checkpoint_interval = "0s"
checkpoint_cost = "0s"
restore_cost = "0s"
"""


@pytest.fixture(scope="module")
def jobs() -> list[TraceJob]:
    return public_shape(JOBS, NODES * 8)


def run(jobs: list[TraceJob], policy: Policy) -> ReplayResult:
    return replay(jobs, ReplayConfig(policy=policy, nodes=NODES, gpus_per_node=8))


def lost_share(r: ReplayResult) -> float:
    return r.lost_gpu_hours / (r.busy_gpu_hours - r.checkpoint_overhead_gpu_hours)


def test_the_trace_has_the_public_shape(jobs: list[TraceJob]) -> None:
    sizes = {j.gpus for j in jobs}
    assert sizes == {1, 2, 4, 8, 16, 32, 64}
    assert sum(j.gpus == 1 for j in jobs) > len(jobs) / 3
    offered = sum(j.gpus * j.duration_s for j in jobs)
    span = jobs[-1].submit_time - jobs[0].submit_time
    assert 0.8 < offered / (NODES * 8 * span) < 1.3  # about the whole cluster's GPUs
    assert public_shape(JOBS, NODES * 8) == jobs  # deterministic


def test_the_shipped_defaults_meet_the_three_bounds_and_the_old_ones_do_not(jobs: list[TraceJob]) -> None:
    shipped = run(jobs, DEFAULT_POLICY)
    assert shipped.preemptions > 0  # (the bounds are not met by never preempting)
    assert shipped.preemptions_per_job <= 1.0
    assert shipped.max_preemptions_per_job_day <= DEFAULT_POLICY.max_preemptions_per_day
    assert lost_share(shipped) <= 0.10
    assert shipped.unfinished == 0
    old = run(jobs, UNGUARDED_POLICY)
    assert old.preemptions_per_job > 1.0
    assert old.max_preemptions_per_job_day > DEFAULT_POLICY.max_preemptions_per_day
    assert lost_share(old) > 0.10


def test_the_guard_flags_the_old_defaults_and_names_the_worst_jobs(jobs: list[TraceJob]) -> None:
    thrash = run(jobs, UNGUARDED_POLICY).thrash
    assert thrash is not None and thrash.flagged
    # judged against the default protections, the policy having none of its own
    assert (thrash.limits.per_day, thrash.limits.min_runtime_s) == (3, 1800.0)
    assert thrash.over_cap > 0 and thrash.too_soon > 0 and thrash.pairs_taking_turns > 0 and thrash.too_much_lost
    worst = thrash.jobs
    assert worst and worst[0].most_in_a_day > 3
    assert [j.most_in_a_day for j in worst] == sorted((j.most_in_a_day for j in worst), reverse=True)
    line = thrash.summary()
    assert line.startswith("thrashing: ") and worst[0].job in line and "of the work lost" in line


def test_under_the_shipped_defaults_no_job_is_over_the_cap_or_preempted_too_soon(jobs: list[TraceJob]) -> None:
    thrash = run(jobs, DEFAULT_POLICY).thrash
    assert thrash is not None
    assert (thrash.over_cap, thrash.too_soon, thrash.too_much_lost) == (0, 0, False)


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: list[TraceJob]) -> tuple[str, str, str]:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    trace = tmp_path / "jobs.jsonl"
    with trace.open("w", encoding="utf-8") as out:
        write_jobs(jobs, out)
    light = tmp_path / "light.jsonl"
    with light.open("w", encoding="utf-8") as out:
        write_jobs(public_shape(200, NODES * 8, load=0.3), out)
    policy = tmp_path / "unguarded.toml"
    policy.write_text(UNGUARDED_TOML, encoding="utf-8")
    return str(trace), str(light), str(policy)


def gpuq(*args: str) -> Result:
    from gpuq.cli.main import cli

    return CliRunner().invoke(cli, list(args), prog_name="gpuq")


def warnings(result: Result) -> list[str]:
    assert result.exit_code == 0, (result.output, result.exception)
    return [line for line in result.stderr.splitlines() if line.startswith("gpuq: warning:")]


def test_replay_warns_with_the_worst_jobs(files: tuple[str, str, str]) -> None:
    trace, light, policy = files
    shape = ("--cluster-shape", f"{NODES}x8")
    (line,) = warnings(gpuq("replay", trace, *shape, "--policy", policy, "-o", "json"))
    assert "strategy requeue: thrashing: " in line and "preempted more than 3× in 24 h (j" in line
    assert "preemptions per job" in line
    table = gpuq("replay", trace, *shape, "--policy", policy)
    assert len(warnings(table)) == 1 and "thrash guard" in table.stdout
    assert warnings(gpuq("replay", light, *shape, "-o", "json")) == []  # the defaults, a light load


def test_tune_warns_naming_the_thrashing_points(files: tuple[str, str, str]) -> None:
    trace, _, policy = files
    result = gpuq("tune", trace, "--cluster-shape", f"{NODES}x8", "--policy", policy, "--grid",
                  "max_preemptions_per_day=0,3", "--grid", "min_runtime=0,30m", "-j", "1", "-o", "json")  # fmt: skip
    lines = warnings(result)
    assert len(lines) == 2
    # (Δ 0 without default checkpoints thrashes on this trace whatever the cap and minimum runtime)
    assert lines[0].startswith("gpuq: warning: 4 of 4 points thrash (p0")
    assert ", rank 1): thrashing: " in lines[1] and re.search(r"(most by |\()j\d+ ", lines[1])  # worst jobs named
