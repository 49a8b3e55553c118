"""One job of a trace, as every trace reader yields it, and the error a malformed trace raises.

Readers stream: they yield `TraceJob`s one at a time and never hold a whole file. Times are
POSIX seconds (floats); what a source did not record stays None, so replay and the recorded
statistics can tell "never started" from "started at 0".
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuq.errors import BadInput
from gpuq.model import Job

__all__ = ["TraceError", "TraceJob", "trace_job_of"]


@dataclass(frozen=True, slots=True)
class TraceJob:
    """A job as a trace recorded it.

    `duration_s` is the run time the job needs (what replay runs it for): its recorded run time,
    end − start, summed over attempts where a source records several. `job_class` and
    `priority` are None where the source has none; the class rules (`gpuq.trace.classes`)
    assign them. `tenant` is the source's account, virtual cluster or group.
    """

    id: str
    submit_time: float
    duration_s: float
    gpus: int
    job_class: str | None = None
    priority: int | None = None
    user: str = ""
    tenant: str = ""
    name: str = ""
    start_time: float | None = None  # recorded (first) start; None: never started
    end_time: float | None = None
    state: str = ""  # the recorded final state, spelled as the source spells it
    checkpoint_interval_s: float | None = None
    checkpoints: tuple[float, ...] = ()  # checkpoint times the source recorded, if any

    @property
    def recorded_wait_s(self) -> float | None:
        """start − submit as recorded; None for a job that never started."""
        return None if self.start_time is None else max(0.0, self.start_time - self.submit_time)


def trace_job_of(
    job: Job, *, duration_s: float, start: float | None, end: float | None, id_prefix: str = "",
    checkpoints: tuple[float, ...] = (),
) -> TraceJob:
    """A model job (a backend's or a snapshot's) as a trace job, with the run time, start and end
    its source worked out. The class is None for a job of no class (""), so the class rules may
    assign one."""
    return TraceJob(
        id=id_prefix + job.id,
        submit_time=job.submit_time.timestamp(),
        duration_s=duration_s,
        gpus=job.gpus,
        job_class=job.job_class or None,
        priority=job.priority,
        user=job.user,
        tenant=job.tenant,
        name=job.name,
        start_time=start,
        end_time=end,
        state=job.state.value,
        checkpoint_interval_s=job.checkpoint_interval_s,
        checkpoints=checkpoints,
    )


class TraceError(BadInput):
    """A malformed trace: the message names the file, the line and (where known) the column."""

    def __init__(self, path: str, line: int, message: str, column: int | None = None) -> None:
        self.path = path
        self.line = line
        self.column = column
        where = f"{path}:{line}" if column is None else f"{path}:{line}:{column}"
        super().__init__(f"{where}: {message}")
