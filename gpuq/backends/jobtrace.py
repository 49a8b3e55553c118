"""gpuq's model jobs as trace jobs, and the window a history export covers.

Shared by the backends whose history is a list of `gpuq.model.Job`s (the demo's simulator, the
Kubernetes pods); Slurm reads its accounting directly (`gpuq.backends.slurm.trace`).
"""

from __future__ import annotations

from gpuq.model import Job
from gpuq.trace.record import TraceJob, trace_job_of

__all__ = ["in_window", "trace_job"]


def trace_job(job: Job, now: float) -> TraceJob:
    """`job` as a trace records it. Its run time: the model's `duration_s` where the backend
    knows it (the demo), else end − start, else (still running at `now`) now − start, else 0."""
    start = job.start_time.timestamp() if job.start_time is not None else None
    end = job.end_time.timestamp() if job.end_time is not None else None
    if job.duration_s is not None:
        duration = float(job.duration_s)
    elif start is not None:
        duration = max(0.0, (end if end is not None else now) - start)
    else:
        duration = 0.0
    return trace_job_of(job, duration_s=duration, start=start, end=end)


def in_window(job: TraceJob, since: float, until: float) -> bool:
    """Whether the job belongs to an export of ``[since, until]``: submitted by `until` and not
    ended before `since` (sacct's ``-S``/``-E`` selection, for the backends that filter themselves)."""
    return job.submit_time <= until and (job.end_time is None or job.end_time >= since)
