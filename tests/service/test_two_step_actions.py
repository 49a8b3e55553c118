"""Actions in two steps: what each ending (confirm, decline, interrupt, dry run, failures) leaves
in the audit log, and that a confirmed action applies exactly what was prepared."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, ClassVar

import pytest
from click.testing import CliRunner

from gpuq.audit import AuditError, AuditLog
from gpuq.backends.base import ActionPlan, ActionResult, Capabilities, PriorityChange
from gpuq.backends.snapshot_file import SnapshotFileBackend
from gpuq.config import PolicySource
from gpuq.errors import BadInput, JobChanged, NotFound, Refused
from gpuq.policy.config import DEFAULT_POLICY
from gpuq.service import Cluster

SMALL = Path(__file__).resolve().parents[1] / "fixtures" / "snapshots" / "small.json"


class Recording(SnapshotFileBackend):
    """small.json as a cluster whose bumps are recorded (not applied): drives the service alone."""

    name = "recording"
    fail_with: ClassVar[Exception | None] = None

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.applied: list[ActionPlan] = []
        self.changed = False

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(actions=frozenset({"bump"}), priority_range=(1, 10**6))

    def prepare_bump(self, job_id: str, change: PriorityChange, *, reason: str) -> ActionPlan:
        job = self.snapshot().job(job_id)
        assert job is not None
        new = change.new_priority(job.priority)
        return ActionPlan("bump", job_id, {"priority": job.priority}, {"priority": new},
                          commands=(("setprio", job_id, str(new)),), guard={"state": job.state.value})  # fmt: skip

    def apply(self, plan: ActionPlan) -> ActionResult:
        if self.changed:
            raise JobChanged(f"job {plan.target} changed since the bump was prepared; nothing was done")
        if self.fail_with is not None:
            raise self.fail_with
        self.applied.append(plan)
        return ActionResult(plan.action, plan.target, plan.before, plan.after, plan.commands)


def _cluster(tmp_path: Path) -> tuple[Cluster, Recording, AuditLog]:
    backend = Recording(SMALL)
    log = AuditLog(tmp_path / "audit.jsonl")
    return Cluster(backend, "recording", PolicySource(DEFAULT_POLICY, "defaults"), log), backend, log


def _records(log: AuditLog) -> list[dict[str, Any]]:
    return [e.record for e in log.entries() if e.record is not None]


def test_preparing_changes_nothing_and_writes_nothing(tmp_path: Path) -> None:
    cluster, backend, log = _cluster(tmp_path)
    pending = cluster.prepare_bump("201", to=500, reason="r")
    assert (pending.before, pending.after) == ({"priority": 100}, {"priority": 500})
    assert pending.commands == (("setprio", "201", "500"),)
    assert pending.preview is not None and pending.preview.plan.request.priority == 500  # 201 is pending
    assert not backend.applied and not _records(log)


def test_confirm_writes_an_intent_then_the_outcome(tmp_path: Path) -> None:
    cluster, backend, log = _cluster(tmp_path)
    pending = cluster.prepare_bump("201", to=500, reason="r")
    outcome = pending.confirm()
    assert [p.after for p in backend.applied] == [{"priority": 500}]  # exactly the prepared plan
    intent, done = _records(log)
    assert (intent["phase"], intent["result"]) == ("intent", "pending")
    assert (done["phase"], done["result"], done["after"]) == ("outcome", "ok", {"priority": 500})
    assert intent["id"] == done["id"] == pending.id == outcome.record["id"]
    assert intent["commands"] == [["setprio", "201", "500"]]
    with pytest.raises(RuntimeError, match="already"):
        pending.confirm()  # a prepared action runs once


def test_decline_and_dry_run_leave_one_record_each(tmp_path: Path) -> None:
    cluster, backend, log = _cluster(tmp_path)
    cluster.prepare_bump("201", to=500).decline("not confirmed at the prompt")
    dry = cluster.prepare_bump("201", to=600).dry_run()
    assert dry.dry_run and dry.result.after == {"priority": 600}
    assert [(r["result"], r["phase"], r["error"]) for r in _records(log)] == [
        ("refused", "outcome", "not confirmed at the prompt"), ("dry_run", "outcome", None)]
    assert not backend.applied


def test_refusals_before_anything_is_prepared_are_audited(tmp_path: Path) -> None:
    cluster, backend, log = _cluster(tmp_path)
    with pytest.raises(NotFound):
        cluster.prepare_bump("999", to=500)
    with pytest.raises(BadInput, match="exactly one"):
        cluster.prepare_bump("201", to=5, urgent=True)
    with pytest.raises(BadInput, match="from 1 to 1000000"):
        cluster.prepare_bump("201", by=-500)
    with pytest.raises(Refused, match="backend recording cannot exempt jobs"):
        cluster.prepare_exempt("201", for_s=60)
    assert [(r["result"], r["exit_code"]) for r in _records(log)] == [("error", 1), ("error", 2), ("error", 2),
                                                                       ("error", 1)]  # fmt: skip
    assert not backend.applied


def test_a_job_changed_underneath_is_refused_and_recorded(tmp_path: Path) -> None:
    cluster, backend, log = _cluster(tmp_path)
    pending = cluster.prepare_bump("201", to=500)
    backend.changed = True
    with pytest.raises(JobChanged, match="changed since the bump was prepared"):
        pending.confirm()
    intent, outcome = _records(log)
    assert intent["phase"] == "intent" and (outcome["result"], outcome["exit_code"]) == ("error", 1)
    assert not backend.applied


def test_an_unwritable_log_stops_the_action_before_the_backend(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cluster, backend, log = _cluster(tmp_path)
    pending = cluster.prepare_bump("201", to=500)

    def full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(AuditError, match="No space left on device"):
        pending.confirm()
    assert not backend.applied  # the intent could not be made durable: nothing was done


def test_an_outcome_that_cannot_be_written_leaves_the_intent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cluster, backend, log = _cluster(tmp_path)
    pending = cluster.prepare_bump("201", to=500)
    real = os.write
    calls: list[int] = []

    def second_fails(fd: int, data: Any) -> int:  # the disk fills up after the intent
        calls.append(fd)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real(fd, data)

    monkeypatch.setattr(os, "write", second_fails)
    with pytest.raises(AuditError, match="WAS APPLIED.*outcome unknown"):
        pending.confirm()
    assert len(backend.applied) == 1
    actions, _ = log.actions()
    assert [(a.record["result"], a.outcome_known) for a in actions] == [("unknown", False)]


def test_text_that_is_not_utf8_is_recorded_not_lost(tmp_path: Path) -> None:
    cluster, backend, log = _cluster(tmp_path)
    reason = b"deadline \xff".decode("utf-8", "surrogateescape")  # what argv holds for `--reason $'\xff'`
    cluster.prepare_bump("201", to=500, reason=reason).confirm()
    assert [r["reason"] for r in _records(log)] == ["deadline \\xff", "deadline \\xff"]


def test_the_cli_records_an_interrupted_prompt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C (or end of input) at `[y/N]` declines the action, and says so in the log."""
    from gpuq.cli.main import cli

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    monkeypatch.setattr("gpuq.cli.actions.is_interactive", lambda: True)
    result = CliRunner().invoke(cli, ["--snapshot", str(SMALL), "bump", "201", "--to", "500"], input="")
    assert result.exit_code == 1  # (a snapshot is read-only: refused before any prompt)
    records = _records(AuditLog(tmp_path / "gpuq" / "audit.jsonl"))
    assert [r["result"] for r in records] == ["error"] and "read-only snapshot" in records[0]["error"]

    from gpuq.backends.registry import register_backend, unregister_backend

    class Demo(Recording):
        name = "rec"

        def __init__(self) -> None:
            super().__init__(SMALL)

    register_backend("rec", Demo)
    try:
        result = CliRunner().invoke(cli, ["--backend", "rec", "bump", "201", "--to", "500"], input="")
    finally:
        unregister_backend("rec")
    assert result.exit_code == 1 and "Aborted" in result.output
    last = _records(AuditLog(tmp_path / "gpuq" / "audit.jsonl"))[-1]
    assert (last["result"], last["error"]) == ("refused", "interrupted at the prompt")


