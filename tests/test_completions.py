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
    # The latest submitted first (202 at 17:30, 201 at 17:00, 203 at 08:00).
    assert _complete(["--snapshot", str(SMALL), "bump"], "20") == ["202", "201", "203"]
    # Global options after the command feed completion too.
    assert _complete(["job", "--snapshot", str(SMALL)], "10") == ["103", "104", "102", "101"]
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
    assert out.stdout.split() == ["202", "201", "203"]  # bash keeps gpuq's order (-o nosort)


def _described(args: list[str], incomplete: str) -> list[tuple[str, str | None]]:
    comp = ShellComplete(cli, {}, "gpuq", "_GPUQ_COMPLETE")
    return [(item.value, item.help) for item in comp.get_completions(args, incomplete)]


@pytest.fixture
def private_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    return tmp_path


@pytest.mark.usefixtures("private_config")
class TestWhatCompletes:
    def test_job_ids_only_those_the_command_takes(self) -> None:
        snap = ["--snapshot", str(SMALL)]
        # bump: pending or running; preempt: running; job: any; latest submitted first
        assert _complete([*snap, "bump"], "") == ["202", "201", "103", "104", "102", "101", "203"]
        assert _complete([*snap, "preempt"], "") == ["103", "104", "102", "101"]
        assert _complete([*snap, "exempt"], "") == ["202", "201", "103", "104", "102", "101", "203"]
        assert "301" in _complete([*snap, "job"], "")  # finished jobs can still be looked at

    def test_job_ids_come_with_what_they_are(self) -> None:
        assert _described(["--snapshot", str(SMALL), "preempt"], "101") == [("101", "running, 4 GPUs, alice, normal")]

    def test_state_values_and_lists(self) -> None:
        assert _complete(["queue", "--state"], "ru") == ["running"]
        assert "all" in _complete(["queue", "-t"], "")
        assert _complete(["queue", "-t"], "pending,r") == ["pending,running"]
        assert "pending,pending" not in _complete(["queue", "-t"], "pending,")

    def test_classes_users_tenants_from_the_cluster(self) -> None:
        snap = ["--snapshot", str(SMALL)]
        assert _complete([*snap, "queue", "--class"], "") == ["urgent", "normal", "low"]  # by rank
        assert _complete([*snap, "preview", "--class"], "n") == ["normal"]
        assert _complete([*snap, "queue", "-u"], "") == ["alice", "bob", "carol", "dave", "erin"]
        assert _complete([*snap, "queue", "--user"], "c") == ["carol"]
        assert _complete([*snap, "queue", "--tenant"], "") == ["infra", "nlp", "vision"]

    def test_sort_keys_with_their_descending_form(self) -> None:
        # (click completes option names for a word that starts with "-", so `-w` itself cannot
        # be completed; an empty word and the keys after a comma can)
        assert {"wait", "-wait", "class", "-class"} <= set(_complete(["queue", "--sort"], ""))
        assert _complete(["queue", "--sort"], "class,-e") == ["class,-effective"]

    def test_backends_and_clusters(self, private_config: Path) -> None:
        assert {"demo", "slurm"} <= set(_complete(["--backend"], ""))
        (private_config / "gpuq").mkdir()
        (private_config / "gpuq" / "config.toml").write_text(
            '[clusters.prod]\nbackend = "slurm"\n[clusters.lab]\nbackend = "demo"\n'
        )
        assert _complete(["--cluster"], "") == ["lab", "prod"]
        assert _complete(["queue", "--cluster"], "p") == ["prod"]

    def test_a_broken_config_completes_nothing_for_clusters(self, private_config: Path) -> None:
        (private_config / "gpuq").mkdir()
        (private_config / "gpuq" / "config.toml").write_text("clusters = [\n")
        assert _complete(["--cluster"], "") == []


def test_fish_keeps_descriptions_whole_and_gpuq_s_order(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """What fish receives, read the way the committed script reads it (split once at the comma
    after the type), keeps the whole description; fish is told not to re-sort the answers."""
    from gpuq.cli.completion import GpuqFishComplete

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    script = (COMPLETIONS / "gpuq.fish").read_text(encoding="utf-8")
    assert 'set -l metadata (string split --max 1 "," $completion);' in script
    assert "complete --no-files --keep-order --command gpuq" in script
    monkeypatch.setenv("COMP_WORDS", f"gpuq --snapshot {SMALL} preempt 10")
    monkeypatch.setenv("COMP_CWORD", "10")
    answer = GpuqFishComplete(cli, {}, "gpuq", "_GPUQ_COMPLETE").complete()
    lines = [line.split(",", 1) for line in answer.splitlines()]  # fish: string split --max 1 ","
    assert lines == [["plain", "103\trunning, 1 GPU, carol, low"], ["plain", "104\trunning, 1 GPU, dave, urgent"],
                     ["plain", "102\trunning, 2 GPUs, carol, low"], ["plain", "101\trunning, 4 GPUs, alice, normal"]]


def test_the_fish_script_is_what_a_shell_gets_at_run_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """main() answers a fish shell with gpuq's own fish class (the one the script was made for)."""
    import subprocess
    import sys

    env = {"_GPUQ_COMPLETE": "fish_source", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-m", "gpuq", "--version"], env=env, capture_output=True, text=True,  # noqa: S603
                         check=False)  # fmt: skip
    assert out.stdout == completion_script("fish")
