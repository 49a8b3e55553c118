"""Fixtures: private XDG folders, and `gpuq` run in-process on them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

Run = Callable[..., Result]


@pytest.fixture(autouse=True)
def xdg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Private config/state dirs so no test reads the operator's files or themes."""
    dirs = {"config": tmp_path / "xdg-config", "state": tmp_path / "xdg-state"}
    monkeypatch.setenv("XDG_CONFIG_HOME", str(dirs["config"]))
    monkeypatch.setenv("XDG_STATE_HOME", str(dirs["state"]))
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("COLUMNS", "200")
    return dirs


@pytest.fixture
def config_file(xdg: dict[str, Path]) -> Callable[[str], Path]:
    """Write the default config file (`$XDG_CONFIG_HOME/gpuq/config.toml`) and return its path."""

    def write(text: str) -> Path:
        path = xdg["config"] / "gpuq" / "config.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    return write


@pytest.fixture
def gpuq() -> Run:
    from gpuq.cli.main import cli

    def run(*args: str) -> Result:
        return CliRunner().invoke(cli, list(args), prog_name="gpuq")

    return run
