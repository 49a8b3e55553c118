"""What shell completion offers: the job ids a command accepts, most recent first, and the values
of `--class`, `--user` and `--tenant` as the cluster has them.

Ids and descriptions come from outside (a backend, a snapshot): an id that a shell could not take
back as one word (spaces, control characters) is left out, and descriptions show only printable
text, since a newline would end the completion record it travels in.
"""

from __future__ import annotations

from collections.abc import Iterable

from gpuq.model import Job, JobState, Snapshot, job_id_key

__all__ = ["class_choices", "job_choices", "value_choices"]


def _printable(text: str) -> str:
    return "".join(c if c.isprintable() else "?" for c in text)


def _usable(value: str) -> bool:
    return bool(value) and value.isprintable() and not any(c.isspace() for c in value)


def _describe(job: Job) -> str:
    gpus = f"{job.gpus} GPU" + ("" if job.gpus == 1 else "s")
    return _printable(f"{job.state.value}, {gpus}, {job.user}, {job.job_class}")


def _recent_first(job: Job) -> tuple[float, tuple[object, ...]]:
    return job.submit_time.timestamp(), job_id_key(job.id)


def job_choices(snapshot: Snapshot, states: Iterable[JobState] | None = None) -> list[tuple[str, str]]:
    """(id, description) of the jobs in `states` (every job when None), the latest submitted first."""
    wanted = None if states is None else frozenset(states)
    jobs = [j for j in snapshot.jobs if (wanted is None or j.state in wanted) and _usable(j.id)]
    jobs.sort(key=_recent_first, reverse=True)
    return [(j.id, _describe(j)) for j in jobs]


def class_choices(snapshot: Snapshot) -> list[str]:
    """The cluster's classes, highest priority first (the order `queue --sort class` uses)."""
    ranks = {c.name: c.priority for c in snapshot.classes}
    names = {*ranks, *(j.job_class for j in snapshot.jobs)}
    return sorted((n for n in names if _usable(n)), key=lambda n: (-ranks.get(n, 0), n))


def value_choices(snapshot: Snapshot, field: str) -> list[str]:
    """The distinct users (``field="user"``) or tenants (``"tenant"``) of the snapshot's jobs."""
    return sorted({v for j in snapshot.jobs if _usable(v := getattr(j, field))})
