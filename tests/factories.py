"""Model objects for tests, written the short way: times as epoch seconds, the v1 fields a test
does not care about left out (None, no allocation, no preemptions)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from gpuq.model import Job, JobClass, JobState, Node, PreemptionEvent, Snapshot, from_epoch

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
