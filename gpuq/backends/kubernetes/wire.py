"""The Kubernetes API's objects as gpuq reads them: only the fields it needs, decoded from raw bytes.

The official client's generated models cost ~0.84 ms a pod to deserialize; these msgspec structs
decode the same bodies in C, ignoring every field not named here (benchmarks/README.md). Field
names follow the API's camelCase (``rename="camel"``). Structs are ``gc=False``: decoded JSON has
no reference cycles, and a 150,000-pod list is not walked by the cyclic collector.

Kubernetes fills defaults on the server, but a field may still be absent (an old server, a status
nobody wrote), so every field has a default. Times are timezone-aware `datetime`s.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec

from gpuq.errors import BadInput

__all__ = [
    "APIGroup",
    "APIGroupList",
    "GroupVersion",
    "GPU_RESOURCE",
    "Condition",
    "Container",
    "ContainerState",
    "Controller",
    "ControllerSpec",
    "ContainerStatus",
    "Event",
    "EventList",
    "EventSeries",
    "EventSource",
    "LabelSelector",
    "LabelSelectorRequirement",
    "ListMeta",
    "Node",
    "NodeList",
    "NodeSpec",
    "NodeStatus",
    "ObjectMeta",
    "ObjectReference",
    "OwnerReference",
    "PodDisruptionBudget",
    "PodDisruptionBudgetList",
    "PdbSpec",
    "PdbStatus",
    "Pod",
    "PodList",
    "PodSpec",
    "PodStatus",
    "PriorityClass",
    "PriorityClassList",
    "Resources",
    "Status",
    "StatusCause",
    "StatusDetails",
    "PodTemplate",
    "Running",
    "Taint",
    "TemplateSpec",
    "Terminated",
    "Toleration",
    "UpdateStrategy",
    "WatchEvent",
    "quantity_int",
]

#: The extended resource NVIDIA's device plugin advertises (requests and limits are whole numbers).
GPU_RESOURCE = "nvidia.com/gpu"


class _Wire(msgspec.Struct, rename="camel", gc=False, omit_defaults=True):
    """Base of every wire struct (camelCase names, unknown fields ignored). Sequences are tuples:
    CPython's collector untracks a tuple of untracked objects, never a list, so 150,000 cached pods
    do not make every collection walk their containers and conditions."""


# ------------------------------------------------------------------------------------ metadata
class OwnerReference(_Wire):
    kind: str = ""
    name: str = ""
    uid: str = ""
    api_version: str = ""
    controller: bool = False


class ObjectMeta(_Wire):
    name: str = ""
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    generation: int = 0
    creation_timestamp: datetime | None = None
    deletion_timestamp: datetime | None = None
    deletion_grace_period_seconds: int | None = None
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    owner_references: tuple[OwnerReference, ...] = ()

    @property
    def key(self) -> str:
        """``namespace/name`` (``name`` for cluster-scoped objects): gpuq's id of the object."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    @property
    def controller(self) -> OwnerReference | None:
        """The owner that manages the object (a Job, a ReplicaSet, a PyTorchJob), if any."""
        return next((o for o in self.owner_references if o.controller), None)


class ListMeta(_Wire):
    resource_version: str = ""
    # (`continue` is a Python keyword)
    continue_: str = msgspec.field(default="", name="continue")
    remaining_item_count: int | None = None


class Condition(_Wire):
    """A condition of a pod, node or PDB (the same shape for each)."""

    type: str = ""
    status: str = ""
    reason: str = ""
    message: str = ""
    last_transition_time: datetime | None = None


# ------------------------------------------------------------------------------------ status
class StatusCause(_Wire):
    reason: str = ""
    message: str = ""
    field: str = ""


class StatusDetails(_Wire):
    name: str = ""
    group: str = ""
    kind: str = ""
    causes: tuple[StatusCause, ...] = ()
    retry_after_seconds: int | None = None


class Status(_Wire):
    """The API server's error body (and an in-stream watch ERROR event's object)."""

    kind: str = ""
    status: str = ""
    message: str = ""
    reason: str = ""
    code: int = 0
    details: StatusDetails | None = None
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)


