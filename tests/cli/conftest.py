"""CLI test fixtures: private XDG dirs, a click runner, snapshot fixtures and a fake live backend."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

import pytest
from click.testing import CliRunner, Result
from msgspec.structs import replace

from gpuq.backends.base import ActionPlan, ActionResult, Backend, Capabilities, OptionSpec, PriorityChange
from gpuq.backends.registry import register_backend, unregister_backend
from gpuq.errors import GpuqError, JobChanged
from gpuq.model import JobState, Snapshot, from_epoch
from gpuq.model.codec import read_snapshot_file
from gpuq.policy.config import Mode
from tests.clock import TickingClock

SNAPSHOTS = Path(__file__).resolve().parent.parent / "fixtures" / "snapshots"
SMALL = SNAPSHOTS / "small.json"


def _plain(value: Any) -> Any:
    """A job field as an action's before/after reports it (times as epoch seconds)."""
    if isinstance(value, JobState):
        return value.value
    if isinstance(value, datetime):
        return value.timestamp()
    return value


class FakeBackend(Backend):
    """A live-looking backend over small.json whose actions really change its (shared) state."""

    name: ClassVar[str] = "fake"
    options: ClassVar[Mapping[str, OptionSpec]] = {
        "cluster": OptionSpec(str, "cluster name"),
        "urgent_qos": OptionSpec(str, "the QOS of urgent jobs"),
    }

    state: ClassVar[dict[str, Any]] = {}

    def __init__(self, cluster: str | None = None, urgent_qos: str | None = None) -> None:
        self.cluster = cluster or "lab"
        self.urgent_qos = urgent_qos
        type(self).state.setdefault("constructed", []).append({"cluster": cluster, "urgent_qos": urgent_qos})

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(actions=frozenset({"bump", "exempt", "preempt"}), priority_range=(1, 2**31 - 1))

    @classmethod
    def reset(cls) -> None:
        cls.state.clear()
        cls.state["snapshot"] = dataclasses.replace(read_snapshot_file(SMALL))
        cls.state["calls"] = []

    def snapshot(self, *, ledger: bool = True) -> Snapshot:
        self.state.setdefault("ledger", []).append(ledger)
        if "snapshot_error" in self.state:
            raise self.state["snapshot_error"]
        snapshot: Snapshot = self.state["snapshot"]
        return snapshot

    def _plan(self, action: str, job_id: str, by: int | None = None, **changes: Any) -> ActionPlan:
        snap: Snapshot = self.state["snapshot"]
        job = snap.job(job_id)
        assert job is not None
        before = {k: _plain(getattr(job, k)) for k in changes}
        after = {k: _plain(v) for k, v in changes.items()}
        return ActionPlan(action, job_id, before, after, commands=(("fakectl", action, job_id),),
                          warnings=("fake warning",) if action == "bump" else (), message=f"{action} job {job_id}"
                          + (f" to priority {changes['priority']}" if "priority" in changes else ""),
                          guard={"state": job.state.value}, payload={**changes, "by": by})  # fmt: skip

    def prepare_bump(self, job_id: str, change: PriorityChange, *, reason: str) -> ActionPlan:
        if change.urgent:
            return self._plan("bump", job_id, urgent=True)
        job = self.state["snapshot"].job(job_id)
        return self._plan("bump", job_id, change.by, priority=change.new_priority(job.priority))

    def prepare_exempt(self, job_id: str, until: float | None, *, reason: str) -> ActionPlan:
        return self._plan("exempt", job_id, exempt_until=until)

    def prepare_preempt(self, job_id: str, mode: Mode, *, reason: str) -> ActionPlan:
        return self._plan("preempt", job_id, state=JobState.PENDING, allocation={}, start_time=None)

    def apply(self, plan: ActionPlan) -> ActionResult:
        self.state["calls"].append((plan.action, plan.target, dict(plan.payload)))
        error: GpuqError | None = self.state.get("action_error")
        if error is not None:
            raise error
        snap: Snapshot = self.state["snapshot"]
        job = snap.job(plan.target)
        assert job is not None
        if job.state.value != plan.guard["state"]:
            raise JobChanged(f"job {plan.target} changed: state {plan.guard['state']} -> {job.state.value}")
        changes = dict(plan.payload)
        by = changes.pop("by", None)
        if by is not None:  # relative: applied to the priority found now
            changes["priority"] = job.priority + by
        before = {k: _plain(getattr(job, k)) for k in changes}
        model = {k: from_epoch(v) if isinstance(v, float) else v for k, v in changes.items()}
        jobs = tuple(replace(j, **model) if j.id == plan.target else j for j in snap.jobs)
        self.state["snapshot"] = dataclasses.replace(snap, jobs=jobs)
        return ActionResult(plan.action, plan.target, before, {k: _plain(v) for k, v in changes.items()},
                            plan.commands, warnings=plan.warnings)  # fmt: skip


@pytest.fixture(autouse=True)
def xdg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Private config/state dirs so no test reads or writes the operator's files."""
    dirs = {"config": tmp_path / "xdg-config", "state": tmp_path / "xdg-state"}
    monkeypatch.setenv("XDG_CONFIG_HOME", str(dirs["config"]))
    monkeypatch.setenv("XDG_STATE_HOME", str(dirs["state"]))
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("SUDO_USER", raising=False)
    monkeypatch.setenv("COLUMNS", "200")
    return dirs


@pytest.fixture
def fake() -> Iterator[type[FakeBackend]]:
    FakeBackend.reset()
    register_backend("fake", FakeBackend)
    yield FakeBackend
    unregister_backend("fake")


Runner = Callable[..., Result]


#: The wall clock of the CLI tests (a weekday afternoon, UTC): live backends read this, never the
#: real clock, so what a test sees does not depend on when it runs.
CLI_CLOCK_START = 1_795_100_400.0  # 2026-11-19T15:00:00Z


@pytest.fixture
def clock() -> TickingClock:
    return TickingClock(CLI_CLOCK_START)


@pytest.fixture
def gpuq(clock: TickingClock) -> Runner:
    """Run `gpuq ARGS…` on the test clock; returns click's Result (stdout/stderr kept apart)."""
    from gpuq.cli.main import cli
    from gpuq.cli.options import Injected

    def run(*args: str, input: str | None = None) -> Result:
        return CliRunner().invoke(cli, list(args), prog_name="gpuq", input=input, obj=Injected(clock=clock))

    return run


#: A fresh demo cluster whose slow clock keeps it still between the calls of one test (1 simulated
#: second per 100 s).
DEMO_STILL = ("--seed", "7", "--speed", "0.01")


@pytest.fixture
def demo(gpuq: Runner) -> Runner:
    """`gpuq` on the still demo cluster (`DEMO_STILL`)."""

    def run(*args: str) -> Result:
        return gpuq(*args, *DEMO_STILL)

    return run


def json_doc(result: Result) -> dict[str, Any]:
    """A command's JSON document, after asserting it exited 0."""
    assert result.exit_code == 0, (result.output, result.exception)
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


@pytest.fixture
def small() -> str:
    return str(SMALL)
