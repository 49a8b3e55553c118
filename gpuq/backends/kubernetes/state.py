"""The cluster as gpuq keeps it between snapshots: one list + watch cache per resource, and the
model objects derived from them, updated per event.

Resources: pods (only those requesting GPUs are kept), nodes (only those with GPUs), PriorityClasses,
PodDisruptionBudgets, ``Preempted`` Events, and — when discovery shows the ``kueue.x-k8s.io``
group — Kueue Workloads, WorkloadPriorityClasses, ClusterQueues and LocalQueues. A watch event
re-converts only the object it names (a pod's Job, the per-node GPU count it changes; an Event's
pod), so applying one costs the
same on 150,000 pods as on ten (benchmarks/README.md). `snapshot` assembles the model from what
is cached.

A resource the credentials may not list (403) degrades, never fails the whole view (pods
excepted: without them there is nothing to show): no nodes → occupancy from pods only (a node
per node name the bound pods carry, as many GPUs as they hold); no Events → preemptions from
the pods' DisruptionTarget conditions only; no PDBs or PriorityClasses → none. `notes` says
which, in words the views can show. Kueue absent (the group is not served, or a plain-text 404)
is no error: it is off.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

import msgspec
from msgspec.structs import replace

from gpuq.backends.kubernetes import kueue
from gpuq.backends.kubernetes import wire as w
from gpuq.backends.kubernetes.client import KubeClient
from gpuq.backends.kubernetes.convert import (
    KUEUE,
    NO_CLASS,
    admission_reservations,
    admitted_owners,
    cluster_queue,
    gpu_flavor,
    job_class,
    model_node,
    pod_job,
    pod_preemption_time,
    preemption_event,
    synthetic_node,
    workload_class,
    workload_job,
)
from gpuq.backends.kubernetes.listwatch import DEFAULT_PAGE, Informer, ResourceSpec, Store
from gpuq.backends.kubernetes.selector import parse_selector
from gpuq.errors import NotFound, PermissionDenied
from gpuq.model import Job, JobClass, PreemptionEvent, Queue, QueueAdmission, Snapshot, Unread
from gpuq.model import Node as ModelNode
from gpuq.model.placement import mark_conflicts

__all__ = ["OPTIONAL", "STOP_WAIT_S", "ClusterState", "resource_specs"]

#: how long `stop` waits for the watch threads, in all
STOP_WAIT_S = 3.0

#: resources whose absence degrades a feature (the others are needed)
OPTIONAL = frozenset({"nodes", "priorityclasses", "pdbs", "events", "workloads", "workloadpriorityclasses",
                      "clusterqueues", "localqueues"})  # fmt: skip

_DEGRADED = {
    "nodes": "no right to list nodes: GPU totals from pods only (node sizes, GPU models and states unknown: a job "
             "that needs more GPUs than the pods hold reads as never fitting)",
    "priorityclasses": "no right to list PriorityClasses: classes from the pods' own priorities",
    "pdbs": "no right to list PodDisruptionBudgets: none are shown",
    "events": "no right to list Events: preemptions from pod conditions only",
    "workloads": "no right to list Kueue Workloads: jobs Kueue holds back are not shown",
    "workloadpriorityclasses": "no right to list Kueue WorkloadPriorityClasses: their values are unknown",
    "clusterqueues": "no right to list Kueue ClusterQueues: their preemption rules are unknown (a waiting "
                     "workload's plan keeps only to the workloads Kueue admitted)",
    "localqueues": "no right to list Kueue LocalQueues: a waiting workload's ClusterQueue is unknown (its plan keeps "
                   "only to the workloads Kueue admitted)",
}


#: the resources by their API names (`Snapshot.unread`), where gpuq's short name differs
_RESOURCE = {
    "pdbs": "poddisruptionbudgets",
    "workloads": "workloads.kueue.x-k8s.io",
    "workloadpriorityclasses": "workloadpriorityclasses.kueue.x-k8s.io",
    "clusterqueues": "clusterqueues.kueue.x-k8s.io",
    "localqueues": "localqueues.kueue.x-k8s.io",
}


def _gpu_pod(pod: w.Pod) -> bool:
    return pod.asks_gpus()


def _gpu_node(node: w.Node) -> bool:
    status = node.status
    return (
        w.GPU_RESOURCE in status.allocatable
        or w.GPU_RESOURCE in status.capacity
        or "nvidia.com/gpu.present" in node.metadata.labels
    )


def _scoped(core: str, namespace: str | None) -> str:
    """``/api/v1/pods`` → ``/api/v1/namespaces/NS/pods`` when a namespace is chosen."""
    if not namespace:
        return core
    head, _, resource = core.rpartition("/")
    return f"{head}/namespaces/{namespace}/{resource}"


def resource_specs(namespace: str | None, label_selector: str | None) -> dict[str, ResourceSpec[Any]]:
    """What gpuq lists and watches (Kueue's resources are added once discovery finds the group)."""
    pods_query = {"labelSelector": label_selector} if label_selector else {}
    return {
        "pods": ResourceSpec("pods", _scoped("/api/v1/pods", namespace), w.PodList, w.Pod, pods_query, _gpu_pod),
        "nodes": ResourceSpec("nodes", "/api/v1/nodes", w.NodeList, w.Node, {}, _gpu_node),
        "priorityclasses": ResourceSpec(
            "priorityclasses", "/apis/scheduling.k8s.io/v1/priorityclasses", w.PriorityClassList, w.PriorityClass
        ),
        "pdbs": ResourceSpec(
            "pdbs",
            _scoped("/apis/policy/v1/poddisruptionbudgets", namespace),
            w.PodDisruptionBudgetList,
            w.PodDisruptionBudget,
        ),  # fmt: skip
        "events": ResourceSpec(
            "events", _scoped("/api/v1/events", namespace), w.EventList, w.Event, {"fieldSelector": "reason=Preempted"}
        ),
    }


def kueue_specs(version: str, namespace: str | None) -> dict[str, ResourceSpec[Any]]:
    base = f"/apis/{kueue.GROUP}/{version}"
    return {
        "workloads": ResourceSpec(
            "workloads", _scoped(f"{base}/workloads", namespace), kueue.WorkloadList, kueue.Workload
        ),  # fmt: skip
        "workloadpriorityclasses": ResourceSpec(
            "workloadpriorityclasses",
            f"{base}/workloadpriorityclasses",
            kueue.WorkloadPriorityClassList,
            kueue.WorkloadPriorityClass,
        ),  # fmt: skip
        "clusterqueues": ResourceSpec(
            "clusterqueues", f"{base}/clusterqueues", kueue.ClusterQueueList, kueue.ClusterQueue
        ),  # fmt: skip
        "localqueues": ResourceSpec(
            "localqueues", _scoped(f"{base}/localqueues", namespace), kueue.LocalQueueList, kueue.LocalQueue
        ),  # fmt: skip
    }


class ClusterState:
    """The caches and the model derived from them (see the module docstring). Every method may be
    called from any thread; watch threads apply events under `lock`."""

    def __init__(
        self,
        client: KubeClient,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        watch: bool = True,
        watch_timeout_s: int = 300,
        page: int = DEFAULT_PAGE,
    ) -> None:
        self.client = client
        self.namespace = namespace
        #: the waiting Workloads shown: those whose labels match `label_selector` (pods are chosen
        #: by the server; every Workload is listed, so that a selected pod's admission is known)
        self.workload_selected = parse_selector(label_selector or "")
        self.watch = watch
        self.lock = threading.RLock()
        self._make: Callable[[ResourceSpec[Any]], Informer[Any]] = lambda spec: Informer(
            client, spec, self.lock, self._changed, watch_timeout_s=watch_timeout_s, page=page
        )
        self.informers: dict[str, Informer[Any]] = {
            name: self._make(spec) for name, spec in resource_specs(namespace, label_selector).items()
        }
        #: the Kueue API version served (None: Kueue absent, or not looked for yet)
        self.kueue_version: str | None = None
        self.kueue_note = ""
        self.synced = False
        #: `stop` was called: no watch starts again (a read still running in another thread, the
        #: console's, may finish its list, but leaves no thread behind)
        self.closed = False
        # derived model, kept current by `_changed`
        self.jobs: dict[str, Job] = {}
        self.used: dict[str, int] = {}
        self._preempted: dict[str, dict[str, tuple[datetime, w.Event]]] = {}  # pod key -> event key -> …
        self._nodes: dict[str, tuple[w.Node, int, ModelNode]] = {}
        #: called under `lock` with (resource, object before, after) for each change, (resource,
        #: None, None) after a list: what keeps other caches (the scheduler preview's) current
        self.hooks: list[Callable[[str, Any, Any], None]] = []

    # ------------------------------------------------------------------ reading
    def refresh(self) -> None:
        """Bring the caches up to date: everything listed on the first call (and whenever
        watching is off); later, only a resource whose watch stopped on an error is listed again
        (recovery: raises `Unreachable` while the server is still away), its watch restarted."""
        if not self.synced or not self.watch:
            self._sync()
            return
        for name, informer in list(self.informers.items()):
            if informer.error is not None and not informer.store.denied:
                self._list(name, informer)
                self._start(informer)

    def _sync(self) -> None:
        if self.kueue_version is None and not self.kueue_note:
            self._discover()
        for name, informer in list(self.informers.items()):
            self._list(name, informer)
        self.synced = True
        if self.watch:
            for informer in self.informers.values():
                if not informer.store.denied:
                    self._start(informer)

    def _start(self, informer: Informer[Any]) -> None:
        with self.lock:  # (against `stop`: once it has run, no thread starts)
            if not self.closed:
                informer.start()

    def _list(self, name: str, informer: Informer[Any]) -> None:
        try:
            informer.list()
        except (PermissionDenied, NotFound) as exc:
            if name not in OPTIONAL:
                raise
            with self.lock:
                store = informer.store
                store.replace((), "")
                store.denied = str(exc) if isinstance(exc, PermissionDenied) else f"not served: {exc}"
                self._changed(store, None, None)
                if name in ("workloads", "workloadpriorityclasses") and isinstance(exc, NotFound):
                    self.kueue_note = "Kueue not installed (its API answers 404)"

    def _discover(self) -> None:
        """Whether the server serves Kueue's group (``GET /apis``); its resources join the caches."""
        try:
            groups = self.client.get("/apis", msgspec.json.Decoder(w.APIGroupList))
        except (PermissionDenied, NotFound) as exc:
            self.kueue_note = f"API discovery unavailable ({exc}): Kueue not looked for"
            return
        version = groups.preferred(kueue.GROUP)
        if version is None:
            self.kueue_note = "Kueue not installed"
            return
        self.kueue_version = version
        for name, spec in kueue_specs(version, self.namespace).items():
            self.informers[name] = self._make(spec)

    def stop(self, timeout_s: float = STOP_WAIT_S) -> bool:
        """Stop every watch and wait for their threads, `timeout_s` in all (each is woken from
        its read at once; one still opening its request waits for the server's answer, or the
        client's timeout). Whether all have ended."""
        with self.lock:
            self.closed = True
            informers = list(self.informers.values())
        for informer in informers:
            informer.stop()
        deadline = time.monotonic() + timeout_s
        return all([informer.join(deadline - time.monotonic()) for informer in informers])

    @property
    def notes(self) -> tuple[str, ...]:
        """What the views should say is missing (RBAC), in words for the operator."""
        with self.lock:
            found = [_DEGRADED[name] for name, inf in self.informers.items() if inf.store.denied
                     and not inf.store.denied.startswith("not served")]  # fmt: skip
            found.extend(self._queues()[1])
        return tuple(found)

    def _unread(self) -> tuple[Unread, ...]:
        """The resources the credentials may not list, for the snapshot (`Snapshot.unread`):
        what each one's absence leaves the views with."""
        return tuple(
            Unread(_RESOURCE.get(name, name), "forbidden", _DEGRADED[name].split(": ", 1)[1])
            for name, inf in self.informers.items()
            if inf.store.denied and not inf.store.denied.startswith("not served")
        )

    def store(self, name: str) -> Store[Any]:
        return self.informers[name].store

    # ------------------------------------------------------------------ the model, per change
    def _changed(self, store: Store[Any], old: Any, new: Any) -> None:
        """Listener of every informer (called under `lock`): (None, None) after a list."""
        name = store.spec.name
        for hook in self.hooks:
            hook(name, old, new)
        if name == "pods":
            if old is None and new is None:
                self._rebuild_jobs()
            else:
                self._pod_changed(old, new)
        elif name == "events":
            if old is None and new is None:
                before = self._preempted
                self._preempted = {}
                for event in store.items.values():
                    self._event_changed(None, event, reconvert=False)
                # (only the pods whose preemptions changed are converted again, not 150,000)
                pods = self.informers["pods"].store.items
                for key in before.keys() | self._preempted.keys():
                    if key in pods and self._times(key) != tuple(t for t, _ in before.get(key, {}).values()):
                        self._pod_changed(pods[key], pods[key])
            else:
                self._event_changed(old, new, reconvert=True)

    def _times(self, key: str) -> tuple[datetime, ...]:
        found = self._preempted.get(key)
        return tuple(t for t, _ in found.values()) if found else ()

    def _rebuild_jobs(self) -> None:
        pods = self.informers["pods"].store.items
        self.jobs = {key: pod_job(pod, self._times(key)) for key, pod in pods.items()}
        used: dict[str, int] = {}
        for job in self.jobs.values():
            for node, indexes in job.allocation.items():
                used[node] = used.get(node, 0) + len(indexes)
        self.used = used

    def _pod_changed(self, old: w.Pod | None, new: w.Pod | None) -> None:
        key = (new or old).metadata.key  # type: ignore[union-attr]  # (one of them is set)
        before = self.jobs.pop(key, None)
        if before is not None:
            self._count(before, -1)
        if new is not None:
            job = self.jobs[key] = pod_job(new, self._times(key))
            self._count(job, 1)

    def _count(self, job: Job, sign: int) -> None:
        for node, indexes in job.allocation.items():
            left = self.used.get(node, 0) + sign * len(indexes)
            if left:
                self.used[node] = left
            else:
                self.used.pop(node, None)

    def _event_changed(self, old: w.Event | None, new: w.Event | None, *, reconvert: bool) -> None:
        for event, adding in ((old, False), (new, True)):
            if event is None or event.subject.kind not in ("Pod", ""):
                continue
            pod_key, event_key = event.subject.key, event.metadata.key
            found = self._preempted.setdefault(pod_key, {})
            found.pop(event_key, None)
            moment = event.time
            if adding and event.reason == "Preempted" and moment is not None:
                found[event_key] = (moment, event)
            if not found:
                self._preempted.pop(pod_key, None)
            pod = self.informers["pods"].store.items.get(pod_key)
            if reconvert and pod is not None:
                self._pod_changed(pod, pod)

    # ------------------------------------------------------------------ snapshot
    def snapshot(self, cluster: str, taken_at: datetime) -> Snapshot:
        """The model of what is cached now."""
        with self.lock:
            classes = self._classes()
            jobs = self._admitted(list(self.jobs.values()))
            jobs.extend(self._workload_jobs())
            nodes = self._model_nodes()
            events = self._preemption_events()
            queues = self._queues()[0]
            unread = self._unread()
        snapshot = Snapshot(cluster, "kubernetes", taken_at, classes, nodes, tuple(jobs), events, queues, unread)
        return mark_conflicts(snapshot)

    def _classes(self) -> tuple[JobClass, ...]:
        found: dict[str, JobClass] = {}
        for pc in self.store("priorityclasses").items.values():
            found[pc.metadata.name] = job_class(pc)
        if "workloadpriorityclasses" in self.informers:
            for wpc in self.store("workloadpriorityclasses").items.values():
                found.setdefault(wpc.metadata.name, workload_class(wpc))
        # A class a pod names that cannot be read (no right, or deleted since): its pods' priority.
        for job in self.jobs.values():
            if job.job_class not in found:
                found[job.job_class] = JobClass(job.job_class, job.priority if job.job_class != NO_CLASS else 0)
        return tuple(sorted(found.values(), key=lambda c: (-c.priority, c.name)))

    def _admitted(self, jobs: list[Job]) -> list[Job]:
        """`jobs` with the running pods of workloads Kueue admitted marked (`Job.admitted_by`):
        the only jobs Kueue preempts for a workload it holds back; each with its workload's
        ClusterQueue and priority, which Kueue's preemption rules go by (`Job.queue`)."""
        if "workloads" not in self.informers:
            return jobs
        owners = admitted_owners(self.store("workloads").items.values())
        if not owners:
            return jobs
        out = []
        for job in jobs:
            workload = owners.get(job.owner or job.id) if job.holds_gpus else None
            # (a pending pod of an admitted workload waits for kube-scheduler, which may preempt any pod)
            if workload is not None:
                admission = workload.status.admission
                reserved = workload.condition("QuotaReserved")
                job = replace(job, admitted_by=KUEUE, queue=admission.cluster_queue or None if admission else None,
                              queue_priority=workload.spec.priority, queue_flavor=gpu_flavor(admission),
                              queue_time=workload.metadata.creation_timestamp,
                              admitted_time=reserved.last_transition_time if reserved else None)  # fmt: skip
            out.append(job)
        return out

    def _workload_jobs(self) -> list[Job]:
        if "workloads" not in self.informers:
            return []
        # a waiting workload's ClusterQueue: its LocalQueue's (namespace/name → ClusterQueue)
        local = {key: lq.spec.cluster_queue for key, lq in self.store("localqueues").items.items()}
        out = []
        for workload in self.store("workloads").items.values():
            if not self.workload_selected(workload.metadata.labels):
                continue
            job = workload_job(workload)
            if job is not None and job.id not in self.jobs:
                queue = local.get(f"{workload.metadata.namespace}/{workload.spec.queue_name}")
                out.append(replace(job, queue=queue or None) if queue else job)
        return out

    def _queues(self) -> tuple[tuple[Queue, ...], tuple[str, ...]]:
        """Kueue's ClusterQueues as `Snapshot.queues`, and what in them could not be read."""
        if "clusterqueues" not in self.informers:
            return (), ()
        queues: list[Queue] = []
        problems: list[str] = []
        local: dict[str, list[str]] = {}
        for key, lq in self.store("localqueues").items.items():
            local.setdefault(lq.spec.cluster_queue, []).append(key)
        reserved: dict[str, list[QueueAdmission]] = {}
        if "workloads" in self.informers:
            reserved, unread_admissions = admission_reservations(self.store("workloads").items.values())
            problems.extend(unread_admissions)
        for cq in self.store("clusterqueues").items.values():
            queue, unread = cluster_queue(cq)
            found = local.get(queue.name)
            if found:
                queue = replace(queue, local_queues=tuple(sorted(found)))
            if (admitted := reserved.get(queue.name)) is not None:
                queue = replace(queue, admitted=tuple(sorted(admitted, key=lambda a: a.workload)))
            queues.append(queue)
            problems.extend(unread)
        return tuple(sorted(queues, key=lambda q: q.name)), tuple(problems)

    def _model_nodes(self) -> tuple[ModelNode, ...]:
        nodes_store = self.store("nodes")
        if nodes_store.denied:
            return tuple(synthetic_node(name, used) for name, used in sorted(self.used.items()))
        out = []
        cache: dict[str, tuple[w.Node, int, ModelNode]] = {}
        for key, node in nodes_store.items.items():
            used = self.used.get(key, 0)
            hit = self._nodes.get(key)
            model = hit[2] if hit is not None and hit[0] is node and hit[1] == used else model_node(node, used)
            cache[key] = (node, used, model)
            out.append(model)
        self._nodes = cache
        return tuple(out)

    def _preemption_events(self) -> tuple[PreemptionEvent, ...]:
        out: list[PreemptionEvent] = []
        seen: dict[str, list[datetime]] = {}
        for pod_key, found in self._preempted.items():
            victim = self.jobs.get(pod_key)
            for moment, event in found.values():
                related = event.related.key if event.related is not None else None
                out.append(preemption_event(moment, pod_key, victim, event.text, related))
                seen.setdefault(pod_key, []).append(moment)
        # A preemption the Events no longer show (they expire after an hour) or that gpuq may not
        # read: from the victim's DisruptionTarget condition.
        pods = self.store("pods").items
        for key, job in self.jobs.items():
            if not job.preemption_times:
                continue
            own = pod_preemption_time(pods[key])
            if own is not None and all(abs((own - t).total_seconds()) > 120 for t in seen.get(key, ())):
                cond = pods[key].status.condition("DisruptionTarget")
                out.append(preemption_event(own, key, job, cond.message if cond else "", None))
        out.sort(key=lambda e: (e.time, e.victim))
        return tuple(out)
