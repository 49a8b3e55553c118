"""One small error hierarchy shared by backends, model loading and front ends.

Front ends map these to exit codes in one place (`EXIT_CODES`); messages name the thing
(job id, file:line, command) and, where useful, what to do.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = [
    "EXIT_CODES",
    "BadInput",
    "GpuqError",
    "GpuqWarning",
    "JobChanged",
    "NotFound",
    "PermissionDenied",
    "Refused",
    "Unreachable",
    "no_job",
]


class GpuqError(Exception):
    """Base class: an error gpuq reports to the operator as a message, never a traceback."""

    exit_code = 1


class GpuqWarning(UserWarning):
    """Something the operator should know that is no error (a server whose certificate is not
    verified): raised with `warnings.warn`, shown by a front end as one line of its own."""


class NotFound(GpuqError):
    """The named job, node or cluster does not exist."""

    exit_code = 1


def no_job(job_id: str, cluster: str, exists: Callable[[str], bool]) -> NotFound:
    """NotFound for an id no job on `cluster` has. An id with spaces around it (pasted with them)
    is shown quoted, so the spaces can be seen, and the job without them is named when
    `exists` knows it: the model allows such ids, so they are not trimmed silently."""
    trimmed = job_id.strip()
    if trimmed == job_id:
        return NotFound(f"no job {job_id} on cluster {cluster}")
    hint = f": did you mean {trimmed}? (the id given has white space around it)" if trimmed and exists(trimmed) else ""
    return NotFound(f"no job {job_id!r} on cluster {cluster}{hint}")


class Refused(GpuqError):
    """Validation or policy refused the action."""

    exit_code = 1


class JobChanged(Refused):
    """The job changed between preparing an action and confirming it: nothing was done."""

    exit_code = 1


class BadInput(GpuqError):
    """Malformed input: a file, an option value, a snapshot."""

    exit_code = 2


class Unreachable(GpuqError):
    """The backend (slurmctld, kube-apiserver) could not be reached or did not answer."""

    exit_code = 3


class PermissionDenied(GpuqError):
    """The operator lacks the privilege the action needs."""

    exit_code = 4


EXIT_CODES = {
    "ok": 0,
    "refused": 1,
    "usage": 2,
    "unreachable": 3,
    "permission_denied": 4,
}
