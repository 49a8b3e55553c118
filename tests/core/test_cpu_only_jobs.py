"""A job without GPUs (CPU-only work: data preparation, evaluation) runs on GPU clusters too. It
has an empty allocation, and nothing that checks placements may assume a node lists a GPU."""

from __future__ import annotations

import json

import pytest

from gpuq.backends.slurm.jobs import allocation_from
from gpuq.model import JobState, Node, Snapshot
from gpuq.model.codec import decode_snapshot, encode_snapshot
from gpuq.model.placement import mark_conflicts, placement_conflicts
from tests.factories import make_job, make_snapshot

NOW = 1_800_000_000.0


def test_a_job_without_gpus_has_an_empty_allocation() -> None:
    assert allocation_from(("gpu1",), 0, None) == {}
    assert allocation_from(("gpu1", "gpu2"), 0, None) == {}
    assert allocation_from(("gpu1",), 0, {"gpu1": ()}) == {}


@pytest.mark.parametrize(
    ("nodes", "gpus", "expected"),
    [
        (("a", "b"), 4, {"a": 2, "b": 2}),
        (("a", "b"), 3, {"a": 2, "b": 1}),  # an uneven split still adds up to the job's GPUs
        (("a", "b", "c"), 1, {"a": 1}),  # nodes where the job holds no GPU are not listed
    ],
)
def test_gpus_spread_over_nodes_add_up(nodes: tuple[str, ...], gpus: int, expected: dict[str, int]) -> None:
    allocation = allocation_from(nodes, gpus, None)
    assert {n: len(i) for n, i in allocation.items()} == expected
    assert sum(map(len, allocation.values())) == gpus


def test_detail_keeps_only_nodes_with_gpus() -> None:
    assert allocation_from(("a", "b"), 2, {"a": (0, 1), "b": ()}) == {"a": (0, 1)}


def _cpu_only_beside_gpu_jobs(cpu_allocation: dict[str, tuple[int | None, ...]]) -> Snapshot:
    nodes = (Node("gpu1", 4), Node("gpu2", 4))
    jobs = (
        make_job("10", state=JobState.RUNNING, gpus=0, start_time=NOW - 60, allocation=cpu_allocation),
        make_job("11", state=JobState.RUNNING, gpus=2, start_time=NOW - 60, allocation={"gpu2": (0, 1)}),
        make_job("12", state=JobState.PENDING, gpus=0),
    )
    return make_snapshot("c", "slurm", NOW, nodes=nodes, jobs=jobs)


@pytest.mark.parametrize("cpu_allocation", [{}, {"gpu1": ()}, {"gpu2": ()}])
def test_placement_checks_take_a_job_without_gpus(cpu_allocation: dict[str, tuple[int | None, ...]]) -> None:
    """Running alone on a node, beside a GPU job, or written as a node with no GPUs: no conflict,
    and no exception (`max()` of an empty list was one)."""
    snapshot = _cpu_only_beside_gpu_jobs(cpu_allocation)
    assert placement_conflicts(snapshot) == ()
    assert mark_conflicts(snapshot) is snapshot


def test_snapshot_file_with_a_job_without_gpus_loads() -> None:
    snapshot = _cpu_only_beside_gpu_jobs({"gpu1": ()})
    data = encode_snapshot(snapshot)
    loaded = decode_snapshot(data, "cpu.json")
    assert [j.gpus for j in loaded.jobs] == [0, 2, 0]
    assert json.loads(data)["jobs"][0]["allocation"] == {"gpu1": []}
