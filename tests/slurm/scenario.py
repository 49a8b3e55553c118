"""Fill the lab's GPUs, ask gpuq what slurmctld will preempt, submit, and see what it did."""

from __future__ import annotations

import time
from dataclasses import dataclass

from gpuq.backends.base import NativePlan
from gpuq.backends.slurm import SlurmBackend
from gpuq.model import PreviewRequest
from tests.slurm import lab


@dataclass(frozen=True)
class Outcome:
    plan: NativePlan
    predicted: set[str]
    preempted: set[str]
    fill_ids: list[str]
    urgent_id: str


def run(
    fill: list[tuple[int, str]],
    gpus: int,
    *,
    qos: str | None = None,
    partition: str | None = None,
    fill_partition: str | None = None,
) -> Outcome:
    """`fill`: (gpus, qos) per low job, submitted half a second apart so their ages differ."""
    lab.cancel_all()
    ids = []
    for n, fill_qos in fill:
        ids.append(lab.sbatch(gpus=n, qos=fill_qos or None, partition=fill_partition, name="fill"))
        time.sleep(0.5)
    lab.wait_running(ids)
    backend = SlurmBackend()
    snap = backend.snapshot()
    hints = {key: value for key, value in (("qos", qos), ("partition", partition)) if value}
    plan = backend.native_preview(snap, PreviewRequest(gpus=gpus, hints=hints))
    assert plan is not None
    offset = lab.ctld_log_offset()
    urgent = lab.sbatch(gpus=gpus, qos=qos, partition=partition, name="urgent")
    lab.wait_running([urgent], timeout=60)
    time.sleep(1.0)  # the requeue log lines are written before the preemptor starts; be generous
    return Outcome(plan, {v.id for v in plan.victims}, lab.preempted_since(offset), ids, urgent)
