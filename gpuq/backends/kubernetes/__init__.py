"""The Kubernetes backend: `KubernetesBackend` reads GPU pods, nodes, PriorityClasses, PDBs, Events
(and Kueue's Workloads) by list + watch; see `backend`, `state`, `client`, `wire`."""

from gpuq.backends.kubernetes.backend import KubernetesBackend

__all__ = ["KubernetesBackend"]
