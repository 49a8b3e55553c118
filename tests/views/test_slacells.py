"""The console's SLA cells (`gpuq.views.slacells`): waits that agree with `gpuq.sla`, histogram
bins that hold every wait once, the P95 trend and its bounded history."""

from __future__ import annotations

import bisect

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuq.model import JobClass, JobState, Snapshot
from gpuq.policy.config import Policy
from gpuq.sla import WaitStats, nearest_rank, sla_report
from gpuq.views.columns import CONSOLE_SLA
from gpuq.views.sla import SlaRow
from gpuq.views.slacells import (
    ALL,
    LADDER,
    ClassWaits,
    P95History,
    class_waits,
    histogram_edges,
    judged_p95,
    sla_cells,
    sla_tones,
    sparkline,
    wait_histogram,
)
from tests.factories import make_job, make_snapshot
from tests.properties import examples

NOW = 1_800_000_000.0


def _snapshot() -> Snapshot:
    jobs = []
    for i, (cls, wait) in enumerate([("a", 30.0), ("a", 400.0), ("a", 4000.0), ("b", 0.0), ("b", 90.0)]):
        start = NOW - 100
        jobs.append(make_job(str(i), job_class=cls, state=JobState.RUNNING, submit_time=start - wait,
                             start_time=start, allocation={}))  # fmt: skip
    jobs.append(make_job("p1", job_class="a", state=JobState.PENDING, submit_time=NOW - 7200))
    jobs.append(make_job("p2", job_class="a", state=JobState.PENDING, submit_time=NOW - 50, eligible_time=NOW - 20))
    jobs.append(make_job("c1", job_class="b", state=JobState.CANCELLED, submit_time=NOW - 999))  # never started
    classes = (JobClass("a", target_p95_s=600), JobClass("b", target_p95_s=3600), JobClass("idle"))
    return make_snapshot("lab", "demo", NOW, classes, (), tuple(jobs))


def test_class_waits_are_the_waits_the_sla_report_counts() -> None:
    snap = _snapshot()
    waits = class_waits(snap)
    report = sla_report(snap, Policy(), snap.now)
    assert set(waits) == {*report.classes, ALL}
    for name, stats in [*report.classes.items(), (ALL, report.overall)]:
        w = waits[name]
        assert (len(w.started), len(w.pending)) == (stats.count, stats.pending)
        assert nearest_rank(w.started, 0.95) == stats.p95_s
        assert nearest_rank(w.started, 0.5) == stats.p50_s
        assert nearest_rank(sorted(w.started + w.pending), 0.95) == stats.p95_incl_pending_s
    assert waits["a"].started == (30.0, 400.0, 4000.0)
    assert waits["a"].pending == (20.0, 7200.0)  # eligibility, not submission, starts a wait
    assert waits["a"].oldest_pending_s == 7200.0 and waits["b"].oldest_pending_s is None
    assert waits["idle"] == ClassWaits() and waits["idle"].count == 0


def test_histogram_edges_follow_the_ladder() -> None:
    assert histogram_edges(0.0) == (0.0, 60.0)
    assert histogram_edges(59.0) == (0.0, 60.0)
    assert histogram_edges(60.0) == (0.0, 60.0, 300.0)
    assert histogram_edges(4000.0) == (0.0, 60.0, 300.0, 900.0, 1800.0, 3600.0, 7200.0)
    # past the ladder's end: the last bin is open
    # past the ladder's end: no upper edge (the last bin is open); too many: every other edge
    assert histogram_edges(10 * 86400.0) == LADDER[::2] == (0.0, 300.0, 1800.0, 7200.0, 28800.0, 172800.0)
    assert histogram_edges(10 * 86400.0, bins=4) == (0.0, 1800.0, 28800.0)
    with pytest.raises(ValueError):
        histogram_edges(1.0, bins=0)