# ------------------------------------------------------------------------------------ pods
class Resources(_Wire):
    requests: dict[str, str] = {}
    limits: dict[str, str] = {}

    def asks_gpus(self) -> bool:
        """Whether a GPU is asked for (without parsing the quantity: a filter over every pod)."""
        raw = self.requests.get(GPU_RESOURCE) or self.limits.get(GPU_RESOURCE)
        return raw is not None and raw != "0"

    def gpus(self, where: str) -> int:
        """GPUs asked for: the request, else the limit (which Kubernetes copies into the request
        of an extended resource when only the limit is set)."""
        raw = self.requests.get(GPU_RESOURCE)
        if raw is None:
            raw = self.limits.get(GPU_RESOURCE)
        return 0 if raw is None else quantity_int(raw, f"{where}: {GPU_RESOURCE}")


class Container(_Wire):
    name: str = ""
    resources: Resources = msgspec.field(default_factory=Resources)
    #: ``Always`` on an init container makes it a sidecar, which runs beside the app containers
    restart_policy: str = ""


class Toleration(_Wire):
    key: str = ""
    operator: str = ""
    value: str = ""
    effect: str = ""


class PodSpec(_Wire):
    node_name: str = ""
    priority: int | None = None
    priority_class_name: str = ""
    preemption_policy: str = ""
    scheduler_name: str = ""
    containers: tuple[Container, ...] = ()
    init_containers: tuple[Container, ...] = ()
    node_selector: dict[str, str] = {}
    tolerations: tuple[Toleration, ...] = ()
    #: seconds between SIGTERM and SIGKILL when the pod is deleted (None: the API's default, 30)
    termination_grace_period_seconds: int | None = None


class Terminated(_Wire):
    exit_code: int = 0
    reason: str = ""
    started_at: datetime | None = None
    finished_at: datetime | None = None


class Running(_Wire):
    started_at: datetime | None = None


class ContainerState(_Wire):
    running: Running | None = None
    terminated: Terminated | None = None


class ContainerStatus(_Wire):
    name: str = ""
    state: ContainerState = msgspec.field(default_factory=ContainerState)
    restart_count: int = 0


class PodStatus(_Wire):
    phase: str = ""
    reason: str = ""
    message: str = ""
    conditions: tuple[Condition, ...] = ()
    nominated_node_name: str = ""
    start_time: datetime | None = None
    container_statuses: tuple[ContainerStatus, ...] = ()

    def condition(self, kind: str) -> Condition | None:
        for found in self.conditions:
            if found.type == kind:
                return found
        return None


class Pod(_Wire):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodSpec = msgspec.field(default_factory=PodSpec)
    status: PodStatus = msgspec.field(default_factory=PodStatus)

    def asks_gpus(self) -> bool:
        """Whether any container asks for a GPU (cheap: what pods gpuq keeps)."""
        spec = self.spec
        return any(c.resources.asks_gpus() for c in spec.containers) or any(
            c.resources.asks_gpus() for c in spec.init_containers
        )

    def gpus(self) -> int:
        """The pod's effective GPU request, as the scheduler counts it: the app containers' and
        sidecars' sum, or the largest init container's when that is more."""
        spec = self.spec
        if len(spec.containers) == 1 and not spec.init_containers:  # (the usual pod, 150,000 times)
            resources = spec.containers[0].resources
            raw = resources.requests.get(GPU_RESOURCE) or resources.limits.get(GPU_RESOURCE)
            if raw is not None and raw.isdigit() and raw.isascii() and len(raw) < 13:
                return int(raw)
        where = f"pod {self.metadata.key}"
        total = sum(c.resources.gpus(where) for c in self.spec.containers)
        init = 0
        for c in self.spec.init_containers:
            if c.restart_policy == "Always":
                total += c.resources.gpus(where)
            else:
                init = max(init, c.resources.gpus(where))
        return max(total, init)


class PodList(_Wire):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[Pod] = []


