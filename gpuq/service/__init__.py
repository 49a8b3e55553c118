"""The service layer: the one seam front ends call (with the views that shape its answers).

`open_cluster` resolves options and config into a `Cluster` handle: snapshots, previews, the SLA
report, the audit log and actions prepared (`PendingAction`) then confirmed, declined or dry-run.
"""

from gpuq.backends.base import ACTIONS, Capabilities, NativePlan, NativeVictim
from gpuq.policy.config import Mode
from gpuq.service.actions import ActionOutcome, PendingAction, describe_preempted
from gpuq.service.cluster import MAX_EXEMPT_S, Cluster, Preview
from gpuq.service.opening import backend_names, open_cluster, open_clusters

__all__ = [
    "ACTIONS",
    "MAX_EXEMPT_S",
    "ActionOutcome",
    "Capabilities",
    "Cluster",
    "Mode",
    "NativePlan",
    "NativeVictim",
    "PendingAction",
    "Preview",
    "backend_names",
    "describe_preempted",
    "open_cluster",
    "open_clusters",
]
