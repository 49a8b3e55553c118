"""Issue #2 "Bad input": each case gives its exit code and a message, never a traceback."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

Run = Callable[..., Result]


def _clean_failure(result: Result, code: int) -> str:
    """The exit code is `code`, and the failure is a message, not an exception."""
    assert result.exit_code == code, (result.exit_code, result.output)
    assert isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    return result.stderr


def test_unknown_job_id(gpuq: Run, small: str) -> None:
    for command in (["job", "123"], ["preview", "123"]):
        err = _clean_failure(gpuq("--snapshot", small, *command), 1)
        assert "no job 123 on cluster lab" in err


def test_unknown_job_id_on_action_is_audited(gpuq: Run, fake: Any, xdg: dict[str, Path]) -> None:
    err = _clean_failure(gpuq("--backend", "fake", "bump", "123", "--to", "5", "--yes"), 1)
    assert "no job 123 on cluster lab" in err
    record = json.loads((xdg["state"] / "gpuq" / "audit.jsonl").read_text())
    assert record["result"] == "error"
    assert record["error"] == "no job 123 on cluster lab"


def test_an_id_pasted_with_spaces_around_it_is_shown_quoted_and_the_job_named(gpuq: Run, fake: Any) -> None:
    for command in (["job", " 201 "], ["preview", "201 "], ["bump", " 201", "--to", "5", "--yes"],
                    ["exempt", "\t201", "--for", "1h", "--yes"], ["preempt", "201\n", "--yes"]):  # fmt: skip
        err = _clean_failure(gpuq("--backend", "fake", *command), 1)
        quoted = repr(command[1])  # (a control character shown as its escape)
        assert f"no job {quoted} on cluster lab: did you mean 201? (the id given has white space around it)" in err, err
    err = _clean_failure(gpuq("--backend", "fake", "job", " 999 "), 1)
    assert err.strip().endswith("no job ' 999 ' on cluster lab")  # (no job 999 either: nothing to suggest)
    assert fake.state["calls"] == []


@pytest.mark.parametrize(("job_id", "problem"), [("", "a job id is never empty"),
                                                  ("7" * 513, "longer than any job id (512 characters at most)")])
def test_an_id_no_job_can_have_is_a_usage_error(gpuq: Run, fake: Any, job_id: str, problem: str) -> None:
    for command in (["job", job_id], ["preview", job_id], ["bump", job_id, "--to", "5", "--yes"],
                    ["exempt", job_id, "--for", "1h", "--yes"], ["preempt", job_id, "--yes"],
                    ["resume", job_id, "--yes"]):  # fmt: skip
        err = _clean_failure(gpuq("--backend", "fake", *command), 2)
        assert re.search(rf"Invalid value for '\[?JOB\]?': {re.escape(problem)}", err), command
    assert fake.state["calls"] == []


@pytest.mark.parametrize(
    ("value", "problem"),
    [("-5", "--to -5: priority must be an integer from"), ("0", "--to 0: priority must be an integer from"),
     ("abc", "'abc' is not an integer"), ("1.5", "'1.5' is not an integer"),
     ("2000000", "--to 2000000: priority must be an integer from")],
)
def test_bad_priority_shows_range(gpuq: Run, fake: Any, value: str, problem: str) -> None:
    err = _clean_failure(gpuq("--backend", "fake", "bump", "201", "--to", value, "--yes"), 2)
    assert problem in err
    assert "1 to 1000000" in err
    assert fake.state["calls"] == []


def test_range_follows_policy(gpuq: Run, fake: Any, tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text("[preemption]\nurgent_priority = 5000\n")
    err = _clean_failure(gpuq("--backend", "fake", "--policy", str(policy), "bump", "201", "--to", "6000", "--yes"), 2)
    assert "1 to 5000" in err


def test_non_numeric_by(gpuq: Run, fake: Any) -> None:
    err = _clean_failure(gpuq("--backend", "fake", "bump", "201", "--by", "lots", "--yes"), 2)
    assert "1 to 1000000" in err


def test_malformed_policy_toml_syntax(gpuq: Run, small: str, tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text("[preemption]\ndelta = 0\nmode = requeue\n")
    err = _clean_failure(gpuq("--snapshot", small, "--policy", str(policy), "queue"), 2)
    assert f"{policy}:3:" in err
    assert "preemption.mode" in err


def test_bad_policy_value(gpuq: Run, small: str, tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text('[preemption]\ndelta = 0\n\n[classes.low]\nmax_wait = "forever"\n')
    err = _clean_failure(gpuq("--snapshot", small, "--policy", str(policy), "queue"), 2)
    assert f"{policy}:5: classes.low.max_wait:" in err


def test_malformed_config_toml(gpuq: Run, small: str, xdg: dict[str, Path]) -> None:
    config = xdg["config"] / "gpuq" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('backend = "demo"\n\n[clusters.prod]\nbackend = slurm\n')
    err = _clean_failure(gpuq("--snapshot", small, "queue"), 2)
    assert f"{config}:4: clusters.prod.backend: invalid TOML" in err


def test_bad_config_key(gpuq: Run, small: str, tmp_path: Path) -> None:
    config = tmp_path / "gpuq.toml"
    config.write_text('output = "yaml"\n')
    err = _clean_failure(gpuq("--config", str(config), "--snapshot", small, "queue"), 2)
    assert f"{config}:1: output: 'yaml' is not one of table, wide, json, csv" in err


def test_missing_config_file(gpuq: Run, small: str, tmp_path: Path) -> None:
    err = _clean_failure(gpuq("--config", str(tmp_path / "nope.toml"), "--snapshot", small, "queue"), 2)
    assert "nope.toml: cannot read config file" in err


def _snapshot_with(tmp_path: Path, small: str, mutate: Callable[[dict[str, Any]], object]) -> str:
    doc = json.loads(Path(small).read_text())
    mutate(doc)
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(doc))
    return str(path)


def test_snapshot_bad_field_names_json_path(gpuq: Run, small: str, tmp_path: Path) -> None:
    path = _snapshot_with(tmp_path, small, lambda d: d["jobs"][3].__setitem__("start_time", "yesterday"))
    err = _clean_failure(gpuq("--snapshot", path, "queue"), 2)
    assert "jobs[3].start_time: not an RFC 3339 time" in err


def test_snapshot_wrong_format(gpuq: Run, small: str, tmp_path: Path) -> None:
    path = _snapshot_with(tmp_path, small, lambda d: d.__setitem__("format", "slurm.squeue/v0.0.38"))
    err = _clean_failure(gpuq("--snapshot", path, "queue"), 2)
    assert "format" in err
    assert "gpuq.snapshot/v1" in err


def test_snapshot_not_json(gpuq: Run, tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"format": "gpuq.snapshot/v1",\n "jobs": [\n')
    err = _clean_failure(gpuq("--snapshot", str(path), "queue"), 2)
    assert "broken.json" in err
    assert "line" in err


def test_snapshot_missing_file(gpuq: Run, tmp_path: Path) -> None:
    err = _clean_failure(gpuq("--snapshot", str(tmp_path / "missing.json"), "queue"), 2)
    assert "missing.json" in err


@pytest.mark.parametrize("where", ["before", "after"])
def test_unknown_backend_lists_backends(gpuq: Run, where: str) -> None:
    args = ["--backend", "lsf", "queue"] if where == "before" else ["queue", "--backend", "lsf"]
    err = _clean_failure(gpuq(*args), 2)
    assert "unknown backend 'lsf'" in err
    assert "available: demo, slurm, kubernetes" in err


def test_unknown_backend_even_with_snapshot(gpuq: Run, small: str) -> None:
    err = _clean_failure(gpuq("--snapshot", small, "--backend", "nope", "queue"), 2)
    assert "unknown backend 'nope'" in err


def test_bad_output_format(gpuq: Run, small: str) -> None:
    _clean_failure(gpuq("--snapshot", small, "queue", "-o", "yaml"), 2)


def test_actions_refused_on_snapshot(gpuq: Run, small: str) -> None:
    err = _clean_failure(gpuq("--snapshot", small, "bump", "201", "--to", "5", "--yes"), 1)
    assert "read-only" in err


def test_seed_on_backend_without_seed(gpuq: Run, fake: Any) -> None:
    err = _clean_failure(gpuq("--backend", "fake", "--seed", "3", "queue"), 2)
    assert "--seed" in err
    assert "does not take 'seed'" in err


def test_demo_options_with_snapshot(gpuq: Run, small: str) -> None:
    err = _clean_failure(gpuq("--snapshot", small, "--speed", "60", "queue"), 2)
    assert "--speed applies to the demo backend" in err
    _clean_failure(gpuq("--snapshot", small, "--speed", "0", "queue"), 2)