# ------------------------------------------------------------------------------------ pod owners
class TemplateSpec(_Wire):
    priority_class_name: str = ""
    priority: int | None = None


class PodTemplate(_Wire):
    spec: TemplateSpec = msgspec.field(default_factory=TemplateSpec)


class UpdateStrategy(_Wire):
    #: StatefulSet: ``RollingUpdate`` (the default) or ``OnDelete``
    type: str = ""


class ControllerSpec(_Wire):
    template: PodTemplate = msgspec.field(default_factory=PodTemplate)
    update_strategy: UpdateStrategy | None = None
    suspend: bool | None = None


class Controller(_Wire):
    """A pod's controlling owner with a pod template (ReplicaSet, StatefulSet, Job, …): only what
    a bump reads."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ControllerSpec = msgspec.field(default_factory=ControllerSpec)


# ------------------------------------------------------------------------------------ nodes
class Taint(_Wire):
    key: str = ""
    value: str = ""
    effect: str = ""


class NodeSpec(_Wire):
    unschedulable: bool = False
    taints: tuple[Taint, ...] = ()


class NodeStatus(_Wire):
    capacity: dict[str, str] = {}
    allocatable: dict[str, str] = {}
    conditions: tuple[Condition, ...] = ()


class Node(_Wire):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: NodeSpec = msgspec.field(default_factory=NodeSpec)
    status: NodeStatus = msgspec.field(default_factory=NodeStatus)

    def gpus(self) -> int:
        """GPUs the scheduler may give out here (allocatable, else capacity)."""
        raw = self.status.allocatable.get(GPU_RESOURCE, self.status.capacity.get(GPU_RESOURCE))
        return 0 if raw is None else quantity_int(raw, f"node {self.metadata.name}: {GPU_RESOURCE}")

    def ready(self) -> Condition | None:
        return next((c for c in self.status.conditions if c.type == "Ready"), None)


class NodeList(_Wire):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[Node] = []


# ------------------------------------------------------------------------------------ classes
class PriorityClass(_Wire):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    value: int = 0
    global_default: bool = False
    #: ``PreemptLowerPriority`` (the default) or ``Never``
    preemption_policy: str = "PreemptLowerPriority"
    description: str = ""


class PriorityClassList(_Wire):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[PriorityClass] = []


# ------------------------------------------------------------------------------------ PDBs
class LabelSelectorRequirement(_Wire):
    key: str = ""
    operator: str = ""
    values: tuple[str, ...] = ()


class LabelSelector(_Wire):
    match_labels: dict[str, str] = {}
    match_expressions: tuple[LabelSelectorRequirement, ...] = ()


class PdbSpec(_Wire):
    #: an integer or a percentage ("50%"); None when not set
    min_available: int | str | None = None
    max_unavailable: int | str | None = None
    selector: LabelSelector | None = None


class PdbStatus(_Wire):
    observed_generation: int = 0
    disruptions_allowed: int = 0
    current_healthy: int = 0
    desired_healthy: int = 0
    expected_pods: int = 0
    #: pods the API server evicted that the disruption controller has not yet seen go (name → time)
    disrupted_pods: dict[str, str] = {}


class PodDisruptionBudget(_Wire):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PdbSpec = msgspec.field(default_factory=PdbSpec)
    status: PdbStatus = msgspec.field(default_factory=PdbStatus)


class PodDisruptionBudgetList(_Wire):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[PodDisruptionBudget] = []


# ------------------------------------------------------------------------------------ events
class ObjectReference(_Wire):
    kind: str = ""
    namespace: str = ""
    name: str = ""
    uid: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


class EventSeries(_Wire):
    count: int = 0
    last_observed_time: datetime | None = None


class EventSource(_Wire):
    component: str = ""


class Event(_Wire):
    """An Event in either API: core/v1 (``involvedObject``, ``message``, ``firstTimestamp``/
    ``lastTimestamp``/``count``) or events.k8s.io/v1 (``regarding``, ``note``, ``eventTime``,
    ``deprecated*``). The same stored event reads back through both, with the other API's
    fields empty, so every accessor falls back between them."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    reason: str = ""
    type: str = ""
    action: str = ""
    # core/v1
    involved_object: ObjectReference | None = None
    message: str = ""
    first_timestamp: datetime | None = None
    last_timestamp: datetime | None = None
    count: int | None = None
    source: EventSource | None = None
    reporting_component: str = ""
    # both
    event_time: datetime | None = None
    related: ObjectReference | None = None
    series: EventSeries | None = None
    # events.k8s.io/v1
    regarding: ObjectReference | None = None
    note: str = ""
    reporting_controller: str = ""
    deprecated_first_timestamp: datetime | None = None
    deprecated_last_timestamp: datetime | None = None
    deprecated_count: int | None = None

    @property
    def subject(self) -> ObjectReference:
        """The object the event is about."""
        return self.involved_object or self.regarding or ObjectReference()

    @property
    def text(self) -> str:
        return self.message or self.note

    @property
    def time(self) -> datetime | None:
        """When it last happened: the last timestamp of either API, the series' last sighting,
        the event time, the first timestamp, else when the Event object was created."""
        return (
            self.last_timestamp
            or self.deprecated_last_timestamp
            or (self.series.last_observed_time if self.series else None)
            or self.event_time
            or self.first_timestamp
            or self.deprecated_first_timestamp
            or self.metadata.creation_timestamp
        )

    @property
    def reporter(self) -> str:
        return self.reporting_controller or self.reporting_component or (self.source.component if self.source else "")


