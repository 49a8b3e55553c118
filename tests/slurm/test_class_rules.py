"""Whom each Slurm class may preempt (`JobClass.may_preempt`), from the cluster's set-up: the QOS
``Preempt=`` lists under preempt/qos, the lower PriorityTiers under preempt/partition_prio,
nobody with preemption off (the captured qos set-up: test_backend_fake_cli.py)."""

from __future__ import annotations

from gpuq.backends.slurm.config import Partition, PreemptConfig, Qos
from gpuq.backends.slurm.snapshot import classes_of

PARTS = {
    "scavenger": Partition("scavenger", ("gpu1", "gpu2"), 1, "REQUEUE"),
    "batch": Partition("batch", ("gpu1", "gpu2"), 2, "REQUEUE", default=True),
    "batch2": Partition("batch2", ("gpu1",), 2, "REQUEUE"),
    "prio": Partition("prio", ("gpu1", "gpu2"), 3, "OFF"),
}


def test_a_partition_preempts_the_partitions_of_a_lower_tier() -> None:
    cfg = PreemptConfig("preempt/partition_prio", "REQUEUE", partitions=PARTS)
    allowed = {c.name: c.may_preempt for c in classes_of(cfg)}
    assert allowed == {"scavenger": (), "batch": ("scavenger",), "batch2": ("scavenger",),
                       "prio": ("batch", "batch2", "scavenger")}  # fmt: skip


def test_with_preemption_off_no_class_preempts() -> None:
    qos = {"normal": Qos("normal", 100, frozenset({"low"})), "low": Qos("low", 10)}
    for cfg in (PreemptConfig("preempt/none", "REQUEUE", qos=qos), PreemptConfig("preempt/qos", "OFF", qos=qos),
                PreemptConfig("preempt/partition_prio", "OFF", partitions=PARTS)):  # fmt: skip
        assert {c.may_preempt for c in classes_of(cfg)} == {()}
    assert {c.name: c.may_preempt for c in classes_of(PreemptConfig("preempt/qos", "REQUEUE", qos=qos))} == {
        "normal": ("low",), "low": ()}  # fmt: skip
