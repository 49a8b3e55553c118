"""Global options before or after the command, config resolution, policy resolution, colour."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from gpuq import locations
from gpuq.config import find_key_line, load_config

Run = Callable[..., Result]


def _write_config(xdg: dict[str, Path], text: str) -> Path:
    path = xdg["config"] / "gpuq" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    "args",
    [
        ["--snapshot", "S", "-o", "json", "queue"],
        ["queue", "--snapshot", "S", "-o", "json"],
        ["--snapshot", "S", "queue", "--output", "json"],
        ["-o", "table", "queue", "--snapshot", "S", "-o", "json"],  # after the command wins
    ],
)
def test_global_options_before_or_after(gpuq: Run, small: str, args: list[str]) -> None:
    result = gpuq(*[small if a == "S" else a for a in args])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["cluster"] == "lab"


def test_no_color_and_env(gpuq: Run, small: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from gpuq.cli.options import App, GlobalOptions

    assert App(GlobalOptions()).color is True
    assert App(GlobalOptions(no_color=True)).color is False
    monkeypatch.setenv("NO_COLOR", "1")
    assert App(GlobalOptions()).color is False


def test_locations_honour_xdg(xdg: dict[str, Path]) -> None:
    assert locations.config_file() == xdg["config"] / "gpuq" / "config.toml"
    assert locations.audit_log_path() == xdg["state"] / "gpuq" / "audit.jsonl"


def test_relative_xdg_is_ignored(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", "relative/dir")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert locations.state_dir() == tmp_path / ".local" / "state" / "gpuq"


def test_config_defaults_without_file(xdg: dict[str, Path]) -> None:
    config = load_config()
    assert config.backend == "demo"
    assert config.output == "table"
    assert config.clusters == {}
    assert config.policy_for(None).source == "defaults"


def test_config_output_default(gpuq: Run, small: str, xdg: dict[str, Path]) -> None:
    _write_config(xdg, 'output = "json"\n')
    result = gpuq("--snapshot", small, "queue")
    assert json.loads(result.stdout)["cluster"] == "lab"
    assert gpuq("--snapshot", small, "queue", "-o", "csv").stdout.startswith("id,name,")


def test_cluster_table_selects_backend_and_options(gpuq: Run, fake: Any, xdg: dict[str, Path]) -> None:
    _write_config(
        xdg,
        'cluster = "prod"\n\n[backends.fake]\nurgent_qos = "top"\n\n'
        '[clusters.prod]\nbackend = "fake"\nurgent_qos = "urgent"\n\n[clusters.dev]\nbackend = "fake"\n',
    )
    assert gpuq("queue").exit_code == 0
    assert fake.state["constructed"][-1] == {"cluster": "prod", "urgent_qos": "urgent"}
    assert gpuq("queue", "--cluster", "dev").exit_code == 0
    assert fake.state["constructed"][-1] == {"cluster": "dev", "urgent_qos": "top"}


def test_unknown_cluster_is_an_error_when_clusters_are_configured(gpuq: Run, fake: Any, xdg: dict[str, Path]) -> None:
    _write_config(xdg, '[clusters.prod]\nbackend = "fake"\n')
    result = gpuq("--cluster", "prdo", "queue")
    assert result.exit_code == 2
    assert "no cluster 'prdo'" in result.stderr
    assert "configured: prod" in result.stderr


def test_backend_option_typo_names_file_line_key(gpuq: Run, fake: Any, xdg: dict[str, Path]) -> None:
    path = _write_config(xdg, '[clusters.prod]\nbackend = "fake"\nurgent_qso = "urgent"\n')
    result = gpuq("--cluster", "prod", "queue")
    assert result.exit_code == 2
    assert f"{path}:3: clusters.prod.urgent_qso: backend 'fake' does not take 'urgent_qso'" in result.stderr


def test_policy_resolution_order(gpuq: Run, small: str, xdg: dict[str, Path], tmp_path: Path) -> None:
    def eff_203(*extra: str) -> float:
        doc = json.loads(gpuq("--snapshot", small, "-o", "json", "queue", *extra).stdout)
        return float(next(j["effective_priority"] for j in doc["jobs"] if j["id"] == "203"))

    assert eff_203() == pytest.approx(1210)  # defaults: 10 points/min for 120 min past max_wait
    _write_config(xdg, "[policy.classes.low]\naging_rate = 1\n")
    assert eff_203() == pytest.approx(130)  # the config's inline policy
    policy = tmp_path / "p.toml"
    policy.write_text("[classes.low]\naging_rate = 2\n")
    assert eff_203("--policy", str(policy)) == pytest.approx(250)  # --policy wins


def test_policy_file_relative_to_config(xdg: dict[str, Path], tmp_path: Path) -> None:
    config = _write_config(xdg, 'policy_file = "site-policy.toml"\n')
    (config.parent / "site-policy.toml").write_text("[preemption]\ndelta = 7\n")
    source = load_config().policy_for(None)
    assert source.policy.delta == 7
    assert source.source.endswith("site-policy.toml")


def test_policy_file_and_table_conflict(gpuq: Run, small: str, xdg: dict[str, Path]) -> None:
    path = _write_config(xdg, 'policy_file = "x.toml"\n[policy.preemption]\ndelta = 1\n')
    result = gpuq("--snapshot", small, "queue")
    assert result.exit_code == 2
    assert f"{path}:1: policy_file: give either" in result.stderr


def test_inline_policy_error_names_line(gpuq: Run, small: str, xdg: dict[str, Path]) -> None:
    path = _write_config(xdg, '[clusters.a]\nbackend = "demo"\n\n[clusters.a.policy.preemption]\nmode = "kill"\n')
    result = gpuq("--snapshot", small, "queue")
    assert result.exit_code == 2
    assert f"{path}:5: clusters.a.policy.preemption.mode: 'kill' is not one of" in result.stderr


def test_find_key_line_handles_dotted_and_quoted_keys() -> None:
    text = 'a = 1\n[t]\nx.y = 2\n"q" = 3\n[t.sub]\nz = 4\n'
    assert find_key_line(text, "a") == 1
    assert find_key_line(text, "t.x.y") == 3
    assert find_key_line(text, "t.q") == 4
    assert find_key_line(text, "t.sub") == 5
    assert find_key_line(text, "t.sub.z") == 6
    assert find_key_line(text, "missing") is None


def test_version_and_help(gpuq: Run) -> None:
    assert gpuq("--version").exit_code == 0
    help_text = gpuq("--help").stdout
    for command in (
        "queue",
        "gpus",
        "sla",
        "preemptions",
        "job",
        "preview",
        "bump",
        "exempt",
        "preempt",
        "snapshot",
        "audit",
        "completion",
        "tui",
    ):
        assert command in help_text


def test_tui_missing_is_a_clear_error(gpuq: Run, small: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "gpuq.tui.app", None)  # makes the import fail
    result = gpuq("--snapshot", small, "tui")
    assert result.exit_code == 1
    assert "the console is not available in this installation" in result.stderr


def test_open_clusters_one_per_configured_cluster(fake: Any, xdg: dict[str, Path]) -> None:
    from gpuq.service import open_clusters

    _write_config(xdg, '[clusters.a]\nbackend = "fake"\n[clusters.b]\nbackend = "fake"\n')
    assert [c.name for c in open_clusters()] == ["a", "b"]


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('speed = "fast"', "backends.demo.speed: expected a number, got 'fast'"),
        ("speed = -1", "backends.demo.speed: must be > 0 and <= 3600 (simulated seconds per wall-clock second), "
                       "got -1"),
        ("speed = nan", "backends.demo.speed: expected a finite number, got nan"),
        ('seed = "x"', "backends.demo.seed: expected a whole number, got 'x'"),
        ("seed = 1.5", "backends.demo.seed: expected a whole number, got 1.5"),
        ("clock = 5", "backends.demo.clock: backend 'demo' does not take 'clock' (it takes: cluster, seed, speed)"),
        ('policy = "x"', "backends.demo.policy: backend 'demo' does not take 'policy'"),
        ('state_dir = "/tmp"', "backends.demo.state_dir: backend 'demo' does not take 'state_dir'"),
    ],
)
def test_backend_options_are_typed_and_internals_are_not_options(
    gpuq: Run, xdg: dict[str, Path], line: str, problem: str
) -> None:
    """A bad option value in the config is a usage error naming the file, the line and the key
    (never a traceback, never a flag the operator did not type)."""
    path = _write_config(xdg, f"[backends.demo]\n{line}\n")
    result = gpuq("queue")
    assert result.exit_code == 2, result.output
    assert f"{path}:2: {problem}" in result.stderr
    assert "Traceback" not in result.output and "--speed" not in result.stderr


@pytest.mark.parametrize("command", [["queue"], ["--cluster", "prod", "queue"], ["gpus"]])
def test_a_configured_backend_gpuq_lacks_is_refused_whether_or_not_its_cluster_is_chosen(
    gpuq: Run, xdg: dict[str, Path], command: list[str]
) -> None:
    """A typo in a cluster's backend must never leave the demo on screen, taken for production."""
    path = _write_config(xdg, '[clusters.prod]\nbackend = "dmeo"\n')
    result = gpuq(*command)
    assert result.exit_code == 2
    assert f"{path}:2: clusters.prod.backend: unknown backend 'dmeo' (available: demo" in result.stderr
    assert result.stdout == ""


def test_a_top_level_backend_gpuq_lacks_is_refused(gpuq: Run, xdg: dict[str, Path]) -> None:
    path = _write_config(xdg, 'backend = "slrum"\n')
    result = gpuq("queue")
    assert result.exit_code == 2
    assert f"{path}:1: backend: unknown backend 'slrum'" in result.stderr
