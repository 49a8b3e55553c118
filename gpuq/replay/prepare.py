"""A trace's jobs as the simulator takes them (`JobSpec`s), read in one pass.

- Ids are kept; submit times become seconds since the trace's first (earliest) submit.
- A job's class is the trace's, else ``normal``; a class the replay's classes do not know
  replays as a class of its own name with the ``normal`` class's priority, preemptibility and
  SLA (so its jobs are neither favoured nor starved for a name gpuq has never seen).
- Its priority is the trace's, else its class's.
- Its checkpoint interval is chosen by `checkpoint.interval_for`.
- A job that asks for no GPU is left out (counted as `skipped`), as `sla --trace` leaves it out;
  one that needs more GPUs than the whole cluster has can never run, and the replay is refused,
  naming such jobs.
- A job that the trace says never started (a recorded state, no start) and that records no run
  time (it was still waiting, or was cancelled waiting) is left out too (counted as
  `never_started`): what it would need is unknown, and it is never replayed as a job of no
  length. (A trace that records neither starts nor states, a synthetic one, cannot say that.)

Only plain numbers and the few strings the simulator needs (id, class, tenant; tenants shared)
are kept: a `TraceJob` is dropped as soon as it is converted.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace

from gpuq.errors import BadInput
from gpuq.model import JobClass
from gpuq.replay.checkpoint import interval_for, recorded_interval
from gpuq.replay.model import ReplayConfig
from gpuq.sim.workload import DEFAULT_CLASSES, JobSpec
from gpuq.textsafe import visible
from gpuq.trace.record import TraceJob

__all__ = ["DEFAULT_CLASS", "Prepared", "classes_with", "prepare"]

#: the class of a job whose trace names none, and the one unknown classes take after
DEFAULT_CLASS = "normal"
#: how many of the jobs that never fit an error names
_NAMED = 5


@dataclass(slots=True)
class Prepared:
    """The trace, converted: what every strategy of a comparison replays."""

    specs: list[JobSpec]
    classes: tuple[JobClass, ...]
    origin: float  # POSIX time of the earliest submit (time 0)
    gpu_seconds: float  # what the jobs need: Σ GPUs × duration
    last_submit: float  # seconds since the origin
    longest_s: float  # the longest duration
    skipped: int  # jobs that asked for no GPU
    never_started: int = 0  # jobs that never started and recorded no run time


def classes_with(base: tuple[JobClass, ...], name: str) -> JobClass:
    """A class for `name`, unknown among `base`: the ``normal`` class's parameters (else
    gpuq's defaults) under its own name."""
    template = next((c for c in base if c.name == DEFAULT_CLASS), None)
    if template is None:
        template = next(c for c in DEFAULT_CLASSES if c.name == DEFAULT_CLASS)
    return JobClass(name, template.priority, template.preemptible, template.target_p95_s, template.max_wait_s)


def _submitted(spec: JobSpec) -> float:
    return spec.submit_time


def _bad(job: TraceJob, problem: str) -> BadInput:
    return BadInput(f"job {visible(job.id)}: {problem}")


def prepare(jobs: Iterable[TraceJob], config: ReplayConfig) -> Prepared:
    """Convert the trace in one pass (BadInput: a job with an impossible value, a duplicate id,
    jobs that can never fit the cluster). The jobs come out in submit order."""
    known = tuple(config.classes if config.classes is not None else DEFAULT_CLASSES)
    by_name: dict[str, JobClass] = {c.name: c for c in known}
    added: list[JobClass] = []
    capacity = config.nodes * config.gpus_per_node
    checkpoint = config.checkpoint
    policy_default = config.policy.default_checkpoint_interval_s
    # Without per-class or replay-wide intervals a job saves at its own, else the policy's.
    fixed = None
    if not checkpoint.class_intervals and checkpoint.interval_s is None:
        fixed = policy_default if policy_default > 0 else None
    tenants: dict[str, str] = {}
    specs: list[JobSpec] = []
    seen: set[str] = set()
    too_big: list[str] = []
    too_big_count = 0
    origin: float | None = None
    earliest = math.inf
    gpu_seconds = 0.0
    longest = 0.0
    last = -math.inf
    skipped = 0
    never_started = 0
    in_order = True
    for job in jobs:
        gpus, duration, submit = job.gpus, job.duration_s, job.submit_time
        if not math.isfinite(submit):
            raise _bad(job, f"submit time {submit!r} is not a time")
        if not (math.isfinite(duration) and duration >= 0):
            raise _bad(job, f"duration {duration!r} is not a duration of 0 s or more")
        if gpus <= 0:
            if gpus < 0:
                raise _bad(job, f"asks for {gpus} GPUs")
            skipped += 1
            continue
        if duration == 0 and job.start_time is None and job.state:  # (its run time is unknown, not nothing)
            never_started += 1
            continue
        if job.id in seen:
            raise _bad(job, "appears twice in the trace (job ids must be unique)")
        seen.add(job.id)
        if gpus > capacity:
            too_big_count += 1
            if len(too_big) < _NAMED:
                too_big.append(f"{visible(job.id)} ({gpus} GPUs)")
            continue
        name = job.job_class or DEFAULT_CLASS
        cls = by_name.get(name)
        if cls is None:
            cls = by_name[name] = classes_with(known, name)
            added.append(cls)
        if origin is None:
            origin = submit
        if submit < earliest:
            earliest = submit
        rel = submit - origin
        if rel < last:
            in_order = False
        else:
            last = rel
        if duration > longest:
            longest = duration
        gpu_seconds += gpus * duration
        recorded = job.checkpoint_interval_s
        if job.checkpoints or (recorded is not None and not 0 < recorded < math.inf):  # (the common case first)
            recorded = recorded_interval(recorded, job.checkpoints, job.start_time)
        if fixed is None:
            interval = interval_for(checkpoint, name, recorded, policy_default)
        else:
            interval = recorded if recorded is not None else fixed
        tenant = job.tenant
        tenant = tenants.setdefault(tenant, tenant) if tenant else "default"
        priority = cls.priority if job.priority is None else job.priority
        # (positional: JobSpec's own field order)
        specs.append(JobSpec(job.id, rel, float(duration), gpus, priority, name, "job", "user", tenant, interval))
    if too_big_count:
        more = f" and {too_big_count - len(too_big)} more" if too_big_count > len(too_big) else ""
        raise BadInput(
            f"{too_big_count} job(s) need more GPUs than the {config.nodes}x{config.gpus_per_node} cluster has "
            f"({capacity}): {', '.join(too_big)}{more}; give a larger --cluster-shape"
        )
    if origin is None:
        return Prepared([], known, 0.0, 0.0, 0.0, 0.0, skipped, never_started)
    if earliest < origin:  # (an unsorted trace: time 0 is its earliest submit, not its first line's)
        shift = origin - earliest
        specs = [replace(s, submit_time=s.submit_time + shift) for s in specs]
        last += shift
        origin = earliest
    if not in_order:
        specs.sort(key=_submitted)  # (stable: jobs submitted together keep the trace's order)
    return Prepared(specs, known + tuple(added), origin, gpu_seconds, last, longest, skipped, never_started)
