"""Kubernetes backend fixtures: the API server double, or a real cluster.

`cluster` is the recorded lab cluster: served by `ApiDouble` from the recordings, or — when
``GPUQ_TEST_KUBECONFIG`` names a kubeconfig — staged on that real API server (`tests.k8s.live`),
with every name mapped through `Target` so the same test runs against either. Tests that make
the server misbehave on purpose (a 403, a 410, a dropped watch) use `double`, always the double.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from gpuq.backends.kubernetes import KubernetesBackend
from gpuq.model import Snapshot
from tests.clock import FixedClock
from tests.k8s.double import FIXTURES, ApiDouble
from tests.k8s.live import RUN_LABEL, LiveCluster

#: the tests' wall clock: half an hour after the recorded cluster was staged (2026-11-29T18:30:00Z)
NOW = 1_795_977_000.0
LIVE_ENV = "GPUQ_TEST_KUBECONFIG"


@dataclass
class Target:
    """The cluster a test reads, and the names it has there (identity on the double)."""

    kubeconfig: Path
    double: ApiDouble | None = None
    live: LiveCluster | None = None
    made: list[KubernetesBackend] = field(default_factory=list)

    def ns(self, recorded: str) -> str:
        return self.live.ns(recorded) if self.live else recorded

    def id(self, recorded: str) -> str:
        ns, _, name = recorded.partition("/")
        return f"{self.ns(ns)}/{name}"

    def node(self, recorded: str) -> str:
        return self.live.node(recorded) if self.live else recorded

    def pc(self, recorded: str) -> str:
        return self.live.pc(recorded) if self.live else recorded

    @property
    def options(self) -> dict[str, Any]:
        """Backend options beyond the kubeconfig (a real cluster: only this run's pods)."""
        return {"label_selector": f"{RUN_LABEL}={self.live.run}"} if self.live else {}

    def backend(self, **options: Any) -> KubernetesBackend:
        made = KubernetesBackend(kubeconfig=str(self.kubeconfig), clock=FixedClock(NOW), **{**self.options, **options})
        self.made.append(made)
        return made

    def snapshot(self, **options: Any) -> Snapshot:
        return self.backend(**options).snapshot()

    def config(self, xdg_config: Path) -> Path:
        """A config file pointing gpuq's kubernetes backend here."""
        lines = ["[backends.kubernetes]", f"kubeconfig = {json.dumps(str(self.kubeconfig))}"]
        lines += [f"{k} = {json.dumps(v)}" for k, v in self.options.items()]
        path = xdg_config / "gpuq" / "config.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n")
        return path

    def replay_watch(self) -> None:
        """Recording 41's changes (a GPU pod created, annotated, bound, deleted) reach the cluster."""
        if self.live is not None:
            self.live.replay_watch()
        else:
            assert self.double is not None
            self.double.feed("/api/v1/pods", *(FIXTURES / "41-watch-pods.jsonl").read_bytes().splitlines())

    def close(self) -> None:
        for backend in self.made:
            backend.close()


@pytest.fixture(autouse=True)
def xdg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Private config/state dirs, and no kubeconfig of the developer's."""
    dirs = {"config": tmp_path / "xdg-config", "state": tmp_path / "xdg-state"}
    monkeypatch.setenv("XDG_CONFIG_HOME", str(dirs["config"]))
    monkeypatch.setenv("XDG_STATE_HOME", str(dirs["state"]))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("COLUMNS", "200")
    return dirs


@pytest.fixture
def double(tmp_path: Path) -> Iterator[ApiDouble]:
    with ApiDouble() as server:
        yield server


@pytest.fixture
def target(double: ApiDouble, tmp_path: Path) -> Iterator[Target]:
    """Always the double (fault injection, pagination, watch forms)."""
    found = Target(double.kubeconfig(tmp_path / "kubeconfig"), double=double)
    yield found
    found.close()


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Target]:
    """The recorded cluster: the double, or staged on the real one GPUQ_TEST_KUBECONFIG names."""
    real = os.environ.get(LIVE_ENV, "").strip()
    if real:
        live = LiveCluster(real)
        try:
            live.stage()
            found = Target(Path(real), live=live)
            yield found
            found.close()
        finally:
            live.cleanup()
        return
    with ApiDouble() as server:
        found = Target(server.kubeconfig(tmp_path / "kubeconfig"), double=server)
        yield found
        found.close()


Gpuq = Callable[..., Result]


@pytest.fixture
def gpuq() -> Gpuq:
    """`gpuq ARGS…` through click's runner on the tests' fixed clock."""
    from gpuq.cli.main import cli
    from gpuq.cli.options import Injected

    def run(*args: str) -> Result:
        return CliRunner().invoke(cli, list(args), prog_name="gpuq", obj=Injected(clock=FixedClock(NOW)))

    return run


#: how long a test waits for what a background thread (a watch) does
WAIT_S = 10.0


def eventually(check: Callable[[], bool]) -> bool:
    """Whether `check()` comes to hold within `WAIT_S` (polled): for what a watch thread does
    after the call that started it returns (never before a negative assertion)."""
    deadline = time.monotonic() + WAIT_S
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True
