"""`KubernetesBackend`: a Kubernetes cluster's GPU pods, nodes and classes, read by list + watch,
acted on through the API (bump, exempt, preempt) and previewed as kube-scheduler would preempt.

Wiring only: `client` finds the API server and makes requests, `listwatch` keeps one resource
current, `state` keeps them all and derives the model, `convert` maps objects to it, `actions`
(with `writes`) prepares and applies the actions, `native` (with `preemption`) predicts
kube-scheduler's DefaultPreemption.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, ClassVar

from gpuq.backends.base import ActionPlan, ActionResult, Backend, Capabilities, NativePlan, OptionSpec, PriorityChange
from gpuq.backends.kubernetes.actions import KubeActions
from gpuq.backends.kubernetes.client import KubeClient
from gpuq.backends.kubernetes.convert import SYSTEM_PRIORITY_MIN
from gpuq.backends.kubernetes.listwatch import DEFAULT_PAGE
from gpuq.backends.kubernetes.native import NativePreview, kueue_plan
from gpuq.backends.kubernetes.state import ClusterState
from gpuq.errors import BadInput
from gpuq.model import PreviewRequest, Snapshot, from_epoch
from gpuq.policy.config import Mode

if TYPE_CHECKING:
    from gpuq.trace.record import TraceJob

__all__ = ["ACTIONS", "KubernetesBackend"]

#: what a Kubernetes cluster can do (`resume` cannot be: nothing suspends a pod)
ACTIONS = frozenset({"bump", "exempt", "preempt"})
_HOUR = 3600.0
#: a namespace name (RFC 1123 label)
_NAMESPACE = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
#: PriorityClass values an operator may create (int32, up to a billion: above is for system pods)
_USER_PRIORITY = (-(2**31), SYSTEM_PRIORITY_MIN - 1)


class KubernetesBackend(Backend):
    """A Kubernetes cluster, found the way kubectl finds it (KUBECONFIG, ~/.kube/config, in-cluster)."""

    name = "kubernetes"
    options: ClassVar[Mapping[str, OptionSpec]] = MappingProxyType({
        "cluster": OptionSpec(str, "the name gpuq shows for the cluster (default: the context's)"),
        "context": OptionSpec(str, "the kubeconfig context to use (default: its current-context)"),
        "kubeconfig": OptionSpec(str, "the kubeconfig file(s), colon-separated (default: $KUBECONFIG, "
                                 "else ~/.kube/config)"),
        "in_cluster": OptionSpec(bool, "use the pod's service account instead of a kubeconfig"),
        "namespace": OptionSpec(str, "read one namespace only (default: all namespaces)"),
        "label_selector": OptionSpec(str, "read only the pods, and Kueue Workloads, this label selector "
                                     "matches (kubectl -l)"),
        "timeout_s": OptionSpec(float, "seconds to connect or wait for an answer before the API server counts "
                                "as unreachable", minimum=0.0, exclusive=True, maximum=_HOUR),
        "watch": OptionSpec(bool, "keep the state current between snapshots with watch streams (off: list "
                            "everything at every snapshot)"),
        "watch_timeout_s": OptionSpec(int, "seconds the server keeps one watch open before gpuq reopens it",
                                      minimum=1, maximum=int(_HOUR)),
        "page_size": OptionSpec(int, "objects per page of a list (limit/continue)", minimum=1, maximum=100_000),
    })  # fmt: skip
    internals: ClassVar[frozenset[str]] = frozenset({"clock"})

    def __init__(
        self,
        cluster: str | None = None,
        *,
        context: str | None = None,
        kubeconfig: str | None = None,
        in_cluster: bool = False,
        namespace: str | None = None,
        label_selector: str | None = None,
        timeout_s: float = 10.0,
        watch: bool = True,
        watch_timeout_s: int = 300,
        page_size: int = DEFAULT_PAGE,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if namespace is not None and namespace not in ("", "*") and not _NAMESPACE.fullmatch(namespace):
            raise BadInput(f"namespace {namespace!r} is not a Kubernetes namespace name (lower-case letters, "
                           "digits and '-', at most 63)")  # fmt: skip
        if in_cluster and (kubeconfig or context):
            raise BadInput("in_cluster uses the pod's service account: give it without kubeconfig or context")
        self.cluster = cluster or context or "kubernetes"
        self.clock = clock
        self.client = KubeClient(kubeconfig=kubeconfig, context=context, in_cluster=in_cluster, timeout_s=timeout_s)
        self.state = ClusterState(
            self.client,
            namespace=namespace if namespace not in (None, "", "*") else None,
            label_selector=label_selector or None,
            watch=watch,
            watch_timeout_s=watch_timeout_s,
            page=page_size,
        )
        self.actions = KubeActions(self.state, self.cluster)
        self.native = NativePreview(self.state)

    @property
    def capabilities(self) -> Capabilities:
        notes = list(self.state.notes) if self.state.synced else []
        if self.state.kueue_note and self.state.kueue_note != "Kueue not installed":
            notes.append(self.state.kueue_note)
        return Capabilities(
            actions=ACTIONS,
            priority_range=self.priority_range(),
            native_preview=True,
            what_if_max_nodes=1,  # (a what-if is one pod, and a pod runs on one node)
            notes=tuple(notes),
            history=True,
        )

    def priority_range(self) -> tuple[int, int]:
        """The lowest and highest value of the cluster's own PriorityClasses and Kueue
        WorkloadPriorityClasses (system classes left out); every value one could create before
        the classes are read."""
        with self.state.lock:
            values = [pc.value for pc in self.state.store("priorityclasses").items.values()
                      if pc.value < SYSTEM_PRIORITY_MIN]  # fmt: skip
            if "workloadpriorityclasses" in self.state.informers:
                values += [c.value for c in self.state.store("workloadpriorityclasses").items.values()]
        return (min(values), max(values)) if values else _USER_PRIORITY

    def snapshot(self, *, ledger: bool = True) -> Snapshot:
        """The cluster now: one list of everything on the first call, then what the watches
        applied since (a resource whose watch failed is listed again; Unreachable while the server
        is away)."""
        self.state.refresh()
        self.native.warm()
        return self.state.snapshot(self.cluster, from_epoch(self.clock()))

    # -- actions (README, "Kubernetes › Actions"; gpuq/backends/kubernetes/actions.py)

    def prepare_bump(self, job_id: str, change: PriorityChange, *, reason: str) -> ActionPlan:
        return self.actions.prepare_bump(job_id, change)

    def prepare_exempt(self, job_id: str, until: float | None, *, reason: str) -> ActionPlan:
        return self.actions.prepare_exempt(job_id, until)

    def prepare_preempt(self, job_id: str, mode: Mode, *, reason: str) -> ActionPlan:
        return self.actions.prepare_preempt(job_id, mode)

    def apply(self, plan: ActionPlan) -> ActionResult:
        return self.actions.apply(plan)

    def native_preview(self, snapshot: Snapshot, request: PreviewRequest) -> NativePlan | None:
        """kube-scheduler's DefaultPreemption for `request`, on what the cache holds now
        (gpuq/backends/kubernetes/native.py); for a request waiting in a Kueue ClusterQueue,
        Kueue's own plan instead (`native.kueue_plan`), which decides first."""
        if request.queue is not None:
            found = kueue_plan(snapshot, request)
            if found is not None:
                return found
        return self.native.plan(request)

    def export_history(self, since: float, until: float) -> Iterator[TraceJob]:
        """The GPU pods of every phase the API server holds, as a trace (`history.pods_history`)."""
        from gpuq.backends.kubernetes.history import pods_history

        return pods_history(self.state.informers["pods"], since, until, self.clock())

    def read_once(self) -> None:
        """A one-shot command: one list per resource, no watch (`ClusterState.watch` off)."""
        self.state.watch = False

    def close(self) -> None:
        """Stop the watch threads and wait for them (`ClusterState.stop`). The process must not
        end while one is inside a read: finalising the interpreter (OpenSSL's state with it)
        under a thread in the middle of a TLS read crashed it (issue 32)."""
        self.state.stop()
