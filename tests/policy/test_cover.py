"""The greedy plan for a request larger than any node (`cover.greedy_cover`), on plain numbers:
the one the engine (`engine._plan_multi`) and the simulator (`victims.greedy_multi_node`) run."""

from __future__ import annotations

from gpuq.model import job_id_key
from gpuq.policy.cover import Share, greedy_cover


def share(job_id: str, cost: float, gpus: int) -> Share:
    return (cost, gpus, job_id_key(job_id), job_id)


def test_victims_go_cheapest_per_gpu_first_then_the_redundant_ones_are_dropped_dearest_first() -> None:
    # per GPU: c 5, b 7.5, a 10. c and b free 5 of the 4 needed; b alone frees 4, so c, the
    # cheaper but redundant one, is dropped.
    found = greedy_cover([share("a", 10.0, 1), share("b", 30.0, 4), share("c", 5.0, 1)], 4)
    assert found is not None
    picked, freed = found
    assert [s[3] for s in picked] == ["b"] and freed == 4


def test_ties_go_to_more_gpus_then_the_job_id_order_and_the_plan_lists_cheapest_first() -> None:
    found = greedy_cover([share("10", 8.0, 2), share("9", 4.0, 1), share("2", 16.0, 4), share("1", 4.0, 1)], 6)
    assert found is not None
    picked, freed = found
    # all cost 4 per GPU: 2 (4 GPUs), 10 (2 GPUs) make 6; nothing is redundant
    assert [s[3] for s in picked] == ["10", "2"] and freed == 6


def test_too_few_gpus_is_no_plan() -> None:
    assert greedy_cover([share("a", 1.0, 2), share("b", 1.0, 1)], 4) is None
    assert greedy_cover([], 1) is None
