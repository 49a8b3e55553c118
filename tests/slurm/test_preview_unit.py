"""The slurmctld preemption model on hand-built states (the lab tests check it against slurmctld)."""

from __future__ import annotations

from types import MappingProxyType

from gpuq.backends.base import NativeVictim
from gpuq.backends.slurm.config import Partition, PreemptConfig, Qos
from gpuq.backends.slurm.preview import predict_preemption
from gpuq.model import Job, JobState, Node, NodeState, PreviewRequest, Snapshot
from tests.factories import make_job, make_snapshot

NOW = 1_800_000_000.0
QOS = {
    "low": Qos("low", 10, preempt_mode="REQUEUE"),
    "lowgrace": Qos("lowgrace", 10, exempt_time_s=600.0, preempt_mode="REQUEUE"),
    "normal": Qos("normal", 100, frozenset({"low"}), preempt_mode="REQUEUE"),
    "urgent": Qos("urgent", 1000, frozenset({"low", "lowgrace", "normal"}), preempt_mode="REQUEUE"),
}
PARTS = {"gpu": Partition("gpu", ("gpu1", "gpu2"), 1, "REQUEUE", default=True)}
CFG = PreemptConfig("preempt/qos", "REQUEUE", qos=QOS, partitions=PARTS)


def job(
    jid: str, node: str, idx: tuple[int, ...], qos: str = "low", started: float = 600.0, partition: str = "gpu"
) -> Job:
    return make_job(
        jid,
        "j",
        "u",
        "t",
        qos,
        0,
        JobState.RUNNING,
        NOW - 1000,
        len(idx),
        start_time=NOW - started,
        allocation=MappingProxyType({node: idx}),
        qos=qos,
        partition=partition,
    )


def snap(*jobs: Job) -> Snapshot:
    return make_snapshot("lab", "slurm", NOW, nodes=(Node("gpu1", 4), Node("gpu2", 4)), jobs=jobs)


def victims(s: Snapshot, gpus: int, qos: str = "urgent", cfg: PreemptConfig = CFG, **kw: str) -> list[str]:
    hints = {key: kw.pop(key) for key in ("partition",) if key in kw}
    if qos:
        hints["qos"] = qos
    plan = predict_preemption(s, PreviewRequest(gpus=gpus, hints=hints, **kw), cfg, NOW)  # type: ignore[arg-type]
    return sorted(v.id for v in plan.victims)  # slurmctld preempts them as one set


def test_fits_on_free_gpus_preempts_nothing() -> None:
    s = snap(job("1", "gpu1", (0, 1, 2, 3)), job("2", "gpu2", (0, 1)))
    plan = predict_preemption(s, PreviewRequest(gpus=2, hints={"qos": "urgent"}), CFG, NOW)
    assert not plan.would_preempt
    assert plan.nodes == ("gpu2",)


def test_takes_only_as_many_as_needed_in_job_order() -> None:
    s = snap(*(job(str(i), "gpu1" if i < 5 else "gpu2", ((i - 1) % 4,)) for i in range(1, 9)))
    assert victims(s, 2) == ["1", "2"]
    assert victims(s, 4) == ["1", "2", "3", "4"]


def test_reorder_pass_drops_an_unneeded_victim() -> None:
    # In order 1 (1 GPU), 2 (2 GPUs): removing both first fits; slurmctld's re-sort keeps only 2.
    s = snap(
        job("1", "gpu1", (0,)),
        job("2", "gpu1", (1, 2)),
        job("3", "gpu1", (3,)),
        *(job(str(i), "gpu2", (i - 4,), qos="normal") for i in range(4, 8)),
    )
    assert victims(s, 2) == ["2"]


def test_lower_qos_priority_goes_first_and_preempt_lists_are_respected() -> None:
    s = snap(
        job("1", "gpu1", (0, 1), qos="normal"),
        job("2", "gpu1", (2, 3), qos="normal"),
        job("3", "gpu2", (0, 1)),
        job("4", "gpu2", (2, 3)),
    )
    assert victims(s, 2) == ["3"]
    # normal may preempt only low; urgent-held GPUs are off limits for it.
    s2 = snap(job("1", "gpu1", (0, 1, 2, 3), qos="urgent"), job("2", "gpu2", (0, 1, 2, 3), qos="normal"))
    assert victims(s2, 1, qos="normal") == []


def test_preempt_exempt_time_protects_young_jobs() -> None:
    s = snap(
        *(job(str(i), "gpu1", (i - 1,), qos="lowgrace", started=60) for i in range(1, 5)),
        *(job(str(i), "gpu2", (i - 5,)) for i in range(5, 9)),
    )
    plan = predict_preemption(s, PreviewRequest(gpus=2, hints={"qos": "urgent"}), CFG, NOW)
    assert sorted(v.id for v in plan.victims) == ["5", "6"]
    assert plan.nodes == ("gpu2",)
    assert any("PreemptExemptTime" in n for n in plan.notes)
    old = snap(
        *(job(str(i), "gpu1", (i - 1,), qos="lowgrace", started=900) for i in range(1, 5)),
        job("9", "gpu2", (0, 1, 2, 3), qos="urgent"),
    )
    assert victims(old, 2) == ["1", "2"]


