"""Policy TOML: defaults, durations, and errors naming file, line and key."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from gpuq.config import load_policy_file
from gpuq.errors import BadInput
from gpuq.policy.config import DEFAULT_POLICY, Mode, Policy, policy_from_mapping
from gpuq.timefmt import format_duration, parse_duration

FULL = """
[preemption]
delta = 50
mode = "graceful"
grace_period = "90s"
min_runtime = "10m"
max_preemptions_per_day = 3
default_checkpoint_interval = "1h"
urgent_priority = 5000

[victim_cost]
lost_work_weight = 2.0
priority_weight = 0.5

[classes.batch]
target_p95 = "2h"
max_wait = "4h"
aging_rate = 5
preemptible = true

[urgent_quota]
default = 8
nlp = 16
"""


def parse_policy(text: str) -> Policy:
    return policy_from_mapping(tomllib.loads(text))


def test_full_policy_parses() -> None:
    p = parse_policy(FULL)
    assert p.delta == 50 and p.mode is Mode.GRACEFUL and p.grace_period_s == 90
    assert p.min_runtime_s == 600 and p.max_preemptions_per_day == 3
    assert p.default_checkpoint_interval_s == 3600 and p.urgent_priority == 5000
    assert p.lost_work_weight == 2.0 and p.priority_weight == 0.5
    assert p.classes["batch"].target_p95_s == 7200 and p.aging_rate("batch") == 5
    assert p.tenant_urgent_quota("nlp") == 16 and p.tenant_urgent_quota("cv") == 8


def test_empty_policy_is_the_documented_default() -> None:
    assert parse_policy("") == DEFAULT_POLICY
    assert DEFAULT_POLICY.mode is Mode.REQUEUE and DEFAULT_POLICY.grace_period_s == 300


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[preemption]\nmode = "kill"\n', "p.toml:2: preemption.mode: 'kill' is not one of"),
        ('[preemption]\ndelta = 1\ngrace_period = "soon"\n', "p.toml:3: preemption.grace_period: not a duration"),
        ("[preemption]\ndelta = -3\n", "p.toml:2: preemption.delta: must be a number from 0 to 2^53, got -3"),
        ("[preemption]\nfrobnicate = 1\n", "p.toml:2: preemption.frobnicate: unknown key"),
        ('[classes.gold]\npreemptible = "no"\n', "p.toml:2: classes.gold.preemptible: expected true or false"),
        ("[urgent_quota]\nnlp = -1\n", "p.toml:2: urgent_quota.nlp"),
        ("[preemption\ndelta = 1\n", "p.toml: invalid TOML"),
    ],
)
def test_errors_name_file_line_and_key(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "p.toml"
    path.write_text(text)
    with pytest.raises(BadInput) as err:
        load_policy_file(path)
    assert str(err.value).startswith(str(path.parent) + "/" + message.split(":")[0])
    assert message.split(":", 1)[1].strip() in str(err.value)


def test_invalid_toml_names_line(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text("[preemption]\ndelta = = 1\n")
    with pytest.raises(BadInput, match=r"p\.toml:2: preemption\.delta: invalid TOML"):
        load_policy_file(path)


def test_missing_file_is_clear(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="cannot read policy file"):
        load_policy_file(tmp_path / "nope.toml")


@pytest.mark.parametrize(("text", "seconds"), [("90s", 90), ("10m", 600), ("2h", 7200), (45, 45), ("1h30m", 5400)])
def test_durations(text: object, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("bad", ["", "ten minutes", "-5", True, "5x", -1])
def test_bad_durations(bad: object) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration(bad)


def test_format_duration() -> None:
    assert [format_duration(s) for s in (5, 600, 3900, 200000)] == ["5s", "10m", "1h05m", "2d07h"]
