"""CLI test fixtures: private XDG dirs, a click runner, snapshot fixtures and a fake live backend."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from click.testing import CliRunner, Result

from gpuq.backends.base import ActionResult, Backend
from gpuq.backends.registry import register_backend, unregister_backend
from gpuq.errors import GpuqError
from gpuq.model import JobState, Snapshot
from gpuq.policy.config import Mode
from gpuq.snapshot_io import read_snapshot_file
from tests.clock import TickingClock

SNAPSHOTS = Path(__file__).resolve().parent.parent / "fixtures" / "snapshots"
SMALL = SNAPSHOTS / "small.json"


class FakeBackend(Backend):
    """A live-looking backend over small.json whose actions really change its (shared) state."""

    name: ClassVar[str] = "fake"
    can_bump: ClassVar[bool] = True
    can_exempt: ClassVar[bool] = True
    can_preempt: ClassVar[bool] = True
    knows_gpu_indexes: ClassVar[bool] = True

    state: ClassVar[dict[str, Any]] = {}

    def __init__(self, cluster: str | None = None, urgent_qos: str | None = None) -> None:
        self.cluster = cluster or "lab"
        self.urgent_qos = urgent_qos
        type(self).state.setdefault("constructed", []).append({"cluster": cluster, "urgent_qos": urgent_qos})

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

    def _change(self, action: str, job_id: str, dry_run: bool, **changes: Any) -> ActionResult:
        self.state["calls"].append((action, job_id, dry_run, changes))
        error: GpuqError | None = self.state.get("action_error")
        if error is not None:
            raise error
        snap: Snapshot = self.state["snapshot"]
        job = snap.job(job_id)
        assert job is not None
        before = {k: getattr(job, k) for k in changes}
        if not dry_run:
            jobs = tuple(j._replace(**changes) if j.id == job_id else j for j in snap.jobs)
            self.state["snapshot"] = dataclasses.replace(snap, jobs=jobs)
        after = {k: (v.value if isinstance(v, JobState) else v) for k, v in changes.items()}
        before = {k: (v.value if isinstance(v, JobState) else v) for k, v in before.items()}
        return ActionResult(
            action=action,
            target=job_id,
            dry_run=dry_run,
            before=before,
            after=after,
            commands=[["fakectl", action, job_id]],
            warnings=["fake warning"] if action == "bump" else [],
        )

    def bump(self, job_id: str, *, priority: int | None, urgent: bool, reason: str, dry_run: bool) -> ActionResult:
        if urgent:
            return self._change("bump", job_id, dry_run, urgent=True)
        return self._change("bump", job_id, dry_run, priority=priority)

    def exempt(self, job_id: str, *, until: float | None, reason: str, dry_run: bool) -> ActionResult:
        return self._change("exempt", job_id, dry_run, exempt_until=until)

    def preempt(self, job_id: str, *, mode: Mode, reason: str, dry_run: bool) -> ActionResult:
        return self._change("preempt", job_id, dry_run, state=JobState.PENDING, allocation={}, start_time=None)


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


@pytest.fixture
def small() -> str:
    return str(SMALL)
