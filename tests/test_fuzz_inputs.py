"""Property-based fuzzing of everything gpuq reads from outside (issue 9): snapshot files, policy
and config TOML, and Slurm's text and JSON output. Any input either loads into something that
holds together or is refused with one of gpuq's own errors: never another exception.

The inputs are mutations of real seeds (`tests/fuzzing.py`). Bounded to well under a minute in
all: example counts are fixed and there is no deadline (no timing is asserted).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings

from gpuq.backends.slurm.jsonread import load_json
from gpuq.backends.slurm.runner import parse_output
from gpuq.model.codec import decode_snapshot
from tests import fuzzing
from tests.properties import examples

#: no deadline (no timing is asserted); the inputs are large by design
_FUZZ = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)


@settings(_FUZZ, max_examples=examples(1000))
@given(fuzzing.snapshot_inputs)
def test_snapshot_files(data: str | bytes) -> None:
    fuzzing.check_snapshot(data)


@settings(_FUZZ, max_examples=examples(600))
@given(fuzzing.policy_texts())
def test_policy_files(tmp_path: Path, data: str | bytes) -> None:
    fuzzing.check_policy(tmp_path / "policy.toml", data)


@settings(_FUZZ, max_examples=examples(600))
@given(fuzzing.config_texts())
def test_config_files(tmp_path: Path, data: str | bytes) -> None:
    fuzzing.check_config(tmp_path / "config.toml", data)


@settings(_FUZZ, max_examples=examples(1000))
@given(fuzzing.text_inputs())
def test_slurm_text_output(case: tuple[str, str, Callable[[str], Any]]) -> None:
    fuzzing.check_text(*case)


@settings(_FUZZ, max_examples=examples(600))
@given(fuzzing.json_inputs())
def test_slurm_json_output(case: tuple[str, str, Callable[[dict[str, Any]], Any]]) -> None:
    fuzzing.check_json(*case)


def test_seeds_load_unchanged() -> None:
    """The seeds themselves are accepted (so the mutations, not the seeds, are what gets refused)."""
    for data in fuzzing.SNAPSHOT_SEEDS:
        fuzzing.check_loaded(decode_snapshot(data, "seed.json"))
    for command, text, parse, _ in fuzzing.TEXT_SEEDS:
        assert parse_output(command, lambda t=text, p=parse: p(t))  # type: ignore[misc]
    for command, seed, parse_json in fuzzing.JSON_SEEDS:
        doc = json.dumps(seed.doc)
        assert parse_output(command, lambda t=doc, p=parse_json, c=command: p(load_json(t, c)[0]))  # type: ignore[misc]


def test_every_evil_value_in_every_snapshot_field() -> None:
    """Each value of `EVIL_JSON` in each field of small.json: a systematic sweep beside the random one."""
    seed = fuzzing.JsonSeed(fuzzing.SNAPSHOT_SEEDS[0])
    for fragment in fuzzing.EVIL_JSON:
        for path in seed.paths:
            fuzzing.check_snapshot(seed.replaced(path, fragment))
