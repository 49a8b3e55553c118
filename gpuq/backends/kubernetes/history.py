"""Pod history as a trace (`KubernetesBackend.export_history`, `gpuq trace export`).

The pods of every phase the API server still holds (finished pods stay until they or their
owner are deleted, or the pod garbage collector's threshold is reached), GPU pods only, listed
once through `listwatch.list_all` (no watch) and converted with the backend's own rules
(`convert.pod_job`). Each pod is one job:

- ``id`` ``namespace/name``; ``submit_time`` ``metadata.creationTimestamp``;
- ``start_time`` the ``PodScheduled=True`` condition's time (when the scheduler placed it and
  its GPUs were taken), else the earliest container ``startedAt``, else ``status.startTime``;
  a pod still pending has none;
- ``end_time`` the latest container ``terminated.finishedAt`` of a Succeeded/Failed pod (else
  its Ready/DisruptionTarget condition's time, as `convert.pod_job` says);
- ``duration_s`` end − start (a running pod: now − start; a pending one: 0);
- ``gpus`` the effective ``nvidia.com/gpu`` request; ``job_class`` ``priorityClassName``;
  ``priority`` ``spec.priority``; ``tenant`` the namespace; ``user`` the ``gpuq.io/user``
  annotation, else the namespace; ``name`` what runs the pod (``Kind/name`` of its JobSet or
  controlling owner, `convert.owner_of`), else the pod's own name; ``state`` gpuq's state of it
  (``completed``, ``preempted``, ``failed``, ``running``, ``pending``…).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime

import msgspec

from gpuq.backends.jobtrace import in_window, trace_job
from gpuq.backends.kubernetes.convert import owner_of, pod_job
from gpuq.backends.kubernetes.listwatch import Informer, gc_paused, list_all
from gpuq.backends.kubernetes.wire import Pod
from gpuq.model import JobState
from gpuq.trace.record import TraceJob

__all__ = ["pod_start", "pod_trace_job", "pods_history"]


def pod_start(pod: Pod) -> datetime | None:
    """When the pod started (see the module docstring); None for a pod never bound."""
    if not pod.spec.node_name:
        return None
    scheduled = pod.status.condition("PodScheduled")
    if scheduled is not None and scheduled.status == "True" and scheduled.last_transition_time is not None:
        return scheduled.last_transition_time
    started = [
        moment
        for s in pod.status.container_statuses
        for moment in (
            s.state.running.started_at if s.state.running is not None else None,
            s.state.terminated.started_at if s.state.terminated is not None else None,
        )
        if moment is not None
    ]
    return min(started) if started else pod.status.start_time


def pod_trace_job(pod: Pod, now: float) -> TraceJob:
    """One pod as a trace job (the module docstring has the mapping)."""
    job = pod_job(pod)
    start = pod_start(pod) if job.state is not JobState.PENDING else None
    if start != job.start_time:
        job = msgspec.structs.replace(job, start_time=start)
    traced = trace_job(job, now)
    return replace(
        traced,
        job_class=pod.spec.priority_class_name or None,
        priority=pod.spec.priority,
        name=owner_of(pod) or pod.metadata.name,
    )


def pods_history(pods: Informer[Pod], since: float, until: float, now: float) -> Iterator[TraceJob]:
    """The GPU pods `pods` lists (its namespace and label selector), of every phase, that
    belong to ``[since, until]`` (`jobtrace.in_window`); the list is made when the first job is
    taken. Raises what the list raises (Unreachable, PermissionDenied)."""
    with gc_paused():
        listed = list_all(pods.client, pods.spec, pods.page)
    for pod in listed.items:
        traced = pod_trace_job(pod, now)
        if in_window(traced, since, until):
            yield traced
