"""bump / exempt / preempt on Kubernetes, in Kubernetes' own terms (README, "Kubernetes › Actions").

Each ``prepare_*`` reads the object afresh (``GET``), fixes the exact requests (`writes.Step`)
and has the server dry-run each one (``dryRun=All``: a refusal — RBAC, validation, a
PodDisruptionBudget — comes before the operator is asked, and ``--dry-run`` changes nothing).
`KubeActions.apply` reads the object again, refuses with `JobChanged` when what the plan was made
on changed, then sends the steps (`writes.Writer`: one retry on a stale resourceVersion, earlier
steps rolled back when a later one fails).

- bump, pending Kueue Workload: its WorkloadPriorityClass, when one has exactly the new value (a
  JSON patch whose first operation tests the resourceVersion, recording 69), else ``spec.priority``
  (a merge patch, recording 60).
- bump, pending pod of a ReplicaSet (not a Deployment's), ReplicationController or StatefulSet with
  ``updateStrategy: OnDelete``: the owner's pod template moves to the PriorityClass whose value best
  matches the request (`native.choose_class`: the smallest value at least the one asked for, else
  the largest, among the classes with the pod's own ``preemptionPolicy`` when there are any), then
  the pending pod is deleted so the controller recreates it at that priority.
  Refused for a bare pod (a pod's priority is immutable), a Job's pod (its template is immutable),
  a Deployment's or rolling StatefulSet's (a template change restarts every replica), a running pod.
- exempt: a PodDisruptionBudget ``gpuq-exempt-<pod>`` (``maxUnavailable: 0``, selecting the label
  ``gpuq.io/exempt-id=<pod uid>``, owned by the pod so it goes with it), then the pod's labels
  ``gpuq.io/exempt-until=<ISO 8601 basic time>`` and ``gpuq.io/exempt-id`` and the annotation
  ``gpuq.io/exempt-until=<RFC 3339>``. ``--off``: labels removed, then the budget deleted.
- preempt: the Eviction API (requeue, graceful: the pod's own grace period); cancel: DELETE with
  grace 0; suspend: refused (Kubernetes cannot suspend a pod).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import msgspec

from gpuq.backends.base import ActionPlan, ActionResult, ApiRequest, PriorityChange
from gpuq.backends.kubernetes import kueue
from gpuq.backends.kubernetes import wire as w
from gpuq.backends.kubernetes.client import ApiError
from gpuq.backends.kubernetes.convert import EXEMPT_KEY, parse_time
from gpuq.backends.kubernetes.native import choose_class, user_classes
from gpuq.backends.kubernetes.state import ClusterState
from gpuq.backends.kubernetes.writes import JSON_PATCH, MERGE_PATCH, Step, Write, Writer, object_path
from gpuq.errors import JobChanged, NotFound, Refused
from gpuq.policy.config import Mode
from gpuq.timefmt import format_time

__all__ = ["BARE_POD_REASON", "EXEMPT_ID", "PDB_PREFIX", "KubeActions", "exempt_label", "pdb_name"]

EXEMPT_ID = "gpuq.io/exempt-id"
MANAGED_BY = "app.kubernetes.io/managed-by"
PDB_PREFIX = "gpuq-exempt-"
BARE_POD_REASON = "a pod's priority is immutable; exempt it instead or recreate it with another priorityClassName"
_POD = msgspec.json.Decoder(w.Pod)
_CONTROLLER = msgspec.json.Decoder(w.Controller)
_WORKLOAD = msgspec.json.Decoder(kueue.Workload)
#: controllers whose pod template may change and that recreate a deleted pod from it
_TEMPLATE_OWNERS = {
    "ReplicaSet": ("/apis/apps/v1", "replicasets"),
    "ReplicationController": ("/api/v1", "replicationcontrollers"),
    "StatefulSet": ("/apis/apps/v1", "statefulsets"),
}
_NAME_MAX = 253


def exempt_label(until: float) -> str:
    """The label value of an exemption's end: ISO 8601's basic format (``20261130T080000Z``), as
    label values allow only ``[A-Za-z0-9_.-]`` (no ``:``), at most 63; it reads back with
    `datetime.fromisoformat`."""
    return datetime.fromtimestamp(until, UTC).strftime("%Y%m%dT%H%M%SZ")


def _rfc3339(until: float) -> str:
    return datetime.fromtimestamp(until, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def pdb_name(pod: w.Pod) -> str:
    """``gpuq-exempt-<pod>``; shortened with the pod's uid where the name would pass 253."""
    name = PDB_PREFIX + pod.metadata.name
    if len(name) <= _NAME_MAX:
        return name
    return name[: _NAME_MAX - 9] + "-" + pod.metadata.uid[:8]


