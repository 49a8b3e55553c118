"""The service layer: the one seam front ends call (with the views that shape its answers).

`open_cluster` resolves options and config into a `Cluster` handle: snapshots, previews, the SLA
report, the audit log and actions prepared (`PendingAction`) then confirmed, declined or dry-run.
The host's GPUs (NVML) and incident recordings load on first use of one of their names: most
commands never touch them, and every command would pay for importing them.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

from gpuq.backends.base import ACTIONS, Capabilities, NativePlan, NativeVictim
from gpuq.backends.registry import BackendOption
from gpuq.policy.config import Mode
from gpuq.service.actions import ActionOutcome, PendingAction, describe_preempted
from gpuq.service.cluster import MAX_EXEMPT_S, Cluster, Preview
from gpuq.service.opening import backend_names, open_cluster, open_clusters, open_contexts, policy_source

if TYPE_CHECKING:
    from gpuq.service.hostgpus import GpuProcess, HostGpu, HostGpuReport, NvmlReader, host_gpus
    from gpuq.service.recording import (
        READ_ONLY_REASON,
        Recorder,
        RecordingError,
        Replay,
        open_recorder,
        open_replay,
    )

#: name -> the module it is loaded from on first use
_LAZY = {
    **dict.fromkeys(("GpuProcess", "HostGpu", "HostGpuReport", "NvmlReader", "host_gpus"), "gpuq.service.hostgpus"),
    **dict.fromkeys(("READ_ONLY_REASON", "Recorder", "RecordingError", "Replay", "open_recorder", "open_replay"),
                    "gpuq.service.recording"),
}  # fmt: skip


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # (the next lookup finds it without coming here)
    return value


__all__ = [
    "ACTIONS",
    "MAX_EXEMPT_S",
    "READ_ONLY_REASON",
    "ActionOutcome",
    "BackendOption",
    "Capabilities",
    "Cluster",
    "GpuProcess",
    "HostGpu",
    "HostGpuReport",
    "Mode",
    "NativePlan",
    "NativeVictim",
    "NvmlReader",
    "PendingAction",
    "Preview",
    "Recorder",
    "RecordingError",
    "Replay",
    "backend_names",
    "describe_preempted",
    "host_gpus",
    "open_cluster",
    "open_clusters",
    "open_contexts",
    "open_recorder",
    "open_replay",
    "policy_source",
]
