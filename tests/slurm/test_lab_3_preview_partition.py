"""preempt/partition_prio on the real lab: jobs in partition `high` (PriorityTier 10) preempt
jobs in `low` (PriorityTier 1); gpuq predicts exactly the jobs slurmctld preempts."""

from __future__ import annotations

import pytest

from gpuq.backends.slurm import SlurmBackend
from tests.slurm import lab, scenario

pytestmark = [pytest.mark.slurm, pytest.mark.usefixtures("partition_lab")]


def test_reads_the_partition_set_up() -> None:
    cfg = SlurmBackend().preempt_config(fresh=True)
    assert cfg.by_partition
    assert (cfg.partitions["low"].priority_tier, cfg.partitions["high"].priority_tier) == (1, 10)
    classes = {c.name: c for c in SlurmBackend().snapshot().classes}
    assert classes["low"].preemptible
    assert not classes["high"].preemptible


def test_several_victims() -> None:
    out = scenario.run([(1, "")] * 8, 2, partition="high", fill_partition="low")
    assert len(out.preempted) == 2
    assert out.predicted == out.preempted


def test_single_victim_of_mixed_sizes() -> None:
    out = scenario.run(
        [(1, ""), (2, ""), (1, ""), (1, ""), (1, ""), (1, ""), (1, "")], 2, partition="high", fill_partition="low"
    )
    assert out.predicted == out.preempted == {out.fill_ids[1]}
    assert lab.states()[out.fill_ids[1]][0] == "PENDING"


def test_fits_without_preemption() -> None:
    out = scenario.run([(1, "")] * 5, 3, partition="high", fill_partition="low")
    assert out.preempted == out.predicted == set()


def test_same_tier_never_preempts() -> None:
    lab.cancel_all()
    ids = [lab.sbatch(gpus=1, partition="low") for _ in range(8)]
    lab.wait_running(ids)
    backend = SlurmBackend()
    from gpuq.model import PreviewRequest

    plan = backend.native_preview(backend.snapshot(), PreviewRequest(gpus=1, hints={"partition": "low"}))
    assert plan is not None
    assert not plan.would_preempt
    waiting = lab.sbatch(gpus=1, partition="low")
    lab.wait_for(lambda: lab.states()[waiting][1] in ("Resources", "Priority"), 20, "the job to pend")
    assert all(lab.states()[i][0] == "RUNNING" for i in ids)
