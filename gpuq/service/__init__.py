"""The service layer: the one seam front ends call (with the views that shape its answers).

`open_cluster` resolves options and config into a `Cluster` handle: snapshots, previews, the SLA
report, the audit log and actions prepared (`PendingAction`) then confirmed, declined or dry-run.
"""

from gpuq.backends.base import ACTIONS, Capabilities, NativePlan, NativeVictim
from gpuq.backends.registry import BackendOption
from gpuq.policy.config import Mode
from gpuq.service.actions import ActionOutcome, PendingAction, describe_preempted
from gpuq.service.cluster import MAX_EXEMPT_S, Cluster, Preview
from gpuq.service.hostgpus import GpuProcess, HostGpu, HostGpuReport, NvmlReader, host_gpus
from gpuq.service.opening import backend_names, open_cluster, open_clusters, open_contexts, policy_source
from gpuq.service.recording import READ_ONLY_REASON, Recorder, RecordingError, Replay, open_recorder, open_replay

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