def _pod_path(ns: str, name: str, sub: str = "") -> str:
    return object_path("/api/v1", ns, "pods", name, sub)


def _pdb_path(ns: str, name: str) -> str:
    return object_path("/apis/policy/v1", ns, "poddisruptionbudgets", name)


def _pod_facts(pod: w.Pod) -> dict[str, Any]:
    meta, spec = pod.metadata, pod.spec
    return {
        "uid": meta.uid, "node": spec.node_name, "phase": pod.status.phase,
        "deleting": meta.deletion_timestamp is not None, "priority": spec.priority,
        "class": spec.priority_class_name, "exempt": _exemption(pod),
    }  # fmt: skip


def _exemption(pod: w.Pod) -> tuple[str | None, str | None, str | None]:
    meta = pod.metadata
    return meta.labels.get(EXEMPT_KEY), meta.labels.get(EXEMPT_ID), meta.annotations.get(EXEMPT_KEY)


def _workload_facts(wl: kueue.Workload) -> dict[str, Any]:
    return {"uid": wl.metadata.uid, "priority": wl.spec.priority, "class": wl.class_name,
            "reserved": wl.is_true("QuotaReserved")}  # fmt: skip


def _epoch(moment: datetime | None) -> float | None:
    return None if moment is None else moment.timestamp()


