"""Tuning test fixtures: private XDG dirs (no operator's config is read) and a `gpuq` runner."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result


@pytest.fixture(autouse=True)
def _private_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    monkeypatch.setenv("COLUMNS", "200")


@pytest.fixture
def gpuq() -> Callable[..., Result]:
    from gpuq.cli.main import cli

    def run(*args: str) -> Result:
        return CliRunner().invoke(cli, list(args), prog_name="gpuq")

    return run
