"""Committed shell completions are what the click app generates; job ids complete from the backend."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.shell_completion import ShellComplete
from click.testing import CliRunner

from gpuq.cli.completion import FILES, completion_script
from gpuq.cli.main import cli

COMPLETIONS = Path(__file__).resolve().parent.parent / "completions"
SMALL = Path(__file__).resolve().parent / "fixtures" / "snapshots" / "small.json"


@pytest.mark.parametrize("shell", sorted(FILES))
def test_committed_completion_is_current(shell: str) -> None:
    committed = (COMPLETIONS / FILES[shell]).read_text(encoding="utf-8")
    assert committed == completion_script(shell), (
        f"completions/{FILES[shell]} is stale: run `python -m gpuq.cli.completion completions`"
    )


@pytest.mark.parametrize("shell", sorted(FILES))
def test_completion_command_prints_the_script(shell: str) -> None:
    result = CliRunner().invoke(cli, ["completion", shell], prog_name="gpuq")
    assert result.exit_code == 0
    assert result.stdout == completion_script(shell)
    assert "_GPUQ_COMPLETE" in result.stdout


def _complete(args: list[str], incomplete: str) -> list[str]:
    comp = ShellComplete(cli, {}, "gpuq", "_GPUQ_COMPLETE")
    return [item.value for item in comp.get_completions(args, incomplete)]


def test_commands_complete() -> None:
    assert {"queue", "bump", "preview"} <= set(_complete([], ""))


def test_job_ids_complete_from_backend(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert sorted(_complete(["--snapshot", str(SMALL), "bump"], "20")) == ["201", "202", "203"]
    # Global options after the command feed completion too.
    assert _complete(["job", "--snapshot", str(SMALL)], "10") == ["101", "102", "103", "104"]
    assert _complete(["--snapshot", str(SMALL), "preview"], "3") == ["301"]


def test_completion_never_breaks_on_errors(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert _complete(["--snapshot", str(tmp_path / "missing.json"), "job"], "") == []
    assert _complete(["--backend", "nope", "job"], "") == []


def test_bash_script_completes_job_ids_end_to_end(tmp_path: Path) -> None:
    """Source the committed script in a real bash and let it call the installed `gpuq`."""
    import os
    import shutil
    import subprocess
    import sys

    bash = shutil.which("bash")
    console_script = Path(sys.executable).with_name("gpuq")
    if bash is None or not console_script.exists():
        pytest.skip("needs bash and the installed gpuq console script")
    script = (
        f"source {COMPLETIONS / 'gpuq.bash'}; "
        f"COMP_WORDS=(gpuq --snapshot {SMALL} bump 20); COMP_CWORD=4; "
        '_gpuq_completion gpuq; echo "${COMPREPLY[@]}"'
    )
    env = {
        **os.environ,
        "PATH": f"{console_script.parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "XDG_CONFIG_HOME": str(tmp_path),
    }
    out = subprocess.run([bash, "--norc", "-c", script], env=env, capture_output=True, text=True, check=True)  # noqa: S603
    assert out.stdout.split() == ["201", "202", "203"]
