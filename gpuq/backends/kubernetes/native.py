"""kube-scheduler's own choice for a preview: `preemption.default_preemption` on what the backend
caches (`ClusterState`), for a pending pod or a what-if request.

Inputs, read under ``state.lock``:

- nodes: the GPU nodes, their allocatable GPUs, cordon (``spec.unschedulable``), taints and Ready.
  A Ready node's ``node.kubernetes.io/not-ready``/``unreachable`` taints are left out, as
  `convert.model_node` leaves them out of the node state: they trail the Ready condition by the
  node lifecycle controller's lag (the recorded lab, which runs no such controller, keeps
  ``not-ready:NoSchedule`` on every Ready node; honoured, nothing would fit anywhere). A node that
  is not Ready gets the not-ready taint from `default_preemption` itself.
- pods: every cached GPU pod (bound, or pending with a nominated node) with its priority, GPUs,
  node, start, labels, whether it is terminating and whether the scheduler marked it
  (``DisruptionTarget`` with a scheduler reason). gpuq keeps only GPU pods, so a pod without GPUs
  never uses up a PodDisruptionBudget here.
- PDBs: selector and ``status.disruptionsAllowed`` (None when the disruption controller never
  wrote the status, ``observedGeneration`` 0, which the scheduler counts as 0).
- the preemptor: a pending pod's own priority (or the PriorityClass a bump would move it to, for a
  preview at another priority), its class's ``preemptionPolicy``, ``nominatedNodeName`` and
  tolerations. A what-if request: its GPUs, its priority (or its class's value; else the global
  default class's, else 0), that class's policy, and a toleration of ``nvidia.com/gpu`` taints,
  which the ExtendedResourceToleration admission plugin gives every pod asking for GPUs.
- the scheduler's minor version: the API server's (``GET /version``, read once), which selects
  the pre-1.27 nominated-node check; unknown → the current one.

Converted objects are kept while their store is unchanged, and then rebuilt only for the objects
a watch event replaced, so a preview on 150,000 pods does not convert them all again
(benchmarks/README.md).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

import msgspec

from gpuq.backends.base import NativePlan, NativeVictim
from gpuq.backends.kubernetes import wire as w
from gpuq.backends.kubernetes.budgets import Budgets
from gpuq.backends.kubernetes.convert import PREEMPTION_REASONS, SYSTEM_PRIORITY_MIN
from gpuq.backends.kubernetes.listwatch import Store, gc_paused
from gpuq.backends.kubernetes.preemption import (
    NOT_READY_TAINT,
    UNREACHABLE_TAINT,
    LabelRequirement,
    LabelSelector,
    NodeInfo,
    PdbInfo,
    PodInfo,
    Preemptor,
    Taint,
    Toleration,
    default_preemption,
)
from gpuq.backends.kubernetes.state import ClusterState
from gpuq.errors import GpuqError
from gpuq.model import PreviewRequest, Snapshot
from gpuq.policy.queueplan import queue_plan

__all__ = ["NativePreview", "choose_class", "kueue_plan", "node_info", "pdb_info", "pod_info", "user_classes"]

_LIFECYCLE_TAINTS = frozenset({NOT_READY_TAINT, UNREACHABLE_TAINT})
_GPU_TOLERATION = Toleration(key=w.GPU_RESOURCE, operator="Exists")
_MINOR = re.compile(r"\d+")
_FINISHED = frozenset({"Succeeded", "Failed"})
T = TypeVar("T", w.Pod, w.Node, w.PodDisruptionBudget)
U = TypeVar("U")


class _Version(msgspec.Struct):
    minor: str = ""


def pod_info(pod: w.Pod) -> PodInfo:
    meta, spec, status = pod.metadata, pod.spec, pod.status
    marked = False
    for cond in status.conditions:
        if cond.type == "DisruptionTarget":
            marked = cond.status == "True" and cond.reason in PREEMPTION_REASONS
            break
    start = status.start_time
    return PodInfo(
        key=meta.key,
        namespace=meta.namespace,
        priority=spec.priority if spec.priority is not None else 0,
        gpus=pod.gpus(),
        node=spec.node_name or None,
        start_time=None if start is None else start.timestamp(),
        terminating=meta.deletion_timestamp is not None,
        labels=meta.labels,
        preempted_by_scheduler=marked,
        nominated_node=status.nominated_node_name or None,
        finished=status.phase in ("Succeeded", "Failed"),
    )


def node_info(node: w.Node) -> NodeInfo:
    ready = node.ready()
    is_ready = ready is not None and ready.status == "True"
    taints = tuple(Taint(t.key, t.value, t.effect or "NoSchedule") for t in node.spec.taints
                   if not (is_ready and t.key in _LIFECYCLE_TAINTS))  # fmt: skip
    return NodeInfo(node.metadata.name, node.gpus(), not node.spec.unschedulable, taints, is_ready)


def _selector(raw: w.LabelSelector | None) -> LabelSelector | None:
    if raw is None:
        return None
    exprs = tuple(LabelRequirement(e.key, e.operator, e.values) for e in raw.match_expressions)
    return LabelSelector(raw.match_labels, exprs)


def pdb_info(pdb: w.PodDisruptionBudget) -> PdbInfo:
    status = pdb.status
    allowed = None if status.observed_generation == 0 else status.disruptions_allowed
    return PdbInfo(pdb.metadata.namespace, pdb.metadata.name, _selector(pdb.spec.selector), allowed,
                   frozenset(status.disrupted_pods))  # fmt: skip


def user_classes(classes: Iterable[w.PriorityClass]) -> list[w.PriorityClass]:
    """The PriorityClasses an operator may move pods to (system classes, above a billion, left out),
    by value then name."""
    return sorted((c for c in classes if c.value < SYSTEM_PRIORITY_MIN), key=lambda c: (c.value, c.metadata.name))


def choose_class(
    classes: Iterable[w.PriorityClass], priority: int | None, policy: str | None = None
) -> w.PriorityClass | None:
    """The class whose value best matches `priority`: the smallest value at least `priority`, else
    the largest; `priority` None (urgent): the largest. Only classes with `policy` as their
    ``preemptionPolicy`` are considered when there are any (a bump does not turn a pod that may
    preempt into one that never does, or back). None when there are no user classes."""
    usable = user_classes(classes)
    same = [c for c in usable if _policy(c) == policy] if policy is not None else []
    usable = same or usable
    if not usable:
        return None
    if priority is None:
        return max(usable, key=lambda c: c.value)  # (the first of the highest value, by name)
    return next((c for c in usable if c.value >= priority), usable[-1])


class _Converted(Generic[T, U]):
    """One resource's objects converted for `default_preemption`, kept current by the state's
    change hook: after a watch event only the object it names is converted again, after a list
    everything (and the first time)."""

    def __init__(self, convert: Callable[[T], U], keep: Callable[[T], bool] | None = None) -> None:
        self.convert: Callable[[T], U] = convert
        self.keep: Callable[[T], bool] | None = keep
        self._by_key: dict[str, U] = {}
        self._dirty: set[str] | None = None  # None: everything
        self._out: list[U] | None = None

    def changed(self, old: T | None, new: T | None) -> None:
        if old is None and new is None:
            self._dirty = None
        elif self._dirty is not None:
            self._dirty.add((new or old).metadata.key)  # type: ignore[union-attr]  # (one of them is set)
        self._out = None

    def get(self, store: Store[T]) -> list[U]:
        if self._out is not None:
            return self._out
        items, keep, convert = store.items, self.keep, self.convert
        if self._dirty is None:
            self._by_key = {k: convert(o) for k, o in items.items() if keep is None or keep(o)}
        else:
            by_key = self._by_key
            for key in self._dirty:
                obj = items.get(key)
                by_key.pop(key, None)  # (re-added last, as the store itself does with a new object)
                if obj is not None and (keep is None or keep(obj)):
                    by_key[key] = convert(obj)
        self._dirty = set()
        self._out = list(self._by_key.values())
        return self._out


def _looked_at(pod: w.Pod) -> bool:
    """Whether `default_preemption` looks at the pod: bound or nominated to a node, not finished."""
    status = pod.status
    return bool(pod.spec.node_name or status.nominated_node_name) and status.phase not in _FINISHED


class NativePreview:
    """The kube-scheduler prediction of one backend, with its caches of converted objects."""

    def __init__(self, state: ClusterState) -> None:
        self.state = state
        self._pods: _Converted[w.Pod, PodInfo] = _Converted(pod_info, _looked_at)
        self._nodes: _Converted[w.Node, NodeInfo] = _Converted(node_info)
        self._pdbs: _Converted[w.PodDisruptionBudget, PdbInfo] = _Converted(pdb_info)
        caches: dict[str, _Converted[Any, Any]] = {"pods": self._pods, "nodes": self._nodes, "pdbs": self._pdbs}

        def hook(name: str, old: Any, new: Any) -> None:
            cache = caches.get(name)
            if cache is not None:
                cache.changed(old, new)

        state.hooks.append(hook)
        self._minor: int | None = None
        self._minor_read = False
        self._lock = threading.Lock()
        self._budgets: Budgets | None = None  # kept while the budgets stay the same
        self._noted: tuple[list[PodInfo], Budgets] | None = None  # what warm() last matched

    def scheduler_minor(self) -> int | None:
        """The API server's minor version (``"23+"`` → 23), read once; None when unknown."""
        if not self._minor_read:
            try:
                version = self.state.client.get("/version", msgspec.json.Decoder(_Version))
                found = _MINOR.match(version.minor)
                self._minor = int(found.group()) if found else None
            except GpuqError:
                self._minor = None
            self._minor_read = True
        return self._minor

    def pods(self, store: Store[w.Pod]) -> list[PodInfo]:
        """A PodInfo per cached pod the scheduler's preemption looks at (bound, or nominated to a
        node; not finished: `default_preemption` passes over the others)."""
        return self._pods.get(store)

    def warm(self) -> None:
        """Convert what a preview reads and match every pod against the budgets now, so that a
        preview, the first of a process too, only plans. The backend calls this after each
        refresh: after a list it is a few percent of the list's time, after watch events it
        converts only the objects they changed."""
        state = self.state
        with self._lock:
            with state.lock:
                if state.store("nodes").denied:
                    return
                _, infos, pdbs = self._converted()
            if pdbs:
                budgets = self._budgets_for(pdbs, infos)
                noted = self._noted
                if noted is not None and noted[0] is infos and noted[1] is budgets:
                    return  # (nothing changed since the last warm-up)
                note = budgets.note
                with gc_paused():
                    for info in infos:
                        note(info)
                self._noted = (infos, budgets)

    def _converted(self) -> tuple[list[NodeInfo], list[PodInfo], list[PdbInfo]]:
        """The nodes, pods and budgets as `default_preemption` reads them (under the state's lock)."""
        state = self.state
        return (self._nodes.get(state.store("nodes")), self.pods(state.store("pods")),
                self._pdbs.get(state.store("pdbs")))  # fmt: skip

    def _budgets_for(self, pdbs: list[PdbInfo], infos: list[PodInfo]) -> Budgets:
        """The budgets' index and memo, kept while the budgets stay the same."""
        budgets = self._budgets
        if budgets is None or budgets.pdbs is not pdbs or len(budgets.memo) > 2 * len(infos) + 1000:
            # (new budgets, or many pods gone since: match every pod again)
            budgets = self._budgets = Budgets(pdbs)
        return budgets

    def plan(self, request: PreviewRequest) -> NativePlan:
        minor = self.scheduler_minor()
        state = self.state
        with self._lock:  # (the budgets' memo is this preview's own; the state's lock only to read)
            with state.lock:
                pods = state.store("pods").items
                workloads = state.store("workloads").items if "workloads" in state.informers else {}
                if request.job_id is not None and request.job_id not in pods and request.job_id in workloads:
                    return NativePlan(False, scheduler="Kueue", notes=(
                        f"{request.job_id} is a Kueue Workload whose ClusterQueue gpuq cannot read: Kueue admits it "
                        "by quota and preempts by its ClusterQueue's rules; kube-scheduler only places its pods once "
                        "they exist",))  # fmt: skip
                if state.store("nodes").denied:
                    return NativePlan(False, notes=("no right to list nodes: kube-scheduler's choice cannot be "
                                                    "predicted",))  # fmt: skip
                classes = list(state.store("priorityclasses").items.values())
                preemptor = _preemptor(request, pods.get(request.job_id or ""), classes)
                nodes, infos, pdbs = self._converted()
            budgets = self._budgets_for(pdbs, infos)
            with gc_paused():  # (a few hundred thousand short-lived objects, none in a cycle)
                return default_preemption(preemptor, nodes, infos, pdbs, scheduler_minor=minor,
                                          budgets=budgets).to_plan()  # fmt: skip