def test_youngest_first_parameter() -> None:
    cfg = PreemptConfig("preempt/qos", "REQUEUE", preempt_parameters="youngest_first", qos=QOS, partitions=PARTS)
    # Youngest first ignores QOS priority: the two most recently started jobs on a node go.
    s = snap(
        *(job(str(i), "gpu1", (i - 1,), started=1000 - i) for i in range(1, 5)),
        *(job(str(i), "gpu2", (i - 5,), qos="normal", started=2000) for i in range(5, 9)),
    )
    assert victims(s, 2, cfg=cfg) == ["3", "4"]
    assert victims(s, 2) == ["1", "2"]  # default order: lowest QOS priority, then job order


def test_partition_priority_tiers() -> None:
    parts = {
        "low": Partition("low", ("gpu1", "gpu2"), 1, "REQUEUE", default=True),
        "high": Partition("high", ("gpu1", "gpu2"), 10, "OFF"),
    }
    cfg = PreemptConfig("preempt/partition_prio", "REQUEUE", partitions=parts)
    s = snap(*(job(str(i), "gpu1" if i < 5 else "gpu2", ((i - 1) % 4,), partition="low") for i in range(1, 9)))
    assert victims(s, 3, qos="", cfg=cfg, partition="high") == ["1", "2", "3"]
    assert victims(s, 1, qos="", cfg=cfg, partition="low") == []  # same tier never preempts


def test_pending_job_request_and_down_nodes() -> None:
    pending = make_job("9", "u", "u", "t", "urgent", 0, JobState.PENDING, NOW, 2, qos="urgent", partition="gpu")
    s = snap(*(job(str(i), "gpu1" if i < 5 else "gpu2", ((i - 1) % 4,)) for i in range(1, 9)), pending)
    assert victims(s, 0, qos="", job_id="9") == ["1", "2"]
    nodes = (Node("gpu1", 4, state=NodeState.DOWN), Node("gpu2", 4))
    down = make_snapshot("lab", "slurm", NOW, nodes=nodes, jobs=s.jobs)
    assert victims(down, 2) == ["5", "6"]


def test_mode_of_resolves_own_then_cluster_mode_without_flags() -> None:
    cfg = PreemptConfig(preempt_type="preempt/qos", preempt_mode="GANG,SUSPEND")
    assert cfg.mode_of() == "SUSPEND"  # as scontrol prints it: the GANG flag first
    assert cfg.mode_of("requeue") == "REQUEUE"  # a QOS's own mode wins
    assert cfg.mode_of("WITHIN,CANCEL") == "CANCEL"
    assert PreemptConfig(preempt_mode="GANG").mode_of() == "OFF"


def test_victims_are_typed_with_slurmctlds_own_priority_and_reason() -> None:
    s = snap(
        job("1", "gpu1", (0, 1), qos="normal"),
        job("2", "gpu1", (2, 3), qos="normal"),
        job("3", "gpu2", (0, 1)),
        job("4", "gpu2", (2, 3)),
    )
    plan = predict_preemption(s, PreviewRequest(gpus=2, hints={"qos": "urgent"}), CFG, NOW)
    (victim,) = plan.victims
    assert isinstance(victim, NativeVictim)
    assert (victim.id, victim.nodes, victim.gpus) == ("3", ("gpu2",), 2)
    assert victim.priority == 10  # the QOS priority under preempt/qos, not the sort key
    assert victim.reason == "QOS urgent may preempt low; PreemptMode=REQUEUE"
    assert victim.details == {"qos": "low", "partition": "gpu", "mode": "requeue"}
    doc = plan.to_dict()["victims"][0]
    assert doc == {
        "id": "3",
        "nodes": ["gpu2"],
        "gpus": 2,
        "priority": 10,
        "reason": "QOS urgent may preempt low; PreemptMode=REQUEUE",
        "qos": "low",
        "partition": "gpu",
        "mode": "requeue",
    }
    # A victim on two nodes lists both.
    wide = snap(
        make_job("5", "j", "u", "t", "low", 0, JobState.RUNNING, NOW - 1000, 8, start_time=NOW - 600,
                 allocation={"gpu1": (0, 1, 2, 3), "gpu2": (0, 1, 2, 3)}, qos="low", partition="gpu"),
    )  # fmt: skip
    (both,) = predict_preemption(wide, PreviewRequest(gpus=4, hints={"qos": "urgent"}), CFG, NOW).victims
    assert both.nodes == ("gpu1", "gpu2") and both.gpus == 8


def test_victims_under_partition_priority_carry_the_priority_tier() -> None:
    parts = {
        "low": Partition("low", ("gpu1", "gpu2"), 1, "REQUEUE", default=True),
        "high": Partition("high", ("gpu1", "gpu2"), 10, "OFF"),
    }
    cfg = PreemptConfig("preempt/partition_prio", "REQUEUE", partitions=parts)
    s = snap(*(job(str(i), "gpu1" if i < 5 else "gpu2", ((i - 1) % 4,), partition="low") for i in range(1, 9)))
    plan = predict_preemption(s, PreviewRequest(gpus=1, hints={"partition": "high"}), cfg, NOW)
    (victim,) = plan.victims
    assert victim.priority == 1
    assert victim.reason == "partition high (PriorityTier 10) outranks low (PriorityTier 1); PreemptMode=REQUEUE"
    assert victim.details["partition"] == "low" and victim.details["mode"] == "requeue"
