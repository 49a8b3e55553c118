"""Habits operators bring from kubectl and squeue: `-o wide`, `--no-headers`, `-u`, `-t` with
Slurm's state codes, `--sort` with several keys and `-KEY`, classes sorted by rank."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

Run = Callable[..., Result]

QUEUE_COLUMNS = ("ID", "NAME", "USER", "TENANT", "CLASS", "STATE", "GPUS", "PRIO", "EFF", "WAIT", "PREEMPT",
                 "NODES", "NOTE")  # fmt: skip


def _ids(result: Result) -> list[str]:
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    return [j["id"] for j in doc["jobs"]]


@pytest.mark.parametrize(
    "command",
    [["overview"], ["queue"], ["gpus"], ["sla"], ["preemptions"], ["job", "101"], ["preview", "202"], ["audit"]],
    ids=lambda c: c[0],
)
def test_wide_is_accepted_wherever_table_is(gpuq: Run, small: str, command: list[str]) -> None:
    table = gpuq("--snapshot", small, *command, "-o", "table")
    wide = gpuq("--snapshot", small, *command, "-o", "wide")
    assert table.exit_code == 0, table.output
    assert wide.exit_code == 0, wide.output
    assert wide.stdout.strip()
    assert not wide.stdout.lstrip().startswith(("{", "["))  # a table, not a document


def test_wide_shows_every_column_on_a_narrow_terminal(
    gpuq: Run, small: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "60")
    header = next(line for line in gpuq("--snapshot", small, "queue", "-o", "wide").stdout.splitlines()
                  if line.startswith("ID "))  # fmt: skip
    assert header.split() == list(QUEUE_COLUMNS)


def test_wide_from_the_config_file(gpuq: Run, small: str, xdg: dict[str, Path]) -> None:
    config = xdg["config"] / "gpuq" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('output = "wide"\n')
    result = gpuq("--snapshot", small, "queue")
    assert result.exit_code == 0, result.output
    assert "train-llm" in result.stdout


def test_no_headers_prints_only_rows(gpuq: Run, small: str) -> None:
    result = gpuq("--snapshot", small, "queue", "--no-headers", "--sort", "id")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines] == ["101", "102", "103", "104", "201", "202", "203"]
    # A global option: before the command too.
    before = gpuq("--no-headers", "--snapshot", small, "queue", "--sort", "id")
    assert before.stdout == result.stdout


def test_no_headers_leaves_json_alone(gpuq: Run, small: str) -> None:
    assert _ids(gpuq("--snapshot", small, "queue", "--no-headers", "-o", "json", "--sort", "id"))[0] == "101"


class TestShortFlags:
    def test_u_is_user(self, gpuq: Run, small: str) -> None:
        assert _ids(gpuq("--snapshot", small, "-o", "json", "queue", "-u", "carol", "-u", "bob", "--sort", "id")) \
            == ["102", "103", "202"]  # fmt: skip

    @pytest.mark.parametrize(
        ("given", "expected"),
        [
            (["-t", "PD"], ["201", "202", "203"]),
            (["-t", "pd"], ["201", "202", "203"]),
            (["-t", "R"], ["101", "102", "103", "104"]),
            (["-t", "RUNNING"], ["101", "102", "103", "104"]),
            (["-t", "PD,R"], ["101", "102", "103", "104", "201", "202", "203"]),
            (["-t", "pending", "-t", "CD"], ["201", "202", "203", "301"]),
            (["-t", "CD"], ["301"]),
            (["-t", "S"], []),
            (["-t", "CG"], []),
        ],
    )
    def test_t_takes_slurm_codes_and_names(self, gpuq: Run, small: str, given: list[str], expected: list[str]) -> None:
        assert _ids(gpuq("--snapshot", small, "-o", "json", "queue", *given, "--sort", "id")) == expected

    def test_unknown_state_is_one_clear_line(self, gpuq: Run, small: str) -> None:
        result = gpuq("--snapshot", small, "queue", "-t", "ZZ")
        assert result.exit_code == 2
        assert result.stderr.strip().count("\n") == 0
        assert "unknown state 'ZZ'" in result.stderr and "PD, R, S, CG" in result.stderr


class TestSort:
    def test_several_keys_comma_separated_or_repeated(self, gpuq: Run, small: str) -> None:
        # user ascending, then GPUs descending within a user
        want = ["101", "201", "202", "102", "103", "104", "203"]
        assert _ids(gpuq("--snapshot", small, "-o", "json", "queue", "--sort", "user,-gpus")) == want
        assert _ids(gpuq("--snapshot", small, "-o", "json", "queue", "--sort", "user", "--sort", "-gpus")) == want

    def test_minus_means_descending_and_reverse_turns_everything(self, gpuq: Run, small: str) -> None:
        up = _ids(gpuq("--snapshot", small, "-o", "json", "queue", "--sort", "id"))
        assert up == ["101", "102", "103", "104", "201", "202", "203"]
        assert _ids(gpuq("--snapshot", small, "-o", "json", "queue", "--sort", "-id")) == up[::-1]
        assert _ids(gpuq("--snapshot", small, "-o", "json", "queue", "--sort", "+id", "--reverse")) == up[::-1]

    def test_default_is_highest_effective_priority_first(self, gpuq: Run, small: str) -> None:
        default = _ids(gpuq("--snapshot", small, "-o", "json", "queue"))
        assert default == _ids(gpuq("--snapshot", small, "-o", "json", "queue", "--sort", "-effective"))
        assert default[0] == "203"  # aged to 1210

    def test_class_follows_class_rank_not_the_alphabet(self, gpuq: Run, small: str) -> None:
        # small.json ranks urgent (1000) > normal (100) > low (10); alphabetically low < normal < urgent
        ids = _ids(gpuq("--snapshot", small, "-o", "json", "queue", "--sort", "class,id"))
        assert ids == ["104", "101", "201", "202", "102", "103", "203"]
        lowest_first = _ids(gpuq("--snapshot", small, "-o", "json", "queue", "--sort", "-class,id"))
        assert lowest_first == ["102", "103", "203", "101", "201", "202", "104"]

    @pytest.mark.parametrize("key", ["nosuch", "-", "-nosuch", "effective,bogus"])
    def test_unknown_key_is_one_clear_line(self, gpuq: Run, small: str, key: str) -> None:
        result = gpuq("--snapshot", small, "queue", f"--sort={key}")
        assert result.exit_code == 2
        assert "--sort: unknown key" in result.stderr and "-KEY for descending" in result.stderr
        assert "Traceback" not in result.output


def test_no_headers_on_an_empty_table_prints_nothing(gpuq: Run, small: str) -> None:
    result = gpuq("--snapshot", small, "queue", "--user", "nobody-at-all", "--no-headers")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == ""
    shown = gpuq("--snapshot", small, "queue", "--user", "nobody-at-all")
    assert "none" in shown.stdout