_CRASH = textwrap.dedent("""
    import os, signal, sys
    sys.path.insert(0, {root!r})
    from pathlib import Path
    from gpuq.audit import AuditLog
    from gpuq.config import PolicySource
    from gpuq.policy.config import DEFAULT_POLICY
    from gpuq.service import Cluster
    from tests.service.test_two_step_actions import Recording, SMALL

    class Crashing(Recording):
        def apply(self, plan):  # the process dies while the backend is being called
            os.kill(os.getpid(), signal.SIGKILL)

    log = AuditLog(Path({log!r}))
    Cluster(Crashing(SMALL), "crashing", PolicySource(DEFAULT_POLICY, "d"), log).prepare_bump("201", to=500).confirm()
""")


def test_a_process_killed_between_intent_and_outcome_leaves_an_intent_gpuq_audit_reports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log_path = tmp_path / "gpuq" / "audit.jsonl"
    root = str(Path(__file__).resolve().parents[2])
    proc = subprocess.run([sys.executable, "-c", _CRASH.format(root=root, log=str(log_path))],  # noqa: S603
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert proc.returncode == -9, proc.stderr
    (intent,) = _records(AuditLog(log_path))
    assert intent["phase"] == "intent"
    from gpuq.cli.main import cli

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    shown = CliRunner().invoke(cli, ["audit", "-o", "json"])
    (record,) = json.loads(shown.stdout)["records"]
    assert (record["result"], record["error"]) == ("unknown", "outcome unknown: check the cluster")
    table = CliRunner(env={"COLUMNS": "200"}).invoke(cli, ["audit"]).stdout
    assert "unknown" in table and "outcome unknown: check the cluster" in table
