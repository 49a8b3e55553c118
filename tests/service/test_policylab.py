"""The policy lab's service: settings and their stops, the built-in workload, traces, the cache."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from gpuq.errors import BadInput, NotFound
from gpuq.policy.config import DEFAULT_POLICY, ClassPolicy
from gpuq.service.policylab import (
    STOPS,
    STRATEGIES,
    Lab,
    LabSettings,
    TraceRequest,
    builtin_trace,
    lab_classes,
    lab_config,
    load_trace,
    parse_lab_command,
    run_lab,
)

TRACES = Path(__file__).resolve().parents[1] / "fixtures" / "traces"


def test_settings_move_through_their_stops_and_stop_at_the_ends() -> None:
    settings = LabSettings()
    assert settings.stepped("delta", 1).delta == 200.0 and settings.stepped("delta", -1).delta == 50.0
    assert settings.stepped("delta", 3).delta == 500.0
    assert settings.stepped("grace", -1).grace_period_s == 120.0
    assert settings.stepped("checkpoint", -1).checkpoint_interval_s == 1200.0
    assert settings.stepped("sla", 1).sla_factor == 1.5
    low = LabSettings(delta=0.0)
    assert low.stepped("delta", -1) == low  # held at the first stop
    top = LabSettings(sla_factor=STOPS["sla"][-1])
    assert top.stepped("sla", 5) == top
    between = LabSettings(delta=75.0)  # (a value from elsewhere: the next stop each way)
    assert between.stepped("delta", 1).delta == 100.0 and between.stepped("delta", -1).delta == 50.0
    assert LabSettings(delta=5000.0).stepped("delta", -1).delta == 1000.0


def test_the_config_carries_the_settings_into_the_policy() -> None:
    config = lab_config(LabSettings(delta=50.0, grace_period_s=60.0, checkpoint_interval_s=600.0, sla_factor=2.0,
                                    nodes=4, gpus_per_node=4))  # fmt: skip
    assert (config.policy.delta, config.policy.grace_period_s) == (50.0, 60.0)
    assert config.checkpoint.interval_s == 600.0 and config.policy.default_checkpoint_interval_s == 600.0
    assert (config.nodes, config.gpus_per_node, config.event_log) == (4, 4, True)
    normal = next(c for c in config.classes or () if c.name == "normal")
    assert (normal.target_p95_s, normal.max_wait_s) == (14400.0, 28800.0)  # 2 × (2 h, 4 h)
    with pytest.raises(BadInput, match="sla"):
        lab_config(LabSettings(sla_factor=0.0))
    with pytest.raises(BadInput, match="delta"):
        lab_config(LabSettings(delta=float("nan")))


def test_the_sla_factor_scales_the_policys_own_overrides_too() -> None:
    policy = replace(DEFAULT_POLICY, classes={"high": ClassPolicy(target_p95_s=100.0, aging_rate=3.0),
                                              "gold": ClassPolicy(max_wait_s=50.0)})  # fmt: skip
    classes, scaled = lab_classes(LabSettings(sla_factor=0.5), policy)
    high = next(c for c in classes if c.name == "high")
    assert high.target_p95_s == 50.0 and high.max_wait_s == 1800.0
    assert scaled.classes["high"].target_p95_s == 50.0 and scaled.classes["high"].aging_rate == 3.0
    assert scaled.classes["gold"].max_wait_s == 25.0
    assert scaled.resolve_class(high, "high").target_p95_s == 50.0


def test_the_builtin_workload_is_seeded_and_preempts() -> None:
    one, again = builtin_trace(count=300), builtin_trace(count=300)
    assert one.jobs == again.jobs and len(one.jobs) == 300
    assert builtin_trace(seed=13, count=300).jobs != one.jobs
    assert one.by_id["1000"] is one.jobs[0]
    result = run_lab(one, LabSettings())
    assert [r.strategy for r in result.results] == list(STRATEGIES)
    assert all(r.preemptions > 0 and r.log for r in result.results)
    assert result.result("graceful").lost_gpu_hours < result.result("cancel").lost_gpu_hours


def test_a_trace_is_read_and_named(tmp_path: Path) -> None:
    trace = load_trace(str(TRACES / "jobs.jsonl"))
    assert trace.name.endswith("jobs.jsonl, 5 jobs") and len(trace.jobs) == 5 and not trace.truncated
    first = load_trace(str(TRACES / "jobs.jsonl"), limit=2)
    assert first.truncated and [j.id for j in first.jobs] == ["j1", "j2"] and "its first 2 jobs" in first.name
    with pytest.raises(NotFound, match="no such trace"):
        load_trace(str(tmp_path / "missing.jsonl"))
    empty = tmp_path / "empty.jsonl"
    empty.write_text('{"format":"gpuq.jobs/v1"}\n')
    with pytest.raises(BadInput, match="holds no job"):
        load_trace(str(empty))


def test_lab_commands() -> None:
    assert parse_lab_command("t.jsonl") == TraceRequest("t.jsonl")
    assert parse_lab_command("'my trace.csv' --preset helios --shape 4x8") == TraceRequest("my trace.csv", "helios",
                                                                                          "4x8")  # fmt: skip
    assert parse_lab_command("builtin") == TraceRequest() == parse_lab_command("")
    assert parse_lab_command("--shape 2x8") == TraceRequest(None, None, "2x8")
    for bad, message in (("a b", "one trace at a time"), ("--shape", "needs a value"), ("x --shape 8", "NODESxGPUS"),
                         ("x --color", "unknown option"), ("'unclosed", "quotation"),
                         ("--preset philly", "needs a trace path")):  # fmt: skip
        with pytest.raises(BadInput, match=message):
            parse_lab_command(bad)


def test_the_lab_keeps_results_by_settings_for_one_policy() -> None:
    lab = Lab(builtin_trace(count=200))
    first = lab.result(LabSettings())
    assert lab.result(LabSettings()) is first and lab.cached(LabSettings()) is first
    other = lab.result(LabSettings(delta=0.0))
    assert other is not first and lab.result(LabSettings()) is first
    stricter = replace(DEFAULT_POLICY, min_runtime_s=600.0)
    assert lab.cached(LabSettings(), stricter) is None
    assert lab.result(LabSettings(), stricter) is not first
    assert lab.cached(LabSettings()) is None  # (one policy at a time)


def test_a_job_too_big_for_the_lab_cluster_is_refused() -> None:
    with pytest.raises(BadInput, match=r"need more GPUs .* on a larger cluster: :lab TRACE --shape NODESxGPUS$"):
        run_lab(load_trace(str(TRACES / "jobs.jsonl")).jobs, LabSettings(nodes=1, gpus_per_node=4))
