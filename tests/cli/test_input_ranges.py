"""Issue 9 from the command line: numbers from options, files and snapshots are refused with the
allowed range and the place named (exit 2, one line on stderr), never a traceback, never saved."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

Run = Callable[..., Result]
_DIGITS_400 = "9" * 400


def _usage_error(result: Result) -> str:
    assert result.exit_code == 2, (result.exit_code, result.output)
    assert isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    return result.stderr


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("99999999h", "99999999h is too long: at most 366d00h"),
        (_DIGITS_400 + "s", "(401 characters) is too long: at most 366d00h"),
        ("367d", "367d is too long: at most 366d00h"),
    ],
)
def test_exempt_for_is_bounded_before_anything_runs(gpuq: Run, fake: Any, value: str, shown: str) -> None:
    err = _usage_error(gpuq("--backend", "fake", "exempt", "101", "--for", value, "--yes"))
    assert "--for" in err and shown in err
    assert fake.state["calls"] == []


def test_bump_to_a_number_of_400_digits_is_refused_with_the_range(gpuq: Run, fake: Any) -> None:
    err = _usage_error(gpuq("--backend", "fake", "bump", "201", "--to", _DIGITS_400, "--yes"))
    assert "--to" in err and "(400 characters) is not an integer in range" in err and "1 to 1000000" in err
    err = _usage_error(gpuq("--backend", "fake", "bump", "201", "--by", "²", "--yes"))
    assert "'²' is not a whole number of priority points" in err
    assert fake.state["calls"] == []


@pytest.mark.parametrize("value", ["99999999999d", _DIGITS_400 + "s", "3651d"])
def test_sla_since_is_bounded(gpuq: Run, small: str, value: str) -> None:
    err = _usage_error(gpuq("--snapshot", small, "sla", "--since", value))
    assert "--since" in err and "is too long: at most 3650d00h" in err


@pytest.mark.parametrize(
    ("args", "shown"),
    [
        (("--speed", "inf"), "--speed: expected a finite number, got inf (allowed: > 0 and <= 3600)"),
        (
            ("--speed", "1e300"),
            "--speed: must be > 0 and <= 3600 (simulated seconds per wall-clock second), got 1e+300",
        ),
        (("--seed", _DIGITS_400), "--seed: must be >= 0 and <= 9223372036854775807"),
        (("--seed", "99999999999999999999"), "--seed: must be >= 0 and <= 9223372036854775807"),
    ],
)
def test_demo_speed_and_seed_are_bounded_and_not_saved(
    gpuq: Run, xdg: dict[str, Path], args: tuple[str, str], shown: str
) -> None:
    err = _usage_error(gpuq(*args, "queue"))
    assert shown in err
    assert not list((xdg["state"] / "gpuq").glob("demo-*.json"))  # nothing started, nothing saved


def test_config_speed_inf_names_the_file_line_and_key(gpuq: Run, xdg: dict[str, Path]) -> None:
    config = xdg["config"] / "gpuq" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('backend = "demo"\n[backends.demo]\nspeed = inf\n')
    err = _usage_error(gpuq("queue"))
    assert f"{config}:3: backends.demo.speed: expected a finite number, got inf" in err


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (
            "[preemption]\nurgent_priority = 0.5\n",
            ":2: preemption.urgent_priority: expected a whole number from 1 to 2^53",
        ),
        ("[preemption]\nmin_runtime = inf\n", ":2: preemption.min_runtime: inf is too long: at most 3650d00h"),
        ("[classes.normal]\ntarget_p95 = nan\n", ":2: classes.normal.target_p95: not a duration: nan"),
    ],
)
def test_policy_values_are_refused_with_the_range(gpuq: Run, small: str, tmp_path: Path, text: str, shown: str) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(text)
    err = _usage_error(gpuq("--snapshot", small, "--policy", str(policy), "queue"))
    assert f"{policy}{shown}" in err


def _snapshot(tmp_path: Path, small: str, change: Callable[[dict[str, Any]], None]) -> str:
    doc = json.loads(Path(small).read_text())
    change(doc)
    path = tmp_path / "impossible.json"
    path.write_text(json.dumps(doc))
    return str(path)


def _job(doc: dict[str, Any], job_id: str) -> dict[str, Any]:
    return next(j for j in doc["jobs"] if j["id"] == job_id)


@pytest.mark.parametrize(
    ("change", "shown"),
    [
        (
            lambda d: _job(d, "101").update(allocation={"gpu-77": [0, 1, 2, 3]}),
            "jobs[0].allocation.gpu-77: job 101 holds GPUs on gpu-77, a node the snapshot does not have",
        ),
        (
            lambda d: _job(d, "102").update(allocation={"gpu-01": [2, 3]}),
            "jobs[1].allocation.gpu-01: GPUs 2,3 on gpu-01 are held by job 101 (running) and by job 102 (running)",
        ),
        (
            lambda d: _job(d, "201").update(allocation={"gpu-02": [3]}),
            "jobs[4].allocation: job 201 is pending but holds GPUs on gpu-02",
        ),
        (
            lambda d: d.update(taken_at="9999-12-31T23:59:59-14:00"),
            "taken_at: outside 1970-01-01T00:00:00Z .. 9999-12-31T23:59:59Z",
        ),
    ],
)
def test_an_impossible_snapshot_is_refused_in_one_line(
    gpuq: Run, small: str, tmp_path: Path, change: Callable[[dict[str, Any]], None], shown: str
) -> None:
    path = _snapshot(tmp_path, small, change)
    for command in (["queue"], ["preview", "201"], ["gpus"]):
        result = gpuq("--snapshot", path, *command)
        err = _usage_error(result)
        assert err.strip() == f"gpuq: error: {path}: {shown}"
        assert result.stdout == ""
