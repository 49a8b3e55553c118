"""Kueue's objects (group ``kueue.x-k8s.io``), as gpuq reads them: only the fields it needs.

Shapes from Kueue's CRDs (kubernetes-sigs/kueue ``config/components/crd/bases/``) and the
recorded v1beta2 bodies (tests/fixtures/k8s/5x-6x). v1beta2 names a Workload's class as
``spec.priorityClassRef {group, kind, name}``; v1beta1 as ``spec.priorityClassName`` +
``spec.priorityClassSource``: both are read, so either version decodes.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec

from gpuq.backends.kubernetes.wire import Condition, ListMeta, ObjectMeta, Resources, quantity_int

__all__ = [
    "GROUP",
    "Admission",
    "ClusterQueue",
    "ClusterQueueList",
    "LocalQueue",
    "LocalQueueList",
    "PodSet",
    "Preemption",
    "PodSetAssignment",
    "PriorityClassRef",
    "RequeueState",
    "Workload",
    "WorkloadList",
    "WorkloadPriorityClass",
    "WorkloadPriorityClassList",
]

GROUP = "kueue.x-k8s.io"


class _Wire(msgspec.Struct, rename="camel", gc=False, omit_defaults=True):
    pass


class _Container(_Wire):
    name: str = ""
    resources: Resources = msgspec.field(default_factory=Resources)


class _PodTemplateSpec(_Wire):
    containers: tuple[_Container, ...] = ()
    init_containers: tuple[_Container, ...] = ()


class _PodTemplate(_Wire):
    spec: _PodTemplateSpec = msgspec.field(default_factory=_PodTemplateSpec)


class PodSet(_Wire):
    name: str = ""
    count: int = 1
    template: _PodTemplate = msgspec.field(default_factory=_PodTemplate)

    def gpus_per_pod(self, where: str) -> int:
        spec = self.template.spec
        total = sum(c.resources.gpus(where) for c in spec.containers)
        init = max((c.resources.gpus(where) for c in spec.init_containers), default=0)
        return max(total, init)


class PriorityClassRef(_Wire):
    group: str = ""
    kind: str = ""
    name: str = ""


class _WorkloadSpec(_Wire):
    queue_name: str = ""
    priority: int | None = None
    priority_class_ref: PriorityClassRef | None = None  # v1beta2
    priority_class_name: str = ""  # v1beta1
    priority_class_source: str = ""  # v1beta1
    active: bool = True
    pod_sets: tuple[PodSet, ...] = ()


class PodSetAssignment(_Wire):
    name: str = ""
    count: int | None = None
    flavors: dict[str, str] = {}
    resource_usage: dict[str, str] = {}


class Admission(_Wire):
    cluster_queue: str = ""
    pod_set_assignments: tuple[PodSetAssignment, ...] = ()


class RequeueState(_Wire):
    count: int = 0
    requeue_at: datetime | None = None


class _WorkloadStatus(_Wire):
    conditions: tuple[Condition, ...] = ()
    admission: Admission | None = None
    requeue_state: RequeueState | None = None


class Workload(_Wire):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: _WorkloadSpec = msgspec.field(default_factory=_WorkloadSpec)
    status: _WorkloadStatus = msgspec.field(default_factory=_WorkloadStatus)

    def condition(self, kind: str) -> Condition | None:
        return next((c for c in self.status.conditions if c.type == kind), None)

    def is_true(self, kind: str) -> bool:
        found = self.condition(kind)
        return found is not None and found.status == "True"

    @property
    def class_name(self) -> str:
        ref = self.spec.priority_class_ref
        return ref.name if ref is not None and ref.name else self.spec.priority_class_name

    def gpus(self) -> int:
        where = f"workload {self.metadata.key}"
        return sum(ps.count * ps.gpus_per_pod(where) for ps in self.spec.pod_sets)


class WorkloadList(_Wire):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[Workload] = []


class WorkloadPriorityClass(_Wire):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    value: int = 0
    description: str = ""


class WorkloadPriorityClassList(_Wire):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[WorkloadPriorityClass] = []


class _Quota(_Wire):
    name: str = ""
    nominal_quota: int | str = 0
    borrowing_limit: int | str | None = None
    lending_limit: int | str | None = None


class _FlavorQuotas(_Wire):
    name: str = ""
    resources: tuple[_Quota, ...] = ()


class _ResourceGroup(_Wire):
    covered_resources: tuple[str, ...] = ()
    flavors: tuple[_FlavorQuotas, ...] = ()


class Preemption(_Wire):
    """A ClusterQueue's ``spec.preemption``. The policies are read as any JSON value: one gpuq
    does not know is reported, never a failed list (``borrowWithinCohort``: ``{policy,
    maxPriorityThreshold}``)."""

    within_cluster_queue: Any = None
    reclaim_within_cohort: Any = None
    borrow_within_cohort: Any = None


class _ClusterQueueSpec(_Wire):
    cohort: str = ""
    cohort_name: str = ""  # (the name some versions give the field)
    resource_groups: tuple[_ResourceGroup, ...] = ()
    preemption: Preemption | None = None
    fair_sharing: Any = None  # ({weight}: set, the cohort may use fair sharing)


class ClusterQueue(_Wire):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: _ClusterQueueSpec = msgspec.field(default_factory=_ClusterQueueSpec)

    def gpu_quotas(self) -> list[tuple[str, int, int | None, int | None]]:
        """Per flavor, in order: (flavor, nominal, borrowing limit, lending limit) of
        ``nvidia.com/gpu`` (a limit None: not set)."""
        where = f"clusterqueue {self.metadata.name}"
        out = []
        for group in self.spec.resource_groups:
            for flavor in group.flavors:
                for quota in flavor.resources:
                    if quota.name == "nvidia.com/gpu":
                        borrow, lend = quota.borrowing_limit, quota.lending_limit
                        out.append((flavor.name, quantity_int(quota.nominal_quota, where),
                                    None if borrow is None else quantity_int(borrow, where),
                                    None if lend is None else quantity_int(lend, where)))  # fmt: skip
        return out

    def gpu_quota(self) -> int:
        """The nominal ``nvidia.com/gpu`` quota over all flavors."""
        total = 0
        for group in self.spec.resource_groups:
            for flavor in group.flavors:
                for quota in flavor.resources:
                    if quota.name == "nvidia.com/gpu":
                        total += quantity_int(quota.nominal_quota, f"clusterqueue {self.metadata.name}")
        return total


class ClusterQueueList(_Wire):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[ClusterQueue] = []


class _LocalQueueSpec(_Wire):
    cluster_queue: str = ""


class LocalQueue(_Wire):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: _LocalQueueSpec = msgspec.field(default_factory=_LocalQueueSpec)


class LocalQueueList(_Wire):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[LocalQueue] = []