def test_histogram_bins_and_labels() -> None:
    waits = class_waits(_snapshot())["a"]
    bins = wait_histogram(waits)
    assert [b.label for b in bins] == ["0s–1m", "1m–5m", "5m–15m", "15m–30m", "30m–1h00m", "1h00m–2h00m",
                                       "2h00m–4h00m"]  # fmt: skip
    assert [(b.started, b.pending) for b in bins] == [(1, 1), (0, 0), (1, 0), (0, 0), (0, 0), (1, 0), (0, 1)]
    assert sum(b.count for b in bins) == waits.count
    open_bins = wait_histogram(ClassWaits((5.0, 30 * 86400.0), ()), bins=8)
    assert open_bins[-1].high is None and open_bins[-1].label.startswith("≥") and open_bins[-1].started == 1


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.floats(0, 4e6, allow_nan=False), max_size=50), st.lists(st.floats(0, 4e6), max_size=20),
       st.integers(1, 12))  # fmt: skip
def test_every_wait_falls_in_exactly_its_bin(started: list[float], pending: list[float], bins: int) -> None:
    waits = ClassWaits(tuple(sorted(started)), tuple(sorted(pending)))
    found = wait_histogram(waits, bins)
    assert 1 <= len(found) <= bins
    assert sum(b.count for b in found) == waits.count
    assert sum(b.started for b in found) == len(started)
    lows = [b.low for b in found]
    for values, attr in ((started, "started"), (pending, "pending")):
        for w in values:
            b = found[bisect.bisect_right(lows, w) - 1]
            assert b.low <= w and (b.high is None or w < b.high)
            assert getattr(b, attr) > 0


def test_sparkline() -> None:
    assert sparkline([0.0, 50.0, 100.0], 10) == "▁▅█"
    assert sparkline([0.0, 0.0], 10) == "▁▁"
    assert sparkline([None, 10.0, None], 10) == " █ "
    assert sparkline([1.0, 2.0, 3.0, 4.0], 2) == "▆█"  # the newest points, scaled to what is shown
    assert sparkline([], 5) == "" and sparkline([1.0], 0) == ""


def test_history_is_bounded_and_ignores_points_that_are_not_newer() -> None:
    h = P95History(limit=3)
    assert h.add("k", 10.0, 1.0)
    assert not h.add("k", 10.0, 2.0)  # the same snapshot shown again
    assert not h.add("k", 5.0, 2.0)  # an answer that arrived late
    for t in (11.0, 12.0, 13.0):
        h.add("k", t, t)
    assert h.points("k") == ((11.0, 11.0), (12.0, 12.0), (13.0, 13.0))
    assert h.values("other") == [] and h.add("other", 1.0, None)
    assert h.values("other") == [None]


def _stats(p95: float | None, with_pending: float | None, target: float | None, breach: bool) -> WaitStats:
    return WaitStats(3, 1, 1.0, p95, p95, p95, with_pending, target, breach)


def test_cells_and_tones_line_up_with_the_columns() -> None:
    row = SlaRow("a", _stats(60.0, 700.0, 600.0, True))
    cells = sla_cells(row, ClassWaits((1.0,), (700.0,)), [10.0, 20.0], "lab")
    assert len(cells) == len(sla_tones(row)) == len(CONSOLE_SLA.columns)
    by = dict(zip(CONSOLE_SLA.names, cells, strict=True))
    assert (by["CLASS"], by["CLUSTER"], by["SLA"], by["OLDEST"], by["P95"], by["P95+PEND"], by["TARGET"]) == (
        "a", "lab", "BREACH", "11m", "1m", "11m", "10m")  # fmt: skip
    assert by["TREND"] == "▅█"
    tones = dict(zip(CONSOLE_SLA.names, sla_tones(row), strict=True))
    assert tones["SLA"] == "breach" and tones["PEND"] == "pending"
    ok = SlaRow("b", _stats(60.0, 60.0, 600.0, False))
    assert dict(zip(CONSOLE_SLA.names, sla_cells(ok, None, []), strict=True))["SLA"] == "ok"
    none = SlaRow(ALL, _stats(None, None, None, False))
    assert dict(zip(CONSOLE_SLA.names, sla_cells(none, None, []), strict=True))["SLA"] == "-"
    assert judged_p95(none.stats) is None and judged_p95(row.stats) == 700.0
