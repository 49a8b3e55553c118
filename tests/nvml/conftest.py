"""NVML test fixtures: a fake /proc tree, a fixed clock, readers over the stand-in NVML, and the
CLI run with that reader as the process's default (restored afterwards)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from gpuq.service import NvmlReader
from gpuq.service.hostgpus import set_default_reader
from tests.clock import FixedClock
from tests.nvml.fakenvml import FakeNvml

#: a fixed wall clock (2026-11-19T15:00:00Z): reports are read "at" this time
NOW = 1_795_100_400.0


class FakeProc:
    """A /proc tree under tmp_path: `add(pid, cgroup=..., environ={...}, cmdline=[...])`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(exist_ok=True)

    def add(self, pid: int, *, cgroup: str | None = None, environ: dict[str, str] | None = None,
            cmdline: list[str] | None = None, comm: str | None = None) -> Path:  # fmt: skip
        d = self.root / str(pid)
        d.mkdir()
        if cgroup is not None:
            (d / "cgroup").write_text(cgroup)
        if environ is not None:
            (d / "environ").write_bytes(b"".join(f"{k}={v}".encode() + b"\0" for k, v in environ.items()))
        if cmdline is not None:
            (d / "cmdline").write_bytes(b"".join(a.encode() + b"\0" for a in cmdline))
        if comm is not None:
            (d / "comm").write_text(comm + "\n")
        return d

    def unreadable(self, pid: int, *names: str) -> None:
        """Entries that cannot be read (a directory where the file should be: tests run as root,
        who may read another user's files)."""
        d = self.root / str(pid)
        d.mkdir(exist_ok=True)
        for name in names:
            (d / name).mkdir()


@pytest.fixture
def proc(tmp_path: Path) -> FakeProc:
    return FakeProc(tmp_path / "proc")


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock(NOW)


ReaderFor = Callable[..., NvmlReader]


@pytest.fixture
def reader_for(proc: FakeProc, clock: FixedClock) -> ReaderFor:
    def make(fake: FakeNvml, host: str = "gpu-01", **kwargs: Any) -> NvmlReader:
        return NvmlReader(lambda: fake, clock, proc=proc.root, host=host, **kwargs)

    return make


@pytest.fixture(autouse=True)
def xdg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Private config/state dirs and a fixed width, as in tests/cli."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("COLUMNS", "200")


@pytest.fixture
def default_reader() -> Iterator[Callable[[NvmlReader | None], None]]:
    """Make a reader the process's default for `host_gpus()` (the CLI's); the real one returns after."""
    saved = set_default_reader(None)

    def use(reader: NvmlReader | None) -> None:
        set_default_reader(reader)

    yield use
    set_default_reader(saved)


Runner = Callable[..., Result]


@pytest.fixture
def gpuq(clock: FixedClock) -> Runner:
    from gpuq.cli.main import cli
    from gpuq.cli.options import Injected

    def run(*args: str) -> Result:
        return CliRunner().invoke(cli, list(args), prog_name="gpuq", obj=Injected(clock=clock))

    return run
