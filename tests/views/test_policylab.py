"""The policy lab's views: the strategies side by side and one job's timeline, from real replays
of constructed traces (every number below is worked out by hand from the policy's rules)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gpuq.policy.config import UNGUARDED_POLICY
from gpuq.service.policylab import STRATEGIES, LabSettings, builtin_trace, run_lab
from gpuq.trace.record import TraceJob
from gpuq.views.policylab import job_order, job_timeline, lab_table, preempted_count, settings_line

#: one 8-GPU node; no checkpoint costs, so every loss is a plain product
ONE_NODE = LabSettings(delta=0.0, grace_period_s=300.0, checkpoint_interval_s=600.0, nodes=1, gpus_per_node=8,
                       checkpoint_cost_s=0.0, restore_cost_s=0.0)  # fmt: skip


def two_jobs(preemptor_class: str = "high", priority: int = 500) -> list[TraceJob]:
    """A low job holds the node from 0 for an hour; at 1000 s a higher one wants it for 10 minutes."""
    return [TraceJob("a", 0.0, 3600.0, 8, "low", 10), TraceJob("b", 1000.0, 600.0, 8, preemptor_class, priority)]


def rows(settings: LabSettings = ONE_NODE, jobs: list[TraceJob] | None = None) -> dict[str, tuple[str, ...]]:
    return {row.label: row.cells for row in lab_table(run_lab(jobs or two_jobs(), settings, policy=UNGUARDED_POLICY))}


def test_the_table_compares_the_strategies_as_the_rules_say() -> None:
    result = run_lab(two_jobs(), ONE_NODE, policy=UNGUARDED_POLICY)
    table = {row.label: row for row in lab_table(result)}
    # cancel loses all 1000 s of a's work (8 × 1000 GPU-s), requeue what followed its checkpoint at
    # 600 s (8 × 400), graceful nothing: a saves during its 5-minute grace period
    assert table["Lost GPU-h"].cells == ("2.22", "0.89", "0.00")
    assert table["Lost GPU-h"].best == (False, False, True)
    # useful work / held GPU-time: cancel 600 s of b over a makespan of 1600 s; requeue 4200 of 4600
    assert table["Useful utilisation"].cells == ("37.5%", "91.3%", "100.0%")
    # only graceful makes b wait: for a's grace period (mean over the two jobs: 150 s)
    assert table["Mean wait"].cells == ("0s", "0s", "2m")
    assert table["P95 wait"].cells == ("0s", "0s", "5m")
    assert table["Mean wait"].best == (True, True, False)
    assert table["Preemptions"].cells == ("1", "1", "1") and table["Preemptions"].best == (False, False, False)
    assert table["Jobs cancelled"].cells == ("1", "0", "0")
    assert "Jobs unfinished" not in table  # (shown only when a strategy left jobs unfinished)
    assert [row.label for row in lab_table(result)][:8] == [
        "Utilisation", "Useful utilisation", "Mean wait", "P95 wait", "SLA breaches", "Preemptions", "Lost GPU-h",
        "Checkpoint overhead GPU-h",
    ]  # fmt: skip


def test_delta_above_the_gap_stops_the_preemption() -> None:
    # b outranks a by 490 points: Δ = 500 lets it wait for a's end at 3600 s (2600 s after submitting)
    table = rows(replace(ONE_NODE, delta=500.0))
    assert table["Preemptions"] == ("0", "0", "0")
    assert table["Lost GPU-h"] == ("0.00", "0.00", "0.00")
    assert table["P95 wait"] == ("43m", "43m", "43m")  # 2600 s


def test_the_sla_factor_moves_the_breaches() -> None:
    # under graceful, an urgent b waits 300 s: within urgent's 10-minute target, over a quarter of it
    jobs = two_jobs("urgent", 1000)
    assert rows(ONE_NODE, jobs)["SLA breaches"] == ("0", "0", "0")
    assert rows(replace(ONE_NODE, sla_factor=0.25), jobs)["SLA breaches"] == ("0", "0", "1")


def test_the_timeline_of_the_preempted_job() -> None:
    result = run_lab(two_jobs(), ONE_NODE, policy=UNGUARDED_POLICY)
    assert job_order(result) == ("a", "b")  # a was preempted (three times in all), b never
    assert preempted_count(result) == 1
    timeline = job_timeline(result, "a")
    assert timeline is not None
    assert timeline.heading == "job a · 8 GPUs · low · runs 1h00m · submitted at +0s"
    cancel, requeue, graceful = timeline.lives
    assert [life.strategy for life in timeline.lives] == list(STRATEGIES)
    assert [(s.at_s, s.event, s.other, s.lost_gpu_s) for s in cancel.steps] == [
        (0.0, "submit", None, 0.0), (0.0, "start", None, 0.0), (1000.0, "preempt", "b", 8000.0),
        (1000.0, "cancel", "b", 0.0),
    ]  # fmt: skip
    assert (cancel.outcome, cancel.outcome_at_s, cancel.lost_gpu_s) == ("cancelled", 1000.0, 8000.0)
    # requeue: back when b ends (1600 s) from its checkpoint at 600 s: 3000 s more, done at 4600 s
    assert [(s.at_s, s.text) for s in requeue.steps] == [
        (0.0, "submitted"), (0.0, "started"), (1000.0, "preempted for b, lost 0.89 GPU-h"),
        (1600.0, "resumed from its checkpoint"), (4600.0, "finished"),
    ]  # fmt: skip
    # graceful: signalled at 1000 s, saved and stopped at 1300 s; b runs to 1900 s, then a's last 2300 s
    assert [(s.at_s, s.text) for s in graceful.steps] == [
        (0.0, "submitted"), (0.0, "started"), (1000.0, "signalled for b: 5m to save"), (1300.0, "saved and stopped"),
        (1900.0, "resumed from its checkpoint"), (4200.0, "finished"),
    ]  # fmt: skip
    assert graceful.summary == "waited 0s · preempted 1× · lost 0.00 GPU-h · finished +1h10m"
    assert requeue.steps[2].when == "+16m"
    other = job_timeline(result, "b")
    assert other is not None and [life.preempted_others for life in other.lives] == [1, 1, 1]
    assert [life.wait_s for life in other.lives] == [0.0, 0.0, 300.0]
    assert other.submit_s == 1000.0
    assert job_timeline(result, "nope") is None


def test_without_checkpoints_requeue_loses_the_whole_run() -> None:
    result = run_lab(two_jobs(), replace(ONE_NODE, checkpoint_interval_s=0.0), policy=UNGUARDED_POLICY)
    timeline = job_timeline(result, "a")
    assert timeline is not None
    requeue = timeline.lives[1]
    assert requeue.lost_gpu_s == 8000.0
    assert [s.text for s in requeue.steps][3] == "restarted from the beginning"
    assert settings_line(result.settings)[2] == ("checkpoint", "off")


@pytest.mark.parametrize("settings", [LabSettings(), LabSettings(delta=0.0, grace_period_s=0.0),
                                      LabSettings(restore_cost_s=900.0, grace_period_s=60.0)],
                         ids=["defaults", "no-delta-no-grace", "costly-restore"])  # fmt: skip
def test_the_losses_of_every_timeline_add_up_to_the_replays(settings: LabSettings) -> None:
    """The timeline follows each job's progress again (with checkpoint costs): over every job, what
    it says each preemption lost is what the replay counted."""
    result = run_lab(builtin_trace(count=500), settings, policy=UNGUARDED_POLICY)
    totals = [0.0] * len(STRATEGIES)
    for job in job_order(result):
        timeline = job_timeline(result, job)
        assert timeline is not None
        for i, life in enumerate(timeline.lives):
            totals[i] += life.lost_gpu_s
    assert all(r.preemptions > 0 for r in result.results)
    assert result.results[0].lost_gpu_hours > 0
    for total, replayed in zip(totals, result.results, strict=True):
        assert total / 3600 == pytest.approx(replayed.lost_gpu_hours, rel=1e-9, abs=1e-9)


def test_the_order_puts_the_most_preempted_first() -> None:
    result = run_lab(builtin_trace(count=500), LabSettings(), policy=UNGUARDED_POLICY)
    order = job_order(result)
    counts = [sum(1 for r in result.results for _, e, j, _, _ in r.log if e == "preempt" and j == job) for job in order]
    assert len(order) == 500 and counts == sorted(counts, reverse=True) and counts[0] > counts[-1]
