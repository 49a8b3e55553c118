"""The config file's `[console]` table: defaults, values, and every bad value named by file:line:key."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from gpuq.config import REFRESH_DEFAULT_S, Config, ConsoleConfig, load_config
from gpuq.errors import BadInput
from tests.console_config.conftest import Run

Write = Callable[[str], Path]


def test_defaults_without_a_file_or_a_console_table(config_file: Write) -> None:
    assert load_config().console == ConsoleConfig()
    assert ConsoleConfig() == ConsoleConfig(refresh_s=2.0, theme="dark", read_only=False, keys={})
    config_file('backend = "demo"\n')
    console = load_config().console
    assert (console.refresh_s, console.theme, console.read_only, dict(console.keys)) == (2.0, "dark", False, {})
    assert REFRESH_DEFAULT_S == 2.0


def test_values_are_read(config_file: Write) -> None:
    config_file(
        '[console]\nrefresh = 5\ntheme = "colorblind"\nread_only = true\n\n'
        '[console.keys]\nbump = "B"\nqueue = "1,f1"\n"preview" = "p"\n'
    )
    console = load_config().console
    assert console.refresh_s == 5.0 and isinstance(console.refresh_s, float)
    assert console.theme == "colorblind"
    assert console.read_only is True
    assert dict(console.keys) == {"bump": "B", "queue": "1,f1", "preview": "p"}
    with pytest.raises(TypeError):
        console.keys["bump"] = "x"  # type: ignore[index]


@pytest.mark.parametrize("value", ["1", "1.0", "3600", "2.5"])
def test_refresh_bounds_are_inclusive(config_file: Write, value: str) -> None:
    config_file(f"[console]\nrefresh = {value}\n")
    assert load_config().console.refresh_s == float(value)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[console]\nrefresh = 0.5\n",
         "2: console.refresh: must be >= 1 and <= 3600 (seconds between refreshes), got 0.5"),
        ("[console]\nrefresh = 3601\n", "2: console.refresh: must be >= 1 and <= 3600"),
        ("[console]\nrefresh = 0\n", "2: console.refresh: must be >= 1"),
        ("[console]\nrefresh = -2\n", "2: console.refresh: must be >= 1"),
        ('[console]\nrefresh = "2s"\n', "2: console.refresh: expected a number of seconds, got '2s'"),
        ("[console]\nrefresh = true\n", "2: console.refresh: expected a number of seconds, got True"),
        ("[console]\nrefresh = nan\n", "2: console.refresh: expected a finite number, got nan"),
        ("[console]\nrefresh = inf\n", "2: console.refresh: expected a finite number, got inf"),
        ('[console]\ntheme = ""\n', "2: console.theme: expected a non-empty string, got ''"),
        ("[console]\ntheme = 3\n", "2: console.theme: expected a non-empty string, got 3"),
        ('[console]\nread_only = "yes"\n', "2: console.read_only: expected true or false, got 'yes'"),
        ("[console]\nread_only = 1\n", "2: console.read_only: expected true or false, got 1"),
        ("output = 'json'\n[console]\ncolour = 1\n",
         "3: console.colour: unknown key (allowed: keys, read_only, refresh, theme)"),
        ("console = 3\n", "1: console: expected a table [console], got 3"),
        ('[console]\nkeys = "b"\n', "2: console.keys: expected a table [console.keys]"),
        ('[console.keys]\nqueue = "1"\nbump = 1\n',
         '3: console.keys.bump: expected a key such as "b" or "1,f1", got 1'),
        ('[console.keys]\nbump = ""\n', "2: console.keys.bump: expected a key"),
        ('[console.keys]\nbump = "  "\n', "2: console.keys.bump: expected a key"),
        ('[console.keys]\nbump = ["b"]\n', "2: console.keys.bump: expected a key"),
    ],
)  # fmt: skip
def test_bad_values_name_file_line_and_key(config_file: Write, text: str, problem: str) -> None:
    path = config_file(text)
    with pytest.raises(BadInput) as caught:
        load_config()
    assert str(caught.value).startswith(f"{path}:{problem}")


def test_console_is_a_top_level_key_and_unknown_ones_still_fail(config_file: Write) -> None:
    path = config_file("consle = 1\n")
    with pytest.raises(BadInput, match="consle: unknown key") as caught:
        load_config()
    assert "console" in str(caught.value)  # listed among the allowed keys
    assert str(caught.value).startswith(f"{path}:1: ")


def test_where_and_error_find_console_keys_for_the_console(config_file: Write) -> None:
    """The console checks action ids itself; `Config.where`/`Config.error` point at their line."""
    path = config_file('output = "table"\n\n[console]\ntheme = "dark"\n\n[console.keys]\nqueue = "1"\n"bumpp" = "B"\n')
    config = load_config()
    assert config.where("console.keys.bumpp") == f"{path}:8"
    assert config.where("console.keys.queue") == f"{path}:7"
    assert config.where("console.theme") == f"{path}:4"
    error = config.error("console.keys.bumpp", "unknown action (did you mean bump?)")
    assert isinstance(error, BadInput)
    assert str(error) == f"{path}:8: console.keys.bumpp: unknown action (did you mean bump?)"
    assert str(Config().error("console.theme", "no theme 'x'")) == "<defaults>: console.theme: no theme 'x'"


def test_inline_console_table_lines(config_file: Write) -> None:
    path = config_file('backend = "demo"\nconsole.keys.bump = "B"\nconsole.refresh = 7\n')
    config = load_config()
    assert config.console.refresh_s == 7.0
    assert config.where("console.keys.bump") == f"{path}:2"


def test_a_bad_console_table_stops_every_command(config_file: Write, gpuq: Run) -> None:
    path = config_file("[console]\nrefresh = 0.1\n")
    result = gpuq("queue", "--seed", "1")
    assert result.exit_code == 2
    assert f"{path}:2: console.refresh: must be >= 1" in result.stderr
    assert "Traceback" not in result.output