def kueue_plan(snapshot: Snapshot, request: PreviewRequest) -> NativePlan | None:
    """Kueue's own plan for a request waiting in one of its ClusterQueues (`queue_plan`), as a
    native plan: every pod of each workload it would preempt. None: the request is not Kueue's."""
    found = queue_plan(snapshot, request)
    if found is None:
        return None
    victims = []
    for victim in found.victims:
        wl = victim.workload
        details = {"clusterqueue": wl.queue, "workload": wl.key}
        if found.flavor:
            details["flavor"] = found.flavor
        for job in sorted(wl.jobs, key=lambda j: j.id):
            why = f"whole workload {wl.key} ({wl.gpus} GPUs), {victim.reason}"
            victims.append(NativeVictim(job.id, job.nodes, job.gpus, wl.priority, why, details))
    nodes = tuple(sorted({n for v in victims for n in v.nodes}))
    notes = (*found.notes, "once Kueue admits it, kube-scheduler places its pods, and preempts by pod priority "
             "where the nodes are full")  # fmt: skip
    return NativePlan(found.would_preempt, nodes, tuple(victims), notes, scheduler="Kueue")


def _preemptor(request: PreviewRequest, pod: w.Pod | None, classes: list[w.PriorityClass]) -> Preemptor:
    by_name = {c.metadata.name: c for c in classes}
    if pod is not None:
        spec = pod.spec
        priority = spec.priority if spec.priority is not None else 0
        policy = spec.preemption_policy or _policy(by_name.get(spec.priority_class_name))
        moved = request.urgent or (request.priority is not None and request.priority != priority)
        if moved:
            # (a preview at another priority: the class a bump would move the pod to)
            chosen = choose_class(classes, None if request.urgent else request.priority, policy)
            if chosen is not None:
                priority, policy = chosen.value, _policy(chosen)
            elif request.priority is not None:
                priority = request.priority
        tolerations = tuple(Toleration(t.key, t.operator or "Equal", t.value, t.effect) for t in spec.tolerations)
        return Preemptor(pod.metadata.key, pod.metadata.namespace, priority, pod.gpus(), policy,
                         pod.status.nominated_node_name or None, tolerations)  # fmt: skip
    cls = by_name.get(request.job_class or "")
    if request.urgent:
        cls = choose_class(classes, None)
    if request.priority is not None:
        priority = request.priority
    elif cls is not None:
        priority = cls.value
    else:
        default = next((c for c in classes if c.global_default), None)
        cls, priority = default, (default.value if default is not None else 0)
    return Preemptor("what-if", request.tenant or "", priority, request.gpus, _policy(cls), None, (_GPU_TOLERATION,))


def _policy(cls: w.PriorityClass | None) -> str:
    return cls.preemption_policy if cls is not None and cls.preemption_policy else "PreemptLowerPriority"
