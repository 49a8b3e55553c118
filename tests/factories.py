"""Model objects for tests, written the short way: times as epoch seconds, the v1 fields a test
does not care about left out (None, no allocation, no preemptions)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from gpuq.model import Job, JobClass, JobState, Node, NodeState, PreemptionEvent, Snapshot, from_epoch

Moment = float | datetime | None


def at(moment: float | datetime) -> datetime:
    return moment if isinstance(moment, datetime) else from_epoch(moment)


def maybe(moment: Moment) -> datetime | None:
    return None if moment is None else at(moment)


def make_job(
    id: str,
    name: str = "job",
    user: str = "u",
    tenant: str = "t",
    job_class: str = "normal",
    priority: int = 0,
    state: JobState = JobState.PENDING,
    submit_time: float | datetime = 0.0,
    gpus: int = 1,
    *,
    eligible_time: Moment = None,
    start_time: Moment = None,
    end_time: Moment = None,
    allocation: Mapping[str, Sequence[int | None]] | None = None,
    preemption_times: Iterable[float | datetime] = (),
    last_checkpoint_time: Moment = None,
    exempt_until: Moment = None,
    **extras: Any,
) -> Job:
    return Job(
        id, name, user, tenant, job_class, priority, state, at(submit_time), maybe(eligible_time),
        maybe(start_time), maybe(end_time), gpus, {n: tuple(i) for n, i in (allocation or {}).items()},
        tuple(at(t) for t in preemption_times), maybe(last_checkpoint_time), maybe(exempt_until), **extras,
    )  # fmt: skip


def make_snapshot(
    cluster: str,
    backend: str,
    taken_at: float | datetime,
    classes: Sequence[JobClass] = (),
    nodes: Sequence[Node] = (),
    jobs: Sequence[Job] = (),
    events: Sequence[PreemptionEvent] = (),
) -> Snapshot:
    return Snapshot(cluster, backend, at(taken_at), tuple(classes), tuple(nodes), tuple(jobs), tuple(events))


#: the time of `owned_snapshot`
OWNED_T = 1_795_000_000.0


def owned_snapshot(owner: str = "PyTorchJob/ml/train") -> Snapshot:
    """Two pods of one owner (one running, one pending), a lone pod of another owner and a job of
    none: what the queue's grouping by owner is tested on, in the CLI and the console."""
    t = OWNED_T
    running, pending = JobState.RUNNING, JobState.PENDING
    classes = [JobClass("normal", 100, True)]
    nodes = [Node("gpu-1", 8, "H100", NodeState.ALLOCATED), Node("gpu-2", 8, "H100", NodeState.MIXED)]
    jobs = [
        make_job("ml/train-0", "train-0", "ann", "ml", "normal", 50, running, t - 900, 8, start_time=t - 600,
                 allocation={"gpu-1": range(8)}, owner=owner),
        make_job("ml/solo", "solo", "bo", "ml", "normal", 40, running, t - 800, 4, start_time=t - 700,
                 allocation={"gpu-2": range(4)}),
        make_job("ml/train-1", "train-1", "ann", "ml", "normal", 30, pending, t - 300, 8, owner=owner),
        make_job("ml/eval-0", "eval-0", "bo", "ml", "normal", 20, pending, t - 200, 2, owner="Job/ml/eval"),
    ]  # fmt: skip
    return make_snapshot("lab", "snapshot", t, classes, nodes, jobs)
