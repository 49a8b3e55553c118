"""How many nodes a pending Slurm job may run on, as it asked (`Job.max_nodes`), read from the
captured 22.05 output, and gpuq's plan for it: a job that asked for one node is never planned
across nodes."""

from __future__ import annotations

import json
from typing import Any

from gpuq.backends.slurm.jobs import asked_nodes
from gpuq.backends.slurm.jsonread import parse_jobs_json
from gpuq.backends.slurm.text import parse_squeue_format
from gpuq.model import JobState, Node
from gpuq.policy.config import UNGUARDED_POLICY  # (the cluster's rules alone: Δ 0, no minimum runtime)
from gpuq.policy.engine import plan_preemption, request_for_job
from tests.factories import make_job, make_snapshot
from tests.slurm.samples import live


def test_per_node_gpu_requests_run_on_the_nodes_they_asked_for() -> None:
    # every captured job asks --gres=gpu:N (per node) on one node
    text = parse_squeue_format(live("squeue-format.txt"), "qos").jobs
    data = parse_jobs_json(json.loads(live("squeue.json")), "qos").jobs
    for jobs in (text, data):
        assert {j.max_nodes for j in jobs if j.is_pending} == {1}
        assert {j.max_nodes for j in jobs if not j.is_pending} == {None}  # (only a request needs it)


def _with(job: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {**job, **fields}


def test_a_gpus_per_job_request_spans_nodes_unless_it_set_a_maximum() -> None:
    doc = json.loads(live("squeue.json"))
    pending = next(j for j in doc["jobs"] if j["job_state"] == "PENDING")
    per_job = _with(pending, tres_per_node="", tres_per_job="gres:gpu:8")
    spans, one = parse_jobs_json({"jobs": [per_job, _with(per_job, max_nodes=1)]}, "qos").jobs
    assert (spans.gpus, spans.max_nodes) == (8, None)  # sbatch --gpus=8
    assert (one.gpus, one.max_nodes) == (8, 1)  # sbatch --gpus=8 -N1
    assert asked_nodes(0, True, 2) == 2 and asked_nodes(3, True, 2) == 3 and asked_nodes(0, False, 1) is None


def test_a_job_that_asked_for_one_node_is_never_planned_across_nodes() -> None:
    """The lab's two 4-GPU nodes full of low jobs: an 8-GPU urgent job that asked -N1 can never
    start; the same job without the limit would preempt on both nodes."""
    now = 1_800_000_000.0
    run = JobState.RUNNING
    low = [make_job(f"{i}", "l", "u", "t", "low", 10, run, now - 900, 4, start_time=now - 600,
                    allocation={f"gpu{i}": range(4)}, qos="low") for i in (1, 2)]  # fmt: skip
    asked = make_job("9", "u", "u", "t", "urgent", 1000, JobState.PENDING, now - 60, 8, qos="urgent", max_nodes=1)
    free = make_job("10", "u", "u", "t", "urgent", 1000, JobState.PENDING, now - 60, 8, qos="urgent")
    snap = make_snapshot("lab", "slurm", now, (), (Node("gpu1", 4), Node("gpu2", 4)), (*low, asked, free))
    wide = plan_preemption(snap, UNGUARDED_POLICY, request_for_job(free), now)
    assert wide.would_preempt and wide.nodes == ("gpu1", "gpu2")
    one = plan_preemption(snap, UNGUARDED_POLICY, request_for_job(asked), now)
    assert (one.feasible, one.victims, one.nodes) == (False, (), ())
    assert one.blocked == "asks for 8 GPUs on one node, but the largest node has 4"
