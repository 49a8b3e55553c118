"""What an action prints reads like the tables (no Python reprs, no exponents, times to the
second), and says which clock is which: the cluster's, and the audit log's wall time."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from click.testing import Result

Run = Callable[..., Result]
CLOCKS = re.compile(r"^  cluster time (\S+); wall time (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ) \(the audit log's clock\)$",
                    re.MULTILINE)  # fmt: skip


def test_preempt_shows_allocation_and_clocks(gpuq: Run, fake: Any) -> None:
    result = gpuq("--backend", "fake", "preempt", "101", "--dry-run")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "allocation: gpu-01:0-3 -> none (would change)" in out
    assert "start_time: 2026-11-29T10:00:00Z -> - (would change)" in out
    assert "{" not in out and "[0, 1" not in out
    (clocks,) = CLOCKS.findall(out)
    assert clocks[0] == "2026-11-29T18:00:00Z"  # the snapshot's own time, not the wall clock


def test_exempt_until_is_shown_to_the_second(gpuq: Run, fake: Any) -> None:
    result = gpuq("--backend", "fake", "exempt", "101", "--until", "2026-11-29T20:00:00.75Z", "--yes")
    assert result.exit_code == 0, result.output
    assert "exempt_until: - -> 2026-11-29T20:00:00Z (changed)" in result.stdout
    assert ".75" not in result.stdout
    assert CLOCKS.search(result.stdout)


def test_urgent_reads_yes_and_its_priority_is_a_whole_number(gpuq: Run, fake: Any) -> None:
    result = gpuq("--backend", "fake", "bump", "203", "--urgent", "--yes")
    assert result.exit_code == 0, result.output
    assert "urgent: no -> yes (changed)" in result.stdout
    assert "1e+06" not in result.stdout
    queue = gpuq("--backend", "fake", "queue", "--no-headers", "-o", "wide", "-t", "PD")
    row = next(line.split() for line in queue.stdout.splitlines() if line.startswith("203 "))
    assert "1000000" in row and "1e+06" not in queue.stdout
    job = gpuq("--backend", "fake", "job", "203")
    assert "1000000 effective" in job.stdout and "1e+06" not in job.stdout


def test_audit_says_which_clock_is_which(gpuq: Run, fake: Any) -> None:
    assert gpuq("--backend", "fake", "preempt", "101", "--dry-run").exit_code == 0
    result = gpuq("audit", "-o", "wide")
    assert result.exit_code == 0, result.output
    assert "TIME: wall time, when gpuq acted; times in CHANGE: cluster time" in result.stdout
    row = next(line for line in result.stdout.splitlines() if " preempt " in line)
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ ", row)  # to the second, no fraction
    assert "allocation: gpu-01:0-3 -> none" in row
