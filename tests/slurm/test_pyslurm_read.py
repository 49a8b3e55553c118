"""The pyslurm read path on objects shaped like pyslurm's documented 25.11 ``Job`` API.

Unverified against a live Slurm 25.11 (none available); these tests pin the mapping so it yields
the same model as the CLI readers, and that a mismatched pyslurm is never used.
"""

from __future__ import annotations

import sys
import types
from datetime import UTC, datetime
from typing import Any

import pytest

from gpuq.backends.slurm.pyslurm_read import jobs_from_pyslurm, load_pyslurm
from gpuq.model import JobState, from_epoch
from tests.slurm.samples import stand_in

T0 = 1_795_976_256


class FakeJob:
    """Attributes and method named as in pyslurm's Job (25.11 docs); values as libslurm gives them."""

    def __init__(self, **kw: Any) -> None:
        defaults: dict[str, Any] = {
            "name": "train", "user_name": "alice", "account": "research", "partition": "gpu", "qos": "low",
            "priority": 2000, "state": "PENDING", "state_reason": "Resources", "submit_time": T0,
            "eligible_time": T0, "start_time": T0 + 3600, "end_time": 0, "array_id": None,
            "array_task_id": None, "array_tasks_waiting": None, "heterogeneous_id": None,
            "heterogeneous_offset": None, "admin_comment": None, "comment": None, "requeue_count": 0,
            "gres_per_node": {"gpu": 1}, "num_nodes": 1, "allocated_nodes": None, "layout": {},
        }  # fmt: skip
        defaults.update(kw)
        self.__dict__.update(defaults)

    def get_resource_layout_per_node(self) -> dict[str, Any]:
        return self.layout  # type: ignore[no-any-return]


def test_mapping_matches_the_cli_model() -> None:
    jobs = [
        FakeJob(id=9, state="RUNNING", state_reason="None", qos="urgent", start_time=T0 + 4,
                gres_per_node={"gpu:h100": 4}, allocated_nodes="gpu1",
                layout={"gpu1": {"cpu_ids": "0", "memory": 1000,
                                 "gres": {"gpu:h100": {"count": "4", "indexes": "0-3"}}}}),
        FakeJob(id=17, array_id=16, array_task_id=2, requeue_count=1, state_reason="BeginTime"),
        FakeJob(id=16, array_id=16, array_tasks_waiting="0-1,3"),
        FakeJob(id=7, heterogeneous_id=6, heterogeneous_offset=1,
                admin_comment="gpuq:exempt-until=2026-11-29T23:00:00Z;gpuq:prev-qos=low"),
        FakeJob(id=8, state="SUSPENDED", state_reason="None", allocated_nodes="gpu2",
                layout={"gpu2": {"gres": {"gpu:h100": {"count": "1", "indexes": "3"}}}}),
        FakeJob(id=30, state="RUNNING", state_reason="None", gres_per_node={"gpu": 2}, num_nodes=2,
                allocated_nodes="gpu[1-2]", layout={}),
    ]  # fmt: skip
    read = jobs_from_pyslurm(jobs, "qos")
    by_id = {j.id: j for j in read.jobs}
    assert set(by_id) == {"9", "16_2", "16_[0-1,3]", "6+1", "8", "30"}
    assert by_id["9"].state is JobState.RUNNING
    assert dict(by_id["9"].allocation) == {"gpu1": (0, 1, 2, 3)}
    assert by_id["9"].gpus == 4
    assert by_id["9"].start_time == from_epoch(T0 + 4)
    assert by_id["9"].job_class == "urgent"
    assert by_id["8"].state is JobState.SUSPENDED
    assert dict(by_id["8"].allocation) == {"gpu2": (3,)}
    # No layout: GPUs spread over the allocated nodes, indexes unknown.
    assert dict(by_id["30"].allocation) == {"gpu1": (None, None), "gpu2": (None, None)}
    assert by_id["16_2"].start_time is None  # pending: the expected start is not a start
    assert by_id["6+1"].exempt_until == datetime(2026, 11, 29, 23, tzinfo=UTC)
    assert read.restarts == {"16_2": 1}
    assert read.raw_ids["16_2"] == "17"


@pytest.fixture
def fake_pyslurm(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    module = types.ModuleType("pyslurm")
    module.__version__ = "22.05.1"  # type: ignore[attr-defined]
    loads: list[int] = []

    class Jobs:
        @staticmethod
        def load() -> dict[int, FakeJob]:
            loads.append(1)
            return {64: FakeJob(id=64, name="from-pyslurm")}

    module.Jobs = Jobs  # type: ignore[attr-defined]
    module.loads = loads  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pyslurm", module)
    return module


def test_only_a_matching_release_is_used(fake_pyslurm: types.ModuleType) -> None:
    assert load_pyslurm("22.05.8") is fake_pyslurm
    assert load_pyslurm("24.11.5") is None
    assert load_pyslurm("") is None


def test_backend_reads_through_pyslurm_when_it_matches(
    fake_pyslurm: types.ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = stand_in(history_s=0)
    monkeypatch.setattr(
        backend.configs, "show_config", lambda fresh=False: {"SLURM_VERSION": "22.05.8", "PreemptType": "preempt/qos"}
    )
    read = backend.queue_reader.read(lambda: "qos")
    assert backend.read_path == "pyslurm"
    assert [j.name for j in read.jobs] == ["from-pyslurm"]
    assert fake_pyslurm.loads == [1]  # type: ignore[attr-defined]
    fake_pyslurm.__version__ = "25.11.2"  # type: ignore[attr-defined]
    other = stand_in(history_s=0)
    monkeypatch.setattr(other.configs, "show_config", lambda fresh=False: {"SLURM_VERSION": "22.05.8"})
    assert other.queue_reader._read_pyslurm(lambda: "qos") is None
