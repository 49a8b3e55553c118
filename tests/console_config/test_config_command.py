"""`gpuq config path` and `gpuq config show`: the file in use, and its values with defaults filled in."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.console_config.conftest import Run

Write = Callable[[str], Path]

FULL = """\
backend = "demo"
cluster = "prod"
output = "table"
color = false
policy_file = "site-policy.toml"

[console]
refresh = 5
theme = "colorblind"
read_only = true

[console.keys]
bump = "B"
queue = "1,f1"

[backends.slurm]
urgent_qos = "urgent"

[clusters.prod]
backend = "slurm"
exempt_qos = "exempt"
[clusters.prod.policy.preemption]
delta = 3

[clusters.lab]
seed = 4
"""


def _table(stdout: str) -> dict[str, str]:
    """KEY -> VALUE of `config show`'s table (the title and the header line left out)."""
    lines = stdout.splitlines()
    assert lines[0] == "configuration, every default filled in"
    assert lines[1].split() == ["KEY", "VALUE"]
    return dict(line.split(None, 1) for line in lines[2:])  # type: ignore[misc]


def test_path_without_a_file(gpuq: Run, xdg: dict[str, Path]) -> None:
    result = gpuq("config", "path")
    assert result.exit_code == 0
    assert result.stdout == f"{xdg['config'] / 'gpuq' / 'config.toml'}\n"
    assert "no such file: gpuq runs on the defaults" in result.stderr


def test_path_of_an_existing_file_even_a_broken_one(gpuq: Run, config_file: Write) -> None:
    path = config_file("this is not toml\n")
    result = gpuq("config", "path")
    assert result.exit_code == 0  # it only says which file: reading it is `show`'s job
    assert result.stdout == f"{path}\n"
    assert "the file exists" in result.stderr


@pytest.mark.parametrize("where", ["before", "between", "after"])
def test_path_follows_config_option(gpuq: Run, tmp_path: Path, where: str) -> None:
    given = str(tmp_path / "other.toml")
    args = {
        "before": ["--config", given, "config", "path"],
        "between": ["config", "--config", given, "path"],
        "after": ["config", "path", "--config", given],
    }[where]
    result = gpuq(*args)
    assert result.exit_code == 0
    assert result.stdout == f"{given}\n"
    assert "no such file (commands given this --config fail)" in result.stderr


def test_show_defaults_as_a_table(gpuq: Run, xdg: dict[str, Path]) -> None:
    result = gpuq("config", "show")
    assert result.exit_code == 0, result.output
    rows = _table(result.stdout)
    assert rows == {
        "path": f"{xdg['config'] / 'gpuq' / 'config.toml'} (no such file: defaults)",
        "backend": "demo",
        "cluster": "-",
        "output": "table",
        "color": "true",
        "policy": "demo backend's built-in policy",
        "console.refresh": "2s",
        "console.theme": "dark",
        "console.read_only": "false",
    }


