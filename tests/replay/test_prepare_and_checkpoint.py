"""A trace's conversion (classes, priorities, refusals) and the checkpoint model."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from gpuq.errors import BadInput
from gpuq.model import JobClass
from gpuq.policy.config import UNGUARDED_POLICY, Mode
from gpuq.replay.checkpoint import check_model, interval_for, recorded_interval, young_daly
from gpuq.replay.model import CheckpointModel, ReplayConfig
from gpuq.replay.prepare import prepare
from gpuq.replay.run import compare, replay
from gpuq.sim.workload import DEFAULT_CLASSES

from .helpers import ORIGIN, job, replay_logged

NORMAL = next(c for c in DEFAULT_CLASSES if c.name == "normal")


def test_unknown_classes_take_the_normal_class_s_parameters_under_their_own_name() -> None:
    prepared = prepare([job("1", 0, 60, cls="gpu-lab"), job("2", 5, 60, cls=None), job("3", 9, 60, cls="low")],
                       ReplayConfig(policy=UNGUARDED_POLICY))  # fmt: skip
    classes = {c.name: c for c in prepared.classes}
    assert classes["gpu-lab"] == JobClass("gpu-lab", NORMAL.priority, NORMAL.preemptible, NORMAL.target_p95_s,
                                          NORMAL.max_wait_s)  # fmt: skip
    assert [s.job_class for s in prepared.specs] == ["gpu-lab", "normal", "low"]
    result = replay([job("1", 0, 60, cls="gpu-lab")], ReplayConfig(policy=UNGUARDED_POLICY))
    assert set(result.classes) == {"gpu-lab"}
    assert result.classes["gpu-lab"].target_p95_s == NORMAL.target_p95_s


def test_priority_comes_from_the_trace_else_the_class() -> None:
    prepared = prepare(
        [job("1", 0, 60, cls="high"), job("2", 0, 60, cls="high", priority=7)], ReplayConfig(policy=UNGUARDED_POLICY)
    )
    assert [s.priority for s in prepared.specs] == [500, 7]


def test_ids_are_kept_and_times_count_from_the_first_submit() -> None:
    prepared = prepare([job("a-17", 100, 60), job("0042", 130, 60)], ReplayConfig(policy=UNGUARDED_POLICY))
    assert [(s.id, s.submit_time) for s in prepared.specs] == [("a-17", 0.0), ("0042", 30.0)]
    assert prepared.origin == ORIGIN + 100


def test_jobs_that_never_fit_are_refused_by_name() -> None:
    jobs = [job("1", 0, 60, 8), *(job(f"big{i}", 0, 60, 64 + i) for i in range(7))]
    with pytest.raises(BadInput) as caught:
        replay(jobs, ReplayConfig(policy=UNGUARDED_POLICY, nodes=2, gpus_per_node=8))
    message = str(caught.value)
    assert "7 job(s) need more GPUs than the 2x8 cluster has (16)" in message
    assert "big0 (64 GPUs), big1 (65 GPUs)" in message and "and 2 more" in message
    assert "--cluster-shape" in message


def test_jobs_without_gpus_are_left_out_and_counted() -> None:
    result = replay([job("1", 0, 60, 0), job("2", 0, 60, 2)], ReplayConfig(policy=UNGUARDED_POLICY))
    assert (result.jobs, result.skipped) == (1, 1)
    assert result.gpu_hours == 2 * 60 / 3600


@pytest.mark.parametrize(
    ("bad", "words"),
    [(job("1", 0, -5.0), "duration -5.0"), (job("1", 0, math.nan), "duration nan"),
     (job("1", 0, 60, -1), "asks for -1 GPUs")],
)  # fmt: skip
def test_impossible_values_are_refused(bad: object, words: str) -> None:
    with pytest.raises(BadInput, match=words):
        replay([bad], ReplayConfig(policy=UNGUARDED_POLICY))  # type: ignore[list-item]


def test_a_duplicate_id_is_refused() -> None:
    with pytest.raises(BadInput, match="job 1: appears twice in the trace"):
        replay([job("1", 0, 60), job("1", 5, 60)], ReplayConfig(policy=UNGUARDED_POLICY))


@pytest.mark.parametrize("shape", [(0, 8), (4, 0), (2_000_000, 8), (4, 4096)])
def test_a_bad_shape_is_refused(shape: tuple[int, int]) -> None:
    with pytest.raises(BadInput, match="cluster shape"):
        replay([job("1", 0, 60)], ReplayConfig(policy=UNGUARDED_POLICY, nodes=shape[0], gpus_per_node=shape[1]))


def test_the_interval_is_the_class_s_else_the_model_s_else_the_job_s_else_the_policy_s() -> None:
    model = CheckpointModel(interval_s=1200.0, class_intervals={"low": 300.0, "batch": 0.0})
    assert interval_for(model, "low", 900.0, 60.0) == 300.0
    assert interval_for(model, "batch", 900.0, 60.0) is None  # 0: saves nothing
    assert interval_for(model, "normal", 900.0, 60.0) == 1200.0
    assert interval_for(CheckpointModel(), "normal", 900.0, 60.0) == 900.0
    assert interval_for(CheckpointModel(), "normal", None, 60.0) == 60.0
    assert interval_for(CheckpointModel(), "normal", None, 0.0) is None


def test_recorded_checkpoint_times_give_an_interval() -> None:
    assert recorded_interval(600.0, (), None) == 600.0
    assert recorded_interval(None, (1000.0, 1600.0, 2200.0), 400.0) == 600.0
    assert recorded_interval(None, (1000.0, 1600.0), None) == 600.0
    assert recorded_interval(None, (1000.0,), None) is None
    assert recorded_interval(None, (), 5.0) is None
    trace = [job("1", 0, 60)]
    spaced = type(trace[0])("2", ORIGIN, 60.0, 1, start_time=ORIGIN, checkpoints=(ORIGIN + 300, ORIGIN + 600))
    assert [s.checkpoint_interval_s for s in prepare([spaced], ReplayConfig(policy=UNGUARDED_POLICY)).specs] == [300.0]


def test_young_daly() -> None:
    assert young_daly(30.0, 3600.0) == math.sqrt(2 * 30 * 3600)
    assert young_daly(0.0, 3600.0) is None
    assert young_daly(30.0, None) is None


@pytest.mark.parametrize(
    "model",
    [CheckpointModel(save_cost_s=-1.0), CheckpointModel(restore_cost_s=math.inf),
     CheckpointModel(interval_s=math.nan), CheckpointModel(class_intervals={"low": -5.0})],
)  # fmt: skip
def test_bad_checkpoint_numbers_are_refused(model: CheckpointModel) -> None:
    with pytest.raises(BadInput):
        check_model(model)
    with pytest.raises(BadInput):
        replay([job("1", 0, 60)], ReplayConfig(policy=UNGUARDED_POLICY, checkpoint=model))


def test_saves_lengthen_a_run_and_count_as_overhead() -> None:
    # 2 GPUs, 3000 s of work, a save of 30 s after every 600 s of work: 4 saves (none at the end).
    model = CheckpointModel(save_cost_s=30.0, interval_s=600.0)
    result = replay([job("1", 0, 3000, 2)], ReplayConfig(policy=UNGUARDED_POLICY, checkpoint=model))
    assert result.makespan_s == 3000 + 4 * 30
    assert result.checkpoint_overhead_gpu_hours * 3600 == 2 * 4 * 30
    assert math.isclose(result.useful_utilisation * result.makespan_s * 512, 2 * 3000)


def test_a_restart_after_a_requeue_restores_first() -> None:
    # The victim saved at 600 s (cost 0), is preempted at 1000 s, restarts at 1100 s: it restores
    # for 60 s, then does the 3000 − 600 s left.
    model = CheckpointModel(restore_cost_s=60.0, interval_s=600.0)
    jobs = [job("1", 0, 3000, cls="low"), job("2", 1000, 100, cls="urgent")]
    config = ReplayConfig(nodes=1, gpus_per_node=1, strategy=Mode.REQUEUE, checkpoint=model,
                          policy=replace(UNGUARDED_POLICY, default_aging_rate=0.0))  # fmt: skip
    result, log = replay_logged(jobs, config)
    finish = next(e.time_s for e in log.events if e.event == "finish" and e.job == "1")
    assert finish == 1100 + 60 + 2400
    assert result.lost_gpu_hours * 3600 == 400
    assert result.checkpoint_overhead_gpu_hours * 3600 == 60


def test_the_suggested_interval_follows_the_preemptions_seen() -> None:
    jobs = [job("1", 0, 20_000, cls="low"), *(job(str(i), 2000.0 * i, 60, cls="urgent") for i in range(2, 8))]
    config = ReplayConfig(policy=UNGUARDED_POLICY, nodes=1, gpus_per_node=1, strategy=Mode.REQUEUE,
                          checkpoint=CheckpointModel(save_cost_s=30.0, interval_s=600.0))  # fmt: skip
    result = replay(jobs, config)
    assert result.preemptions == 6
    # the jobs ran (each once, whatever its GPUs) for the whole makespan between them
    run_s = result.busy_gpu_hours * 3600
    assert result.suggested_checkpoint_interval_s == pytest.approx(math.sqrt(2 * 30 * run_s / 6))
    assert (
        replay(jobs, ReplayConfig(policy=UNGUARDED_POLICY, nodes=1, gpus_per_node=1)).suggested_checkpoint_interval_s
        is None
    )


def test_compare_replays_each_strategy_in_order() -> None:
    jobs = [job("1", 0, 3600, cls="low", interval=600.0), job("2", 1000, 100, cls="urgent")]
    order = [Mode.SUSPEND, Mode.CANCEL, Mode.REQUEUE]
    results = compare(jobs, ReplayConfig(policy=UNGUARDED_POLICY, nodes=1, gpus_per_node=1), order)
    assert [r.strategy for r in results] == ["suspend", "cancel", "requeue"]
    assert [r.lost_gpu_hours * 3600 for r in results] == [0.0, 1000.0, 400.0]