class EventList(_Wire):
    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[Event] = []


# ------------------------------------------------------------------------------------ discovery
class GroupVersion(_Wire):
    group_version: str = ""
    version: str = ""


class APIGroup(_Wire):
    name: str = ""
    versions: tuple[GroupVersion, ...] = ()
    preferred_version: GroupVersion | None = None


class APIGroupList(_Wire):
    """``GET /apis``: the API groups the server serves (Kueue's CRDs add ``kueue.x-k8s.io``)."""

    groups: tuple[APIGroup, ...] = ()

    def preferred(self, name: str) -> str | None:
        """The version the server prefers for group `name`; None when it does not serve it."""
        for group in self.groups:
            if group.name == name:
                if group.preferred_version is not None and group.preferred_version.version:
                    return group.preferred_version.version
                return group.versions[0].version if group.versions else None
        return None


# ------------------------------------------------------------------------------------ watch
class WatchEvent(msgspec.Struct, gc=False):
    """One line of a watch stream; `object` is decoded by the caller once `type` is known
    (an ``ERROR`` line carries a `Status`, a ``BOOKMARK`` only metadata)."""

    type: str
    object: msgspec.Raw = msgspec.Raw(b"null")


# ------------------------------------------------------------------------------------ quantities
_DECIMAL = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
#: more GPUs than any node or job can have: a quantity past it is malformed, not a loop bound
_QUANTITY_MAX = 10**12


def quantity_int(raw: Any, where: str) -> int:
    """A resource quantity that must be a whole number (extended resources such as GPUs):
    ``"8"``, ``"1k"``, ``"2Ki"``, ``"1e3"``. BadInput naming `where` for anything else."""
    if type(raw) is str and raw.isdigit() and raw.isascii() and len(raw) < 13:  # (the usual "8": fast)
        return int(raw)
    text = str(raw).strip()
    number, factor = text, 1
    for suffix, multiple in (*_BINARY.items(), *_DECIMAL.items()):
        if suffix and text.endswith(suffix):
            number, factor = text[: -len(suffix)], multiple
            break
    else:
        mantissa, e, exponent = text.partition("e")
        power = exponent.removeprefix("+")
        if e and mantissa.isdigit() and power.isdigit() and power.isascii() and int(power) <= 12:
            number, factor = mantissa, 10 ** int(power)
    if not number.isdigit() or not number.isascii():
        raise BadInput(f"{where}: {text!r} is not a whole-number quantity")
    value = int(number) * factor
    if value > _QUANTITY_MAX:
        raise BadInput(f"{where}: {text!r} is more than can exist")
    return value
