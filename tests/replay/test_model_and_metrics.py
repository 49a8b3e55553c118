"""`ReplayResult`'s document (keys, round trip) and the measurements' building blocks."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from gpuq.model import DAY_S
from gpuq.policy.config import UNGUARDED_POLICY, Mode
from gpuq.replay.metrics import Series, most_in_a_day, percentiles
from gpuq.replay.model import ReplayConfig, ReplayResult
from gpuq.replay.run import replay
from gpuq.sla import nearest_rank

from .helpers import job

#: the issue's `gpuq replay -o json` keys
ISSUE_KEYS = {"jobs", "gpu_hours", "utilisation", "useful_utilisation", "wait", "classes", "preemptions",
              "max_preemptions_per_job_day", "lost_gpu_hours", "checkpoint_overhead_gpu_hours", "makespan_s",
              "events", "sim_wall_s"}  # fmt: skip
MODEL_KEYS = {"strategy", "preemptions_per_job", "preemptions_per_gpu_hour", "suggested_checkpoint_interval_s",
              "cancelled", "unfinished", "skipped", "never_started", "origin_s", "nodes", "gpus_per_node",
              "busy_gpu_hours", "idle_gpu_hours", "utilisation_series", "wait_percentiles", "log",
              "thrash"}  # fmt: skip
WAIT_KEYS = {"mean_s", "p50_s", "p95_s", "p99_s", "max_s", "count"}


def _sample() -> ReplayResult:
    jobs = [job(str(i), 37.0 * i, 900.0 + 11 * i, 1 + i % 4, cls=("low", "high", "normal")[i % 3],
                interval=300.0) for i in range(40)]  # fmt: skip
    return replay(
        jobs, ReplayConfig(policy=UNGUARDED_POLICY, nodes=1, gpus_per_node=8, strategy=Mode.REQUEUE, event_log=True)
    )


def test_the_document_has_the_issue_s_keys_then_the_model_s() -> None:
    doc = _sample().to_dict()
    assert set(doc) == ISSUE_KEYS | MODEL_KEYS
    assert list(doc)[: len(ISSUE_KEYS)] == [k for k in doc if k in ISSUE_KEYS]  # the issue's keys first
    assert set(doc["wait"]) == WAIT_KEYS
    for stats in doc["classes"].values():
        assert set(stats) == WAIT_KEYS | {"sla_breaches", "jobs", "target_p95_s"}
    assert set(doc["wait_percentiles"]) == {"all", *doc["classes"]}
    assert all(len(v) == 101 for v in doc["wait_percentiles"].values())


def test_a_result_survives_json_both_ways() -> None:
    result = _sample()
    assert result.preemptions > 0 and result.log
    back = ReplayResult.from_dict(json.loads(json.dumps(result.to_dict())))
    assert back == result


def test_percentiles_are_nearest_rank() -> None:
    waits = sorted(float(w) for w in range(1, 21))
    curve = percentiles(waits)
    assert curve[0] == 1.0 and curve[100] == 20.0
    assert curve[95] == nearest_rank(waits, 0.95) == 19.0
    assert curve[50] == 10.0
    result = _sample()
    ordered = result.wait_percentiles["all"]
    assert ordered[50] == result.wait.p50_s and ordered[95] == result.wait.p95_s and ordered[100] == result.wait.max_s


@given(st.lists(st.floats(0, 5 * DAY_S, allow_nan=False), max_size=30))
def test_most_preemptions_in_a_day(times: list[float]) -> None:
    times.sort()
    brute = max((sum(1 for u in times if t - DAY_S < u <= t) for t in times), default=0)
    assert most_in_a_day(times) == brute


def test_the_most_preemptions_of_one_job_in_a_day_is_reported() -> None:
    # The low job is preempted three times within an hour, then once more the next day.
    jobs = [job("1", 0, 30 * 3600, cls="low"), *(job(f"u{i}", t, 60, cls="urgent")
            for i, t in enumerate((1000, 2000, 3000, 100_000)))]  # fmt: skip
    result = replay(jobs, ReplayConfig(policy=UNGUARDED_POLICY, nodes=1, gpus_per_node=1, strategy=Mode.SUSPEND))
    assert result.preemptions == 4
    assert result.max_preemptions_per_job_day == 3


def test_the_utilisation_series_is_busy_share_per_bucket() -> None:
    series = Series(100.0)
    for busy in (800.0, 400.0, 0.0, 200.0):
        series.add(busy)
    assert series.points(8, 350.0) == ((0.0, 1.0), (100.0, 0.5), (200.0, 0.0), (300.0, 0.5))
    coarse = Series(1.0)
    for _ in range(1000):
        coarse.add(4.0)
    points = coarse.points(8, 1000.0)
    assert len(points) <= 400 and all(u == 0.5 for _, u in points)
    result = _sample()
    assert result.utilisation_series and all(0.0 <= u <= 1.0 for _, u in result.utilisation_series)
    area = sum(u * 8 * min(result.utilisation_series[1][0], result.makespan_s - t)
               for t, u in result.utilisation_series)  # fmt: skip
    assert abs(area - result.busy_gpu_hours * 3600) < 1e-6 * max(1.0, area)
