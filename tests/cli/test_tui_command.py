"""`gpuq tui` and plain `gpuq`: what is checked before the console starts, and where it starts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import SMALL, Runner


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Pretend to be on a terminal; record the console that would run instead of running it."""
    import gpuq.cli.tui as command
    from gpuq.tui.app import GpuqConsole

    runs: list[Any] = []
    monkeypatch.setattr(command, "has_terminal", lambda: True)
    monkeypatch.setattr(GpuqConsole, "run", lambda self, *a, **k: runs.append(self))
    return runs


def test_without_a_terminal_it_says_what_to_use_instead(gpuq: Runner) -> None:
    result = gpuq("--snapshot", str(SMALL), "tui")
    assert result.exit_code == 2
    assert "the console needs a terminal" in result.stderr and "gpuq overview" in result.stderr


def test_plain_gpuq_in_a_pipe_is_the_overview(gpuq: Runner) -> None:
    result = gpuq("--snapshot", str(SMALL))
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("lab (demo) at 2026-11-29T18:00:00Z: 8/12 GPUs busy")


def test_options_and_config_reach_the_console(gpuq: Runner, started: list[Any], xdg: dict[str, Path]) -> None:
    (xdg["config"] / "gpuq").mkdir(parents=True)
    (xdg["config"] / "gpuq" / "config.toml").write_text(
        '[console]\nrefresh = 5\ntheme = "light"\n[console.keys]\nbump = "B"\n'
    )
    result = gpuq("--snapshot", str(SMALL), "tui", "--refresh", "3", "--read-only")
    assert result.exit_code == 0, result.stderr
    (console,) = started
    assert console.settings.refresh_s == 3.0 and console.settings.theme == "light"
    assert console.settings.read_only and console.settings.keys == {"bump": "B"}
    assert [c.backend_name for c in console.clusters] == ["snapshot"]
    assert console.owns_process  # (it runs for hours: the collector is set for it)


@pytest.mark.parametrize(
    ("args", "config", "message"),
    [
        (["--theme", "neon"], "", "no theme 'neon' (themes: colorblind, dark, high-contrast, light)"),
        ([], '[console.keys]\nbumpp = "B"\n', "config.toml:2: console.keys.bumpp: unknown action"),
        ([], '[console.keys]\nbump = "ctrl r"\n', "console.keys.bump: 'ctrl r' is not a key name"),
        (["--refresh", "0.5"], "", "Invalid value for '--refresh'"),
        (["--record", "a", "--replay", "b"], "", "give --record or --replay, not both"),
        (["--replay", "/nonexistent/recording"], "", "/nonexistent/recording"),
    ],
)
def test_bad_options_are_usage_errors(gpuq: Runner, started: list[Any], xdg: dict[str, Path], args: list[str],
                                      config: str, message: str) -> None:  # fmt: skip
    if config:
        (xdg["config"] / "gpuq").mkdir(parents=True)
        (xdg["config"] / "gpuq" / "config.toml").write_text(config)
    result = gpuq("--snapshot", str(SMALL), "tui", *args)
    assert result.exit_code == 2, (result.exit_code, result.stderr)
    assert message in result.stderr and "Traceback" not in result.stderr
    assert not started


def test_a_broken_user_theme_chosen_by_name_says_what_is_wrong_with_its_file(
    gpuq: Runner, started: list[Any], xdg: dict[str, Path]
) -> None:
    """A user theme skipped for an error is otherwise just missing: chosen by its name, its
    file's own error (file:line: key: problem) says what to fix."""
    themes = xdg["config"] / "gpuq" / "themes"
    themes.mkdir(parents=True)
    (themes / "mine.toml").write_text('name = "mine"\ndark = true\n\n[colors]\nprimary = "not-a-colour"\n')
    result = gpuq("--snapshot", str(SMALL), "tui", "--theme", "mine")
    assert result.exit_code == 2, (result.exit_code, result.stderr)
    assert f"no theme 'mine': {themes / 'mine.toml'}:5: colors.primary:" in result.stderr
    assert not started


def test_kubernetes_flags_reach_the_console(gpuq: Runner, started: list[Any], monkeypatch: pytest.MonkeyPatch) -> None:
    import gpuq.tui.options as options

    seen: dict[str, Any] = {}

    def open_contexts(contexts: Any, *, flags: Any = None, **kwargs: Any) -> list[Any]:
        seen["contexts"], seen["flags"] = list(contexts), dict(flags or {})
        return [options.open_cluster(snapshot=str(SMALL))]

    monkeypatch.setattr(options, "open_contexts", open_contexts)
    result = gpuq("--backend", "kubernetes", "--context", "a", "--context", "b", "-n", "ml", "tui")
    assert result.exit_code == 0, result.stderr
    assert seen["contexts"] == ["a", "b"]
    assert {k: v.value for k, v in seen["flags"].items()} == {"namespace": "ml"}
