"""SLA maths against a brute-force nearest-rank reference."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuq.model import Job, JobClass, JobState
from gpuq.policy.config import ClassPolicy, Policy
from gpuq.sla import nearest_rank, sla_report
from tests.factories import make_job, make_snapshot
from tests.properties import examples

NOW = 1_800_000_000.0


def reference_rank(values: list[float], q: float) -> float | None:
    """Counts, for each candidate, how many values are <= it: the smallest v with count >= q*n."""
    if not values:
        return None
    n = len(values)
    for v in sorted(values):
        if sum(1 for w in values if w <= v) >= q * n - 1e-9:
            return v
    return max(values)


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.floats(0, 1e6, allow_nan=False), max_size=60), st.sampled_from([0.5, 0.95, 0.99]))
def test_nearest_rank_matches_reference(values: list[float], q: float) -> None:
    assert nearest_rank(sorted(values), q) == reference_rank(values, q)


def test_nearest_rank_known_values() -> None:
    values = [float(v) for v in range(1, 21)]
    assert nearest_rank(values, 0.95) == 19  # ceil(0.95 * 20) = 19
    assert nearest_rank(values, 0.5) == 10
    assert nearest_rank([5.0], 0.99) == 5.0
    assert nearest_rank([], 0.95) is None


def job(i: int, cls: str, wait: float | None, *, pending_age: float | None = None, started_ago: float = 0) -> Job:
    if pending_age is not None:
        return make_job(str(i), "j", "u", "t", cls, 1, JobState.PENDING, NOW - pending_age, 1)
    assert wait is not None
    start = NOW - started_ago
    return make_job(str(i), "j", "u", "t", cls, 1, JobState.COMPLETED, start - wait, 1,
               eligible_time=start - wait, start_time=start, end_time=start + 10)


def test_pending_jobs_change_p95_and_breach() -> None:
    jobs = [job(i, "a", 60.0) for i in range(18)] + [job(98 + i, "a", None, pending_age=7200) for i in range(2)]
    snap = make_snapshot("c", "demo", NOW, (JobClass("a", target_p95_s=600),), (), tuple(jobs))
    report = sla_report(snap, Policy(), NOW)
    stats = report.classes["a"]
    assert stats.count == 18 and stats.pending == 2
    assert stats.p95_s == 60.0
    assert stats.p95_incl_pending_s == 7200.0
    assert stats.breach  # only visible with the pending job counted
    doc = report.to_dict()
    assert set(doc["classes"]["a"]) == {"count", "pending", "p50_s", "p95_s", "p99_s", "max_s",
                                        "p95_incl_pending_s", "target_p95_s", "breach"}
    assert doc["since"] is None and doc["overall"]["count"] == 18


def test_policy_overrides_target_and_since_window() -> None:
    jobs = [job(1, "a", 100.0, started_ago=10), job(2, "a", 5000.0, started_ago=90000)]
    snap = make_snapshot("c", "demo", NOW, (JobClass("a", target_p95_s=600),), (), tuple(jobs))
    assert sla_report(snap, Policy(), NOW).classes["a"].breach
    assert not sla_report(snap, Policy(), NOW, since=NOW - 86400).classes["a"].breach
    loose = Policy(classes={"a": ClassPolicy(target_p95_s=6000)})
    assert sla_report(snap, loose, NOW).classes["a"].target_p95_s == 6000
    assert not sla_report(snap, loose, NOW).classes["a"].breach


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 10_000), st.booleans()), max_size=40))
def test_report_matches_reference_per_class(rows: list[tuple[str, int, bool]]) -> None:
    jobs = [job(i, c, None, pending_age=w) if p else job(i, c, float(w)) for i, (c, w, p) in enumerate(rows)]
    snap = make_snapshot("c", "demo", NOW, (), (), tuple(jobs))
    report = sla_report(snap, Policy(), NOW)
    for name in {"a", "b"}:
        started = [float(w) for c, w, p in rows if c == name and not p]
        every = [float(w) for c, w, _ in rows if c == name]
        if not every:
            assert name not in report.classes
            continue
        stats = report.classes[name]
        assert stats.p95_s == reference_rank(started, 0.95)
        assert stats.p99_s == reference_rank(started, 0.99)
        assert stats.p95_incl_pending_s == reference_rank(every, 0.95)
        assert stats.max_s == (max(started) if started else None)
        assert stats.count + stats.pending == len(every)
    assert math.isclose(report.overall.count, sum(1 for _, _, p in rows if not p))


@pytest.mark.parametrize("q", [0.0, 1.0])
def test_rank_bounds(q: float) -> None:
    assert nearest_rank([1.0, 2.0, 3.0], q) == (1.0 if q == 0 else 3.0)
