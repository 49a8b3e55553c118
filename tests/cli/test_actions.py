"""bump / exempt / preempt through a fake live backend: confirmation, dry runs, audit, errors."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from gpuq.errors import PermissionDenied, Unreachable
from gpuq.model import from_epoch
from gpuq.timefmt import parse_time

Run = Callable[..., Result]


def _audit(xdg: dict[str, Path]) -> list[dict[str, Any]]:
    path = xdg["state"] / "gpuq" / "audit.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def _outcomes(xdg: dict[str, Path]) -> list[dict[str, Any]]:
    """The records that end an action (an applied one also has an intent record before it)."""
    return [r for r in _audit(xdg) if r["phase"] == "outcome"]


def _job(fake: Any, job_id: str) -> Any:
    return fake.state["snapshot"].job(job_id)


class TestBump:
    def test_to_applies_audits_and_previews(self, gpuq: Run, fake: Any, xdg: dict[str, Path]) -> None:
        result = gpuq("--backend", "fake", "bump", "201", "--to", "900", "--reason", "deadline", "--yes", "-o", "json")
        assert result.exit_code == 0, result.output
        doc = json.loads(result.stdout)
        assert doc["before"] == {"priority": 100}
        assert doc["after"] == {"priority": 900}
        assert doc["dry_run"] is False
        # The preview is of the bumped job: at 900 it would preempt on gpu-02 (102 is the cheap victim).
        assert doc["preview"]["would_preempt"] is True
        assert doc["preview"]["request"]["priority"] == 900
        assert _job(fake, "201").priority == 900
        assert "fake warning" in result.stderr
        intent, record = _audit(xdg)
        assert (intent["phase"], intent["result"], intent["id"]) == ("intent", "pending", record["id"])
        assert intent["commands"] == [["fakectl", "bump", "201"]] and intent["after"] == {"priority": 900}
        assert record["phase"] == "outcome"
        assert record["action"] == "bump"
        assert record["target"] == "201"
        assert record["result"] == "ok"
        assert record["before"] == {"priority": 100}
        assert record["after"] == {"priority": 900}
        assert record["reason"] == "deadline"
        assert record["backend"] == "fake"
        assert record["cluster"] == "lab"
        for key in ("time", "operator", "host"):
            assert record[key]

    def test_by_and_urgent(self, gpuq: Run, fake: Any) -> None:
        assert gpuq("--backend", "fake", "bump", "201", "--by", "-50", "--yes").exit_code == 0
        assert _job(fake, "201").priority == 50
        assert gpuq("--backend", "fake", "bump", "201", "--by", "+25", "--yes").exit_code == 0
        assert _job(fake, "201").priority == 75
        assert gpuq("--backend", "fake", "bump", "203", "--urgent", "--yes").exit_code == 0
        assert _job(fake, "203").urgent is True

    def test_dry_run_changes_nothing_but_is_audited(self, gpuq: Run, fake: Any, xdg: dict[str, Path]) -> None:
        result = gpuq("--backend", "fake", "bump", "201", "--to", "900", "--dry-run")
        assert result.exit_code == 0, result.output
        assert "[dry run]" in result.stdout
        assert "would run: fakectl bump 201" in result.stdout
        assert _job(fake, "201").priority == 100
        (record,) = _audit(xdg)
        assert record["result"] == "dry_run"
        assert record["dry_run"] is True

    @pytest.mark.parametrize("args", [
        ("bump", "301", "--to", "5"),  # a finished job: refused by the service
        ("bump", "201", "--to", "5", "--urgent"),  # bad input
        ("preempt", "nope"),  # no such job
    ])  # fmt: skip
    def test_a_refused_dry_run_is_audited_as_a_dry_run(
        self, gpuq: Run, fake: Any, xdg: dict[str, Path], args: tuple[str, ...]
    ) -> None:
        result = gpuq("--backend", "fake", *args, "--dry-run")
        assert result.exit_code != 0
        (record,) = _audit(xdg)
        assert record["result"] == "error" and record["dry_run"] is True
        assert gpuq("--backend", "fake", *args, "--yes").exit_code == result.exit_code
        assert _audit(xdg)[-1]["dry_run"] is False

    def test_non_tty_without_yes_refuses(self, gpuq: Run, fake: Any, xdg: dict[str, Path]) -> None:
        result = gpuq("--backend", "fake", "bump", "201", "--to", "900")
        assert result.exit_code == 1
        assert "--yes" in result.stderr
        assert fake.state["calls"] == []
        assert _job(fake, "201").priority == 100
        (record,) = _audit(xdg)
        assert record["result"] == "refused"

    def test_tty_confirmation(
        self, gpuq: Run, fake: Any, xdg: dict[str, Path], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr("gpuq.cli.actions.is_interactive", lambda: True)
        declined = gpuq("--backend", "fake", "bump", "201", "--to", "900", input="n\n")
        assert declined.exit_code == 1
        assert _job(fake, "201").priority == 100
        accepted = gpuq("--backend", "fake", "bump", "201", "--to", "900", input="y\n")
        assert accepted.exit_code == 0, accepted.output
        assert _job(fake, "201").priority == 900
        assert "about to bump job 201 to priority 900" in declined.stdout  # shown before the prompt
        assert "would run: fakectl bump 201" in declined.stdout
        # declined: the refusal; accepted: the intent, then the outcome.
        assert [r["result"] for r in _audit(xdg)] == ["refused", "pending", "ok"]
        assert _audit(xdg)[0]["error"] == "not confirmed at the prompt"

    def test_out_of_range_by_is_usage_error_and_audited(self, gpuq: Run, fake: Any, xdg: dict[str, Path]) -> None:
        result = gpuq("--backend", "fake", "bump", "201", "--by", "-500", "--yes")
        assert result.exit_code == 2
        assert "from 1 to 1000000" in result.stderr
        assert fake.state["calls"] == []
        (record,) = _audit(xdg)
        assert record["result"] == "error"
        assert record["exit_code"] == 2

    def test_finished_job_refused(self, gpuq: Run, fake: Any) -> None:
        result = gpuq("--backend", "fake", "bump", "301", "--to", "5", "--yes")
        assert result.exit_code == 1
        assert "completed" in result.stderr

    def test_exactly_one_mode(self, gpuq: Run, fake: Any) -> None:
        assert gpuq("--backend", "fake", "bump", "201", "--yes").exit_code == 2
        assert gpuq("--backend", "fake", "bump", "201", "--to", "5", "--urgent", "--yes").exit_code == 2


class TestExempt:
    def test_for(self, gpuq: Run, fake: Any) -> None:
        result = gpuq("--backend", "fake", "exempt", "101", "--for", "2h", "--yes")
        assert result.exit_code == 0, result.output
        assert _job(fake, "101").exempt_until == from_epoch(parse_time("2026-11-29T20:00:00Z"))

    def test_until_and_off(self, gpuq: Run, fake: Any) -> None:
        assert gpuq("--backend", "fake", "exempt", "101", "--until", "2026-11-30T08:00:00Z", "--yes").exit_code == 0
        assert _job(fake, "101").exempt_until == from_epoch(parse_time("2026-11-30T08:00:00Z"))
        assert gpuq("--backend", "fake", "exempt", "101", "--off", "--yes").exit_code == 0
        assert _job(fake, "101").exempt_until is None

    def test_bad_values(self, gpuq: Run, fake: Any) -> None:
        past = gpuq("--backend", "fake", "exempt", "101", "--until", "2026-11-29T17:00:00Z", "--yes")
        assert past.exit_code == 2
        assert "not in the future" in past.stderr
        assert gpuq("--backend", "fake", "exempt", "101", "--for", "soon", "--yes").exit_code == 2
        assert gpuq("--backend", "fake", "exempt", "101", "--until", "tomorrow", "--yes").exit_code == 2
        assert gpuq("--backend", "fake", "exempt", "101", "--yes").exit_code == 2
        assert fake.state["calls"] == []


class TestPreempt:
    def test_preempt_running(self, gpuq: Run, fake: Any, xdg: dict[str, Path]) -> None:
        result = gpuq("--backend", "fake", "preempt", "102", "--mode", "cancel", "--yes", "-o", "json")
        assert result.exit_code == 0, result.output
        assert _job(fake, "102").state.value == "pending"
        assert _audit(xdg)[-1]["args"] == {"mode": "cancel"}

    def test_default_mode_is_policy(self, gpuq: Run, fake: Any, xdg: dict[str, Path], tmp_path: Path) -> None:
        policy = tmp_path / "p.toml"
        policy.write_text('[preemption]\nmode = "graceful"\n')
        assert gpuq("--backend", "fake", "--policy", str(policy), "preempt", "102", "--dry-run").exit_code == 0
        assert _audit(xdg)[-1]["args"] == {"mode": "graceful"}

    def test_refusals(self, gpuq: Run, fake: Any) -> None:
        pending = gpuq("--backend", "fake", "preempt", "201", "--yes")
        assert pending.exit_code == 1
        assert "not running" in pending.stderr
        exempt = gpuq("--backend", "fake", "preempt", "103", "--yes")
        assert exempt.exit_code == 1
        assert "gpuq exempt 103 --off" in exempt.stderr
        assert fake.state["calls"] == []


@pytest.mark.parametrize(
    ("error", "code"), [(PermissionDenied("operator privilege needed"), 4), (Unreachable("slurmctld down"), 3)]
)
def test_backend_errors_map_to_exit_codes_and_are_audited(
    gpuq: Run, fake: Any, xdg: dict[str, Path], error: Exception, code: int
) -> None:
    fake.state["action_error"] = error
    result = gpuq("--backend", "fake", "bump", "201", "--to", "5", "--yes")
    assert result.exit_code == code
    assert str(error) in result.stderr
    assert "Traceback" not in result.output
    (record,) = _outcomes(xdg)
    assert record["result"] == "error"
    assert record["exit_code"] == code
    assert record["error"] == str(error)


def test_unreachable_read(gpuq: Run, fake: Any) -> None:
    fake.state["snapshot_error"] = Unreachable("cannot reach slurmctld at ctl:6817")
    result = gpuq("--backend", "fake", "queue")
    assert result.exit_code == 3
    assert "ctl:6817" in result.stderr


def test_unwritable_audit_log_stops_the_action(gpuq: Run, fake: Any, xdg: dict[str, Path]) -> None:
    state = xdg["state"]
    state.mkdir(parents=True)
    (state / "gpuq").write_text("a file where the directory should be")
    result = gpuq("--backend", "fake", "bump", "201", "--to", "900", "--yes")
    assert result.exit_code == 1
    assert "audit log" in result.stderr
    assert "nothing was done" in result.stderr
    assert fake.state["calls"] == []
    assert _job(fake, "201").priority == 100


def test_audit_command(gpuq: Run, fake: Any, xdg: dict[str, Path]) -> None:
    gpuq("--backend", "fake", "bump", "201", "--to", "900", "--yes")
    gpuq("--backend", "fake", "exempt", "101", "--for", "1h", "--dry-run")
    doc = json.loads(gpuq("audit", "-o", "json").stdout)
    assert [r["action"] for r in doc["records"]] == ["bump", "exempt"]
    only = json.loads(gpuq("audit", "-o", "json", "--action", "exempt").stdout)
    assert [r["target"] for r in only["records"]] == ["101"]
    table = gpuq("audit")
    assert table.exit_code == 0
    assert "priority: 100 -> 900" in table.stdout
    assert gpuq("audit", "--path").stdout.strip().endswith("gpuq/audit.jsonl")


def test_csv_lists_changed_fields(gpuq: Run, fake: Any) -> None:
    result = gpuq("--backend", "fake", "-o", "csv", "bump", "201", "--to", "900", "--dry-run")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == ["action,job,dry_run,field,before,after", "bump,201,True,priority,100,900"]