class KubeActions:
    """The actions of one Kubernetes backend (its client and cache)."""

    def __init__(self, state: ClusterState, cluster: str) -> None:
        self.state = state
        self.client = state.client
        self.cluster = cluster
        self.writer = Writer(self.client)
        self._key = object()  # marks the plans this backend prepared: `apply` runs no other

    # ------------------------------------------------------------------ reading
    def _which(self, job_id: str) -> tuple[str, str]:
        """("pod" or "workload", the object's path); NotFound when the cache has neither."""
        with self.state.lock:
            pod = self.state.store("pods").items.get(job_id)
            workload = (self.state.store("workloads").items.get(job_id)
                        if "workloads" in self.state.informers else None)  # fmt: skip
        if pod is not None:
            return "pod", _pod_path(pod.metadata.namespace, pod.metadata.name)
        if workload is not None:
            base = f"/apis/{kueue.GROUP}/{self.state.kueue_version}"
            return "workload", object_path(base, workload.metadata.namespace, "workloads", workload.metadata.name)
        raise NotFound(f"no pod or Kueue Workload {job_id} on cluster {self.cluster}")

    def _get(self, path: str) -> bytes:
        return self.client.request("GET", path).body

    def _classes(self) -> list[w.PriorityClass]:
        with self.state.lock:
            return user_classes(self.state.store("priorityclasses").items.values())

    def _workload_classes(self) -> list[kueue.WorkloadPriorityClass]:
        if "workloadpriorityclasses" not in self.state.informers:
            return []
        with self.state.lock:
            found = self.state.store("workloadpriorityclasses").items.values()
            return sorted(found, key=lambda c: (c.value, c.metadata.name))

    # ------------------------------------------------------------------ bump
    def prepare_bump(self, job_id: str, change: PriorityChange) -> ActionPlan:
        kind, path = self._which(job_id)
        if kind == "workload":
            return self._bump_workload(job_id, path, change)
        pod = _POD.decode(self._get(path))
        spec, meta = pod.spec, pod.metadata
        if spec.node_name or pod.status.phase not in ("Pending", ""):
            raise Refused(f"pod {job_id} is {'bound to ' + spec.node_name if spec.node_name else pod.status.phase}: "
                          "a pod's priority is immutable and recreating a started pod restarts its work; bump "
                          "applies to pending pods (exempt protects a running one)")  # fmt: skip
        owner = meta.controller
        if owner is None:
            raise Refused(f"pod {job_id} has no controller: {BARE_POD_REASON}")
        if owner.kind == "Job" and owner.api_version.startswith("batch/"):
            raise Refused(
                f"pod {job_id} belongs to Job {meta.namespace}/{owner.name}, whose pod template is immutable "
                f"(Kubernetes refuses any change to a Job's spec.template), so the pod it recreates would keep "
                f"priorityClassName {spec.priority_class_name or '(none)'}; exempt the pod instead, or recreate the "
                "Job with another priorityClassName"
            )
        where = _TEMPLATE_OWNERS.get(owner.kind)
        if where is None:
            raise Refused(f"pod {job_id} belongs to {owner.kind} {meta.namespace}/{owner.name}: gpuq moves the pod "
                          "template only of ReplicaSets, ReplicationControllers and StatefulSets (OnDelete); "
                          f"{BARE_POD_REASON}")  # fmt: skip
        owner_path = object_path(where[0], meta.namespace, where[1], owner.name)
        controller = _CONTROLLER.decode(self._get(owner_path))
        if controller.metadata.uid != owner.uid:
            raise JobChanged(f"{owner.kind} {meta.namespace}/{owner.name} was replaced since pod {job_id} was "
                             "created; look again and retry")  # fmt: skip
        rolls = self._rollout(controller, owner.kind)
        if rolls:
            raise Refused(f"pod {job_id} belongs to {rolls}; {BARE_POD_REASON}")
        current = spec.priority if spec.priority is not None else 0
        target = None if change.urgent else change.new_priority(current)
        policy = spec.preemption_policy or next(
            (c.preemption_policy for c in self._classes() if c.metadata.name == spec.priority_class_name), None
        )
        chosen = choose_class(self._classes(), target, policy or "PreemptLowerPriority")
        if chosen is None:
            raise Refused(f"cluster {self.cluster} has no PriorityClass to move pod {job_id} to")
        if chosen.metadata.name == spec.priority_class_name:
            asked = "the top" if target is None else target
            raise Refused(f"PriorityClass {chosen.metadata.name} ({chosen.value}) is the closest to {asked} and "
                          f"pod {job_id} already has it: nothing to change")  # fmt: skip
        old_class = controller.spec.template.spec.priority_class_name
        template = self._template_step(
            owner.kind, meta.namespace, owner.name, owner_path, controller, chosen.metadata.name
        )
        undo = Write("PATCH", owner_path, {"spec": {"template": {"spec": {"priorityClassName": old_class or None}}}},
                     MERGE_PATCH)  # fmt: skip
        template = Step(template.write, template.what, template.reread, template.rebuild, undo)
        delete = Step(Write("DELETE", path, {"apiVersion": "v1", "kind": "DeleteOptions",
                                             "preconditions": {"uid": meta.uid}}),
                      f"delete pending pod {job_id}")  # fmt: skip
        warnings = [
            f"{owner.kind} {meta.namespace}/{owner.name} recreates the pod"
            + (" under a new name" if owner.kind != "StatefulSet" else "")
            + f" at priority {chosen.value}; its other pods keep their priority until they are recreated"
        ]
        if target is not None and chosen.value != target:
            rule = "the smallest value at least that" if chosen.value > target else "none is that high: the largest"
            warnings.append(f"no PriorityClass has value {target}: {chosen.metadata.name} ({chosen.value}) is {rule}")
        before = {"priority": current, "class": spec.priority_class_name}
        after = {"priority": chosen.value, "class": chosen.metadata.name}
        return self._plan("bump", job_id, "pod", path, _pod_facts(pod), (template, delete), before, after, warnings,
                          f"move {owner.kind} {meta.namespace}/{owner.name}'s pod template to PriorityClass "
                          f"{chosen.metadata.name} ({chosen.value}) and recreate pending pod {job_id}")  # fmt: skip

    def _rollout(self, controller: w.Controller, kind: str) -> str:
        """Why patching this controller's template would restart pods that run ("" when it would not)."""
        meta = controller.metadata
        parent = meta.controller
        if kind == "ReplicaSet" and parent is not None:
            return (
                f"ReplicaSet {meta.namespace}/{meta.name} of {parent.kind} {meta.namespace}/{parent.name}: "
                f"changing the {parent.kind}'s pod template rolls out every replica (running ones restart)"
            )
        strategy = controller.spec.update_strategy
        if kind == "StatefulSet" and (strategy is None or strategy.type != "OnDelete"):
            return (f"StatefulSet {meta.namespace}/{meta.name}, which updates by RollingUpdate: changing its pod "
                    "template restarts every replica")  # fmt: skip
        return ""

    def _template_step(self, kind: str, ns: str, name: str, path: str, controller: w.Controller, cls: str) -> Step:
        seen = controller.spec.template.spec.priority_class_name

        def write_on(version: str) -> Write:
            # (an explicit priority in a template would clash with the class's: the Priority
            # admission plugin refuses a pod whose priority does not match its class)
            body = {"metadata": {"resourceVersion": version},
                    "spec": {"template": {"spec": {"priorityClassName": cls, "priority": None}}}}  # fmt: skip
            return Write("PATCH", path, body, MERGE_PATCH)

        def rebuild(fresh: bytes, exc: ApiError) -> Write | None:
            again = _CONTROLLER.decode(fresh)
            if again.metadata.uid != controller.metadata.uid or again.spec.template.spec.priority_class_name != seen:
                raise JobChanged(f"{kind} {ns}/{name} changed since the bump was prepared (its pod template names "
                                 f"{again.spec.template.spec.priority_class_name or 'no class'}); nothing was done: "
                                 "look again and retry")  # fmt: skip
            return write_on(again.metadata.resource_version)

        what = f"patch {kind} {ns}/{name}'s pod template to priorityClassName {cls}"
        return Step(write_on(controller.metadata.resource_version), what, path, rebuild)

    def _bump_workload(self, job_id: str, path: str, change: PriorityChange) -> ActionPlan:
        wl = _WORKLOAD.decode(self._get(path))
        if wl.is_true("QuotaReserved"):
            raise Refused(f"Kueue Workload {job_id} holds quota: its pods are the jobs to act on")
        current = wl.spec.priority if wl.spec.priority is not None else 0
        classes = self._workload_classes()
        if change.urgent:
            top = classes[-1] if classes else choose_class(self._classes(), None)
            if top is None:
                raise Refused(f"cluster {self.cluster} has no WorkloadPriorityClass or PriorityClass to make "
                              f"{job_id} urgent with")  # fmt: skip
            new = top.value
        else:
            found = change.new_priority(current)
            assert found is not None
            new = found
        by_value = next((c for c in classes if c.value == new), None)
        old_class = wl.class_name
        warnings = ["the pods Kueue starts once it admits the Workload take their own priority from their "
                    "PriorityClass (the Job's pod template); the Workload's priority orders Kueue's queue and "
                    "its preemptions"]  # fmt: skip
        if by_value is not None and by_value.metadata.name != old_class:
            cls = by_value.metadata.name
            step = self._class_step(job_id, path, wl, cls, new)
            message = f"move Kueue Workload {job_id} to WorkloadPriorityClass {cls} ({new})"
        else:
            if new == current:
                raise Refused(f"Kueue Workload {job_id} already has priority {new}: nothing to change")
            cls = old_class
            step = Step(Write("PATCH", path, {"spec": {"priority": new}}, MERGE_PATCH),
                        f"patch Kueue Workload {job_id}'s spec.priority to {new}")  # fmt: skip
            message = f"set Kueue Workload {job_id}'s priority to {new}"
            if old_class:
                value = next((c.value for c in classes if c.metadata.name == old_class), None)
                named = f" ({value})" if value is not None else ""
                warnings.append(f"its priority class reference still names {old_class}{named}; Kueue orders and "
                                "preempts by spec.priority")  # fmt: skip
        before = {"priority": current, "class": old_class}
        after = {"priority": new, "class": cls}
        return self._plan("bump", job_id, "workload", path, _workload_facts(wl), (step,), before, after, warnings,
                          message)  # fmt: skip

    def _class_step(self, job_id: str, path: str, wl: kueue.Workload, cls: str, value: int) -> Step:
        seen = _workload_facts(wl)

        def ops(version: str) -> list[dict[str, Any]]:
            spec = wl.spec
            out: list[dict[str, Any]] = [{"op": "test", "path": "/metadata/resourceVersion", "value": version}]
            if spec.priority_class_ref is not None:
                out.append({"op": "replace", "path": "/spec/priorityClassRef/name", "value": cls})
            elif spec.priority_class_name:  # (v1beta1)
                out.append({"op": "replace", "path": "/spec/priorityClassName", "value": cls})
            else:
                out.append(
                    {
                        "op": "add",
                        "path": "/spec/priorityClassRef",
                        "value": {"group": kueue.GROUP, "kind": "WorkloadPriorityClass", "name": cls},
                    }
                )
            out.append({"op": "replace" if spec.priority is not None else "add", "path": "/spec/priority",
                        "value": value})  # fmt: skip
            return out

        def rebuild(fresh: bytes, exc: ApiError) -> Write | None:
            again = _WORKLOAD.decode(fresh)
            if again.metadata.resource_version == wl.metadata.resource_version:
                return None  # (not stale: a real validation error)
            now = _workload_facts(again)
            if now != seen:
                changed = ", ".join(f"{k} {seen[k]} -> {now[k]}" for k in seen if seen[k] != now[k])
                raise JobChanged(f"Kueue Workload {job_id} changed since the bump was prepared ({changed}); nothing "
                                 "was done: look again and retry")  # fmt: skip
            return Write("PATCH", path, ops(again.metadata.resource_version), JSON_PATCH)

        write = Write("PATCH", path, ops(wl.metadata.resource_version), JSON_PATCH)
        return Step(write, f"patch Kueue Workload {job_id} to WorkloadPriorityClass {cls}", path, rebuild)

    # ------------------------------------------------------------------ exempt
    def prepare_exempt(self, job_id: str, until: float | None) -> ActionPlan:
        kind, path = self._which(job_id)
        if kind == "workload":
            raise Refused(f"{job_id} is a Kueue Workload, not a pod: PodDisruptionBudgets do not apply to Kueue's "
                          "preemption; exempt its pods once it is admitted")  # fmt: skip
        pod = _POD.decode(self._get(path))
        meta = pod.metadata
        ns, name = meta.namespace, pdb_name(pod)
        budget_path = _pdb_path(ns, name)
        existing = self._own_budget(budget_path, pod)
        label, ident, note = _exemption(pod)
        was = parse_time(note) or parse_time(label)
        before = {"exempt_until": _epoch(was)}
        budget = f"PodDisruptionBudget {ns}/{name}"
        steps: list[Step] = []
        warnings: list[str] = []
        if until is not None:
            if not existing:
                body = {
                    "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                    "metadata": {"name": name, "namespace": ns, "labels": {MANAGED_BY: "gpuq"},
                                 "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": meta.name,
                                                      "uid": meta.uid}]},
                    "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {EXEMPT_ID: meta.uid}}},
                }  # fmt: skip
                create = Write("POST", f"/apis/policy/v1/namespaces/{quote(ns, safe='')}/poddisruptionbudgets", body)
                steps.append(Step(create, f"create {budget}", undo=Write("DELETE", budget_path)))
            labels = {"metadata": {"labels": {EXEMPT_KEY: exempt_label(until), EXEMPT_ID: meta.uid},
                                   "annotations": {EXEMPT_KEY: _rfc3339(until)}}}  # fmt: skip
            steps.append(Step(Write("PATCH", path, labels, MERGE_PATCH), f"label pod {job_id} exempt"))
            warnings.append("kube-scheduler's preemption avoids breaking a PodDisruptionBudget but does not obey "
                            "it: a higher-priority pod that fits nowhere else may still preempt this one (gpuq "
                            "preview shows when); evictions (drains, gpuq preempt) are refused")  # fmt: skip
            if not pod.spec.node_name:
                warnings.append(f"pod {job_id} is pending: the budget protects it once it runs")
            message = f"exempt pod {job_id} from eviction until {format_time(until)} ({budget})"
        else:
            undo = {"metadata": {"labels": {EXEMPT_KEY: label, EXEMPT_ID: ident}, "annotations": {EXEMPT_KEY: note}}}
            clear = {"metadata": {"labels": {EXEMPT_KEY: None, EXEMPT_ID: None}, "annotations": {EXEMPT_KEY: None}}}
            if label is not None or ident is not None or note is not None:
                steps.append(Step(Write("PATCH", path, clear, MERGE_PATCH), f"remove pod {job_id}'s exemption labels",
                                  undo=Write("PATCH", path, undo, MERGE_PATCH)))  # fmt: skip
            if existing:
                steps.append(Step(Write("DELETE", budget_path), f"delete {budget}"))
            if not steps:
                raise Refused(f"pod {job_id} carries no gpuq exemption (labels or {budget}): nothing to lift")
            message = f"lift pod {job_id}'s exemption" + (f" and delete {budget}" if existing else "")
        after = {"exempt_until": until}
        facts = _pod_facts(pod)
        return self._plan("exempt", job_id, "pod", path, facts, tuple(steps), before, after, warnings, message)

    def _own_budget(self, path: str, pod: w.Pod) -> bool:
        """Whether gpuq's budget for `pod` exists (Refused when one of that name is not gpuq's)."""
        try:
            found = msgspec.json.decode(self._get(path), type=w.PodDisruptionBudget)
        except NotFound:
            return False
        selector = found.spec.selector
        ours = (found.metadata.labels.get(MANAGED_BY) == "gpuq" and selector is not None
                and selector.match_labels == {EXEMPT_ID: pod.metadata.uid})  # fmt: skip
        if not ours:
            raise Refused(f"PodDisruptionBudget {found.metadata.namespace}/{found.metadata.name} exists and is not "
                          f"gpuq's exemption of pod {pod.metadata.key}: gpuq leaves it alone")  # fmt: skip
        return True

    # ------------------------------------------------------------------ preempt
    def prepare_preempt(self, job_id: str, mode: Mode) -> ActionPlan:
        kind, path = self._which(job_id)
        if kind == "workload":
            raise Refused(f"{job_id} is a Kueue Workload waiting for quota: nothing runs to preempt")
        if mode is Mode.SUSPEND:
            raise Refused("Kubernetes cannot suspend a pod (a pod runs or is deleted; suspending a Job deletes its "
                          "pods): use --mode requeue (eviction) or --mode cancel")  # fmt: skip
        pod = _POD.decode(self._get(path))
        meta = pod.metadata
        if not pod.spec.node_name or meta.deletion_timestamp is not None:
            state = "already terminating" if meta.deletion_timestamp is not None else "not bound to a node"
            raise Refused(f"pod {job_id} is {state}: nothing to preempt")
        precondition = {"preconditions": {"uid": meta.uid}}
        warnings = []
        owner = meta.controller
        if owner is None:
            warnings.append(f"pod {job_id} has no controller: nothing recreates it once it is gone")
        if mode is Mode.CANCEL:
            body = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0, **precondition}
            step = Step(Write("DELETE", path, body), f"delete pod {job_id} with grace 0")
            after = {"state": "gone", "node": None}
            warnings.append("grace 0: the pod gets no time to stop or checkpoint")
            message = f"delete pod {job_id} at once (grace 0)"
        else:
            options: dict[str, Any] = dict(precondition)
            grace = pod.spec.termination_grace_period_seconds
            if mode is Mode.GRACEFUL:
                options["gracePeriodSeconds"] = grace if grace is not None else 30
            body = {"apiVersion": "policy/v1", "kind": "Eviction",
                    "metadata": {"name": meta.name, "namespace": meta.namespace}, "deleteOptions": options}  # fmt: skip
            step = Step(Write("POST", _pod_path(meta.namespace, meta.name, "eviction"), body), f"evict pod {job_id}")
            after = {"state": "completing", "node": pod.spec.node_name}
            shown = options.get("gracePeriodSeconds", grace if grace is not None else 30)
            message = f"evict pod {job_id} ({mode.value}: SIGTERM, then {shown} s to stop)"
        before = {"state": "running", "node": pod.spec.node_name}
        return self._plan("preempt", job_id, "pod", path, _pod_facts(pod), (step,), before, after, warnings, message)

    # ------------------------------------------------------------------ plans
    def _plan(
        self, action: str, job_id: str, kind: str, path: str, facts: Mapping[str, Any], steps: tuple[Step, ...],
        before: Mapping[str, Any], after: Mapping[str, Any], warnings: list[str], message: str,
    ) -> ActionPlan:  # fmt: skip
        self.writer.dry_run(steps)
        where = f" on cluster {self.cluster}"
        return ActionPlan(
            action=action, target=job_id, before=dict(before), after=dict(after),
            requests=tuple(s.write.request() for s in steps), warnings=tuple(warnings),
            message=f"{message}{where} (the server accepted a dry run)", guard=dict(facts),
            payload={"key": self._key, "kind": kind, "path": path, "steps": steps, "done": message + where},
        )  # fmt: skip

    def apply(self, plan: ActionPlan) -> ActionResult:
        payload = plan.payload
        if payload.get("key") is not self._key:
            raise Refused(f"this {plan.action} of {plan.target} was not prepared by this Kubernetes backend")
        path = str(payload["path"])
        try:
            body = self._get(path)
        except NotFound:
            raise JobChanged(f"{plan.target} is gone since the {plan.action} was prepared; nothing was done") from None
        now = (
            _workload_facts(_WORKLOAD.decode(body)) if payload["kind"] == "workload" else _pod_facts(_POD.decode(body))
        )
        changed = [k for k, was in plan.guard.items() if now.get(k) != was]
        if changed:
            what = "; ".join(f"{k} {_shown(plan.guard[k])} -> {_shown(now.get(k))}" for k in changed)
            raise JobChanged(f"{plan.target} changed since the {plan.action} was prepared ({what}); nothing was done: "
                             "look again and retry")  # fmt: skip
        sent: list[ApiRequest] = []
        self.writer.run(payload["steps"], sent)
        return ActionResult(plan.action, plan.target, plan.before, plan.after, (), tuple(sent), plan.warnings,
                            str(payload["done"]))  # fmt: skip


def _shown(value: Any) -> str:
    return "none" if value is None else json.dumps(value) if isinstance(value, (list, tuple)) else str(value)
