"""Classes and priorities for trace jobs that lack them, by documented, seeded rules.

- `--class-from COLUMN`: the column's value is the job's class (readers of CSV traces take it
  from the row; for JSON traces `class_from_field` takes it from a `TraceJob` field such as
  `tenant`, `user`, `name` or `state`). An empty value leaves the job without a class.
- A job still without a class gets one of the demo workload's classes (`DEFAULT_CLASSES`),
  drawn with the demo's weights (urgent 3, high 12, normal 45, low 25, batch 15) by a seeded
  hash: ``u = int(blake2b(f"{seed}:{job.id}", digest_size=8)) / 2**64``, and the class is the
  first whose cumulative share of the weights exceeds `u`. Deterministic per seed and job id,
  independent of the order jobs are read in; another seed gives another draw.
- A job without a priority gets its class's priority (urgent 1000, high 500, normal 100, low
  10, batch 1); a class not among those (from the trace) keeps None, for the policy to resolve.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from itertools import accumulate
from typing import Final

from gpuq.errors import BadInput
from gpuq.model import JobClass
from gpuq.textsafe import visible
from gpuq.trace.record import TraceJob

__all__ = [
    "CLASS_FIELDS",
    "default_weights",
    "assign_classes",
    "class_from_field",
    "default_classes",
    "seeded_class",
]

#: the `TraceJob` fields `--class-from` may name for a trace that has no columns
CLASS_FIELDS: Final = ("job_class", "tenant", "user", "name", "state")


def default_classes() -> tuple[JobClass, ...]:
    """The demo workload's classes (`gpuq.sim.workload.DEFAULT_CLASSES`: one definition)."""
    from gpuq.sim.workload import DEFAULT_CLASSES

    return DEFAULT_CLASSES


def default_weights() -> dict[str, int]:
    """The weights the demo workload draws its classes with (`gpuq.sim.workload`'s own table;
    a class missing from it weighs 10 there and here)."""
    from gpuq.sim.workload import _CLASS_WEIGHTS  # (private there; one table for both)

    return dict(_CLASS_WEIGHTS)


def seeded_class(job_id: str, seed: int, names: Sequence[str], cumulative: Sequence[float]) -> str:
    """The class the seeded rule draws for `job_id` (see the module's docstring)."""
    digest = hashlib.blake2b(f"{seed}:{job_id}".encode("utf-8", "surrogatepass"), digest_size=8).digest()
    u = int.from_bytes(digest, "big") / 2.0**64 * cumulative[-1]
    return names[min(bisect_right(cumulative, u), len(names) - 1)]


def assign_classes(
    jobs: Iterable[TraceJob],
    *,
    seed: int = 0,
    classes: Sequence[JobClass] | None = None,
    weights: dict[str, int] | None = None,
) -> Iterator[TraceJob]:
    """`jobs` with a class and a priority each, by the rules above (streaming)."""
    known = tuple(default_classes() if classes is None else classes)
    table = weights if weights is not None else default_weights()
    names = [c.name for c in known]
    cumulative = list(accumulate(float(table.get(n, 10)) for n in names))
    priorities = {c.name: c.priority for c in known}
    # seeded_class inlined: it runs once per job of a million-job trace
    prefix, scale, last = f"{seed}:".encode(), cumulative[-1] / 2.0**64, len(names) - 1
    blake2b, from_bytes = hashlib.blake2b, int.from_bytes
    for job in jobs:
        name = job.job_class or None
        if name is None:
            digest = blake2b(prefix + job.id.encode("utf-8", "surrogatepass"), digest_size=8).digest()
            name = names[min(bisect_right(cumulative, from_bytes(digest, "big") * scale), last)]
        priority = job.priority if job.priority is not None else priorities.get(name)
        if name != job.job_class or priority != job.priority:
            # (positional: dataclasses.replace costs more than reading the job did)
            job = TraceJob(job.id, job.submit_time, job.duration_s, job.gpus, name, priority, job.user, job.tenant,
                           job.name, job.start_time, job.end_time, job.state, job.checkpoint_interval_s,
                           job.checkpoints)  # fmt: skip
        yield job


def class_from_field(jobs: Iterable[TraceJob], field: str) -> Iterator[TraceJob]:
    """`jobs` with each one's class taken from its `field` (one of `CLASS_FIELDS`)."""
    if field not in CLASS_FIELDS:
        raise BadInput(f"--class-from {visible(field)!r}: this trace has no columns; name a field: "
                       f"{', '.join(CLASS_FIELDS)}")  # fmt: skip
    return _from_field(jobs, field)


def _from_field(jobs: Iterable[TraceJob], field: str) -> Iterator[TraceJob]:
    for job in jobs:
        value = getattr(job, field) or None
        yield job if value == job.job_class else replace(job, job_class=value)