def test_show_defaults_as_json(gpuq: Run, xdg: dict[str, Path]) -> None:
    result = gpuq("config", "show", "-o", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {
        "path": str(xdg["config"] / "gpuq" / "config.toml"),
        "exists": False,
        "backend": "demo",
        "cluster": None,
        "output": "table",
        "color": True,
        "policy": "demo backend's built-in policy",
        "console": {"refresh": 2.0, "theme": "dark", "read_only": False, "keys": {}},
        "backends": {},
        "clusters": {},
    }


def test_show_a_full_file_as_json(gpuq: Run, config_file: Write) -> None:
    path = config_file(FULL)
    (path.parent / "site-policy.toml").write_text("[preemption]\ndelta = 9\n")
    result = gpuq("config", "show", "-o", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {
        "path": str(path),
        "exists": True,
        "backend": "demo",
        "cluster": "prod",
        "output": "table",
        "color": False,
        "policy": f"{path} [clusters.prod.policy]",  # the default cluster's own policy
        "console": {"refresh": 5.0, "theme": "colorblind", "read_only": True, "keys": {"bump": "B", "queue": "1,f1"}},
        "backends": {"slurm": {"urgent_qos": "urgent"}},
        "clusters": {
            "prod": {"backend": "slurm", "policy": f"{path} [clusters.prod.policy]",
                     "options": {"exempt_qos": "exempt"}},
            # no backend of its own: the top-level one; no policy of its own: the top-level file
            "lab": {"backend": "demo", "policy": str(path.parent / "site-policy.toml"), "options": {"seed": 4}},
        },
    }  # fmt: skip


def test_show_a_full_file_as_a_table_and_csv(gpuq: Run, config_file: Write) -> None:
    path = config_file(FULL)
    (path.parent / "site-policy.toml").write_text("[preemption]\ndelta = 9\n")
    result = gpuq("config", "show")
    assert result.exit_code == 0, result.output
    rows = _table(result.stdout)
    assert rows["path"] == str(path)
    assert rows["cluster"] == "prod"
    assert rows["color"] == "false"
    assert rows["console.refresh"] == "5s"
    assert rows["console.read_only"] == "true"
    assert rows["console.keys.queue"] == "1,f1"
    assert rows["backends.slurm.urgent_qos"] == "urgent"
    assert rows["clusters.prod.backend"] == "slurm"
    assert rows["clusters.prod.exempt_qos"] == "exempt"
    assert rows["clusters.lab.backend"] == "demo"
    assert rows["clusters.lab.seed"] == "4"
    assert rows["clusters.lab.policy"] == str(path.parent / "site-policy.toml")

    csv = gpuq("config", "show", "-o", "csv")
    assert csv.exit_code == 0
    lines = csv.stdout.splitlines()
    assert lines[0] == "key,value"
    assert "console.refresh,5" in lines
    assert "clusters.lab.seed,4" in lines


def test_show_without_cluster_in_csv_is_empty(gpuq: Run) -> None:
    lines = gpuq("config", "show", "-o", "csv").stdout.splitlines()
    assert "cluster," in lines
    assert "console.read_only,false" in lines


def test_show_honours_no_headers(gpuq: Run) -> None:
    lines = gpuq("config", "show", "--no-headers").stdout.splitlines()
    assert lines[0].split()[0] == "path"
    assert lines[1].split() == ["backend", "demo"]


def test_show_shows_outside_text_as_data(gpuq: Run, config_file: Write) -> None:
    config_file('[clusters."a\\u001b[2Jb"]\nbackend = "demo"\nnote = "x\\u202ey"\n')
    result = gpuq("config", "show")
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.stdout and "\u202e" not in result.stdout
    rows = _table(result.stdout)
    assert rows["clusters.a\\x1b[2Jb.note"] == "x\\u202ey"


def test_show_a_policy_file_not_a_backend_default(gpuq: Run, config_file: Write) -> None:
    path = config_file('policy_file = "p.toml"\n')
    (path.parent / "p.toml").write_text("[preemption]\ndelta = 4\n")
    assert json.loads(gpuq("config", "show", "-o", "json").stdout)["policy"] == str(path.parent / "p.toml")
    config_file('backend = "slurm"\n')  # a backend without a policy of its own: gpuq's defaults
    assert json.loads(gpuq("config", "show", "-o", "json").stdout)["policy"] == "defaults"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[console]\nrefresh = 0.2\n", "2: console.refresh: must be >= 1"),
        ('output = "yaml"\n', "1: output: 'yaml' is not one of"),
        ("[console\n", "1: invalid TOML"),
        ('policy_file = "missing.toml"\n', "cannot read policy file"),
    ],
)
def test_show_a_bad_config_is_a_usage_error(gpuq: Run, config_file: Write, text: str, problem: str) -> None:
    path = config_file(text)
    result = gpuq("config", "show")
    assert result.exit_code == 2
    assert problem in result.stderr
    assert str(path.parent) in result.stderr
    assert "Traceback" not in result.output and result.stdout == ""


def test_show_an_explicit_missing_file_is_a_usage_error(gpuq: Run, tmp_path: Path) -> None:
    result = gpuq("config", "show", "--config", str(tmp_path / "nope.toml"))
    assert result.exit_code == 2
    assert f"{tmp_path / 'nope.toml'}: cannot read config file" in result.stderr


def test_config_is_listed_and_its_commands_too(gpuq: Run) -> None:
    assert "config" in gpuq("--help").stdout
    listing = gpuq("config", "--help").stdout
    assert "path" in listing and "show" in listing
