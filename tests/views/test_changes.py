"""An action's change as people read it: times to the second, GPU-hours, allocations, whole
priorities, yes/no; never a Python repr or an exponent."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from gpuq.views.changes import changes, describe_value, format_gpu_indexes, format_number, format_priority

T = 1_795_100_455.939648  # 2026-11-19T15:00:55.939648Z


@pytest.mark.parametrize(
    ("key", "value", "shown"),
    [
        ("exempt_until", T, "2026-11-19T15:00:55Z"),
        ("exempt_until", datetime(2026, 11, 19, 15, 0, 55, 939648, tzinfo=UTC), "2026-11-19T15:00:55Z"),
        ("exempt_until", "2026-11-19T15:00:55.939648Z", "2026-11-19T15:00:55Z"),
        ("start_time", 1_795_100_400, "2026-11-19T15:00:00Z"),
        ("exempt_until", None, "-"),
        ("allocation", {"gpu-015": [1]}, "gpu-015:1"),
        ("allocation", {"gpu-015": [0, 1, 2, 3, 6], "gpu-016": [7]}, "gpu-015:0-3,6 gpu-016:7"),
        ("allocation", {"gpu-015": [None, None]}, "gpu-015:2 GPUs"),
        ("allocation", {}, "none"),
        ("gpu_seconds_lost", 467.36771392822266, "0.13 GPU-h"),
        ("gpu_seconds_lost", 0.0, "0.00 GPU-h"),
        ("grace_period_s", 167.4079372882843, "2m"),
        ("priority", 1_000_000.0, "1000000"),
        ("priority", 117, "117"),
        ("effective_priority", 113.4567, "113.5"),
        ("urgent", True, "yes"),
        ("urgent", False, "no"),
        ("preemptions", 1, "1"),
        ("state", "running", "running"),
        ("score", 167.4079372882843, "167.41"),
        (None, 1.5e9, "2017-07-14T02:40:00Z"),
    ],
)
def test_describe_value(key: str | None, value: object, shown: str) -> None:
    assert describe_value(value, key) == shown


def test_changes_read_like_the_tables() -> None:
    before = {"allocation": {"gpu-015": [1]}, "gpu_seconds_lost": None, "state": "running", "urgent": False}
    after = {"allocation": {}, "gpu_seconds_lost": 467.36771392822266, "state": "pending", "urgent": False}
    assert changes(before, after) == [
        ("allocation", "gpu-015:1", "none"),
        ("gpu_seconds_lost", "-", "0.13 GPU-h"),
        ("state", "running", "pending"),
    ]
    text = repr(changes(before, after))
    assert "{" not in text and "e+" not in text


@pytest.mark.parametrize(
    ("value", "shown"),
    [(1e6, "1000000"), (1e12, "1000000000000"), (0.0, "0"), (-3.0, "-3"), (2.5, "2.5"), (2.049, "2"),
     (float("inf"), "inf")],
)  # fmt: skip
def test_format_priority(value: float, shown: str) -> None:
    assert format_priority(value) == shown


def test_format_number_has_no_exponent() -> None:
    assert format_number(1_234_567.0) == "1234567"
    assert format_number(1_234_567.891) == "1234567.89"
    assert format_gpu_indexes({"n": [3, 1, 2]}) == "n:1-3"
