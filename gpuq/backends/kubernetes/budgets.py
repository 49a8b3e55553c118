"""PodDisruptionBudgets as kube-scheduler's preemption counts them (pure; no I/O): label
selectors, which budgets a pod counts against, and ``filterPodsWithPDBViolation``.

`Budgets` indexes the budgets once and remembers, per pod, which of them it counts against. A
backend keeps one `Budgets` while its budgets stay the same, so a preview after a watch event
matches only the pods that changed (`PodInfo`s are immutable: a changed pod is a new object).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpuq.backends.kubernetes.preemption import PodInfo

__all__ = ["Budgets", "LabelRequirement", "LabelSelector", "PdbInfo", "selector_matches"]

_NO_LABELS: Mapping[str, str] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class LabelRequirement:
    key: str
    operator: str  # In, NotIn, Exists, DoesNotExist
    values: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class LabelSelector:
    match_labels: Mapping[str, str] = field(default_factory=lambda: _NO_LABELS)
    match_expressions: tuple[LabelRequirement, ...] = ()


@dataclass(frozen=True, slots=True)
class PdbInfo:
    namespace: str
    name: str
    selector: LabelSelector | None
    #: status.disruptionsAllowed; None when the disruption controller never computed it (counts as 0)
    disruptions_allowed: int | None
    disrupted_pods: frozenset[str] = frozenset()  # status.disruptedPods: pod names

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def selector_matches(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """Whether a PDB's selector picks a pod, as the scheduler decides it: empty, missing or
    invalid selectors pick nothing (``metav1.LabelSelectorAsSelector`` + ``selector.Empty()``)."""
    if selector is None or (not selector.match_labels and not selector.match_expressions):
        return False
    for key, value in selector.match_labels.items():
        if labels.get(key) != value:
            return False
    for req in selector.match_expressions:
        op, present = req.operator, req.key in labels
        if op in ("In", "NotIn"):
            if not req.values:
                return False  # invalid: the selector does not parse, so it matches nothing
            if op == "In" and not (present and labels[req.key] in req.values):
                return False
            if op == "NotIn" and present and labels[req.key] in req.values:
                return False
        elif op in ("Exists", "DoesNotExist"):
            if req.values:
                return False  # invalid
            if present != (op == "Exists"):
                return False
        else:
            return False  # unknown operator: invalid
    return True


_NONE: tuple[int, ...] = ()


class Budgets:
    """The PDBs by namespace, and which of them each pod counts against (worked out once a pod)."""

    def __init__(self, pdbs: Sequence[PdbInfo]) -> None:
        self.pdbs = pdbs
        #: pod key -> (the pod as matched, the budgets it counts against): a pod replaced by a
        #: changed one (another object under the same key) is matched again
        self.memo: dict[str, tuple[PodInfo, tuple[int, ...]]] = {}
        self.any_hits = False
        #: (namespace, the pod's values at the label keys its budgets' selectors name) -> budgets
        self.by_labels: dict[tuple[str, tuple[str | None, ...]], tuple[int, ...]] = {}
        self.any_disrupted = any(b.disrupted_pods for b in pdbs)
        self.keys = [b.key for b in pdbs]
        self.allowed = [0 if b.disruptions_allowed is None else b.disruptions_allowed for b in pdbs]
        # per namespace: budgets indexed by one of their matchLabels (key -> value -> budgets),
        # and those with only matchExpressions, checked against every pod
        self.keyed: dict[str, dict[str, dict[str, list[int]]]] = {}
        self.loose: dict[str, list[int]] = {}
        #: the index hit alone decides: one matchLabel and no expressions
        self.simple: list[bool] = []
        #: per namespace, every label key a selector there names: a selector's answer depends on
        #: the pod's labels at those keys only, so pods alike there share one match
        keys: dict[str, set[str]] = {}
        for i, b in enumerate(pdbs):
            sel = b.selector
            self.simple.append(sel is not None and len(sel.match_labels) == 1 and not sel.match_expressions)
            if sel is None:
                continue
            keys.setdefault(b.namespace, set()).update(sel.match_labels, (r.key for r in sel.match_expressions))
            if sel.match_labels:
                key, value = next(iter(sel.match_labels.items()))
                by_key = self.keyed.setdefault(b.namespace, {}).setdefault(key, {})
                by_key.setdefault(value, []).append(i)
            elif sel.match_expressions:
                self.loose.setdefault(b.namespace, []).append(i)
        self.keys_of = {ns: tuple(sorted(found)) for ns, found in keys.items()}

    def note(self, pod: PodInfo) -> bool:
        """Whether `pod` counts against any budget (worked out once per pod object)."""
        found = self.memo.get(pod.key)
        if found is not None and found[0] is pod:
            return bool(found[1])
        hits = self._hits(pod)
        self.memo[pod.key] = (pod, hits)
        if hits:
            self.any_hits = True
        return bool(hits)

    def _hits(self, pod: PodInfo) -> tuple[int, ...]:
        labels = pod.labels
        if not labels:
            return _NONE  # a pod without labels matches no PDB
        ns = pod.namespace
        if ns not in self.keyed and ns not in self.loose:
            return _NONE
        get = labels.get
        sig = (ns, tuple([get(k) for k in self.keys_of[ns]]))
        hits = self.by_labels.get(sig)
        if hits is None:
            hits = self.by_labels[sig] = self._match(ns, labels)
        if hits and self.any_disrupted:
            # in disruptedPods: already processed by the API server, not counted again
            name = pod.name
            hits = tuple([i for i in hits if name not in self.pdbs[i].disrupted_pods])
        return hits

    def _match(self, ns: str, labels: Mapping[str, str]) -> tuple[int, ...]:
        """The budgets of namespace `ns` whose selector picks `labels`, in the order given."""
        keyed, loose = self.keyed.get(ns), self.loose.get(ns)
        found = list(loose) if loose else []
        for key, by_value in keyed.items() if keyed else ():
            value = labels.get(key)
            if value is not None and value in by_value:
                found += by_value[value]
        found.sort()
        pdbs, simple = self.pdbs, self.simple
        # tuples of ints leave the cyclic GC's view: many kept lists would make it rescan them
        return tuple([i for i in found if simple[i] or selector_matches(pdbs[i].selector, labels)])

    def split(self, pods: Sequence[PodInfo]) -> tuple[list[tuple[PodInfo, tuple[str, ...]]], list[PodInfo]]:
        """``filterPodsWithPDBViolation`` on pods `note` has seen: each matching budget counts down
        as victims (in the order given) use it up; a pod that takes any budget below zero is
        violating. Order is kept."""
        if not self.any_hits:
            return [], list(pods)
        taken: dict[int, int] = {}
        violating: list[tuple[PodInfo, tuple[str, ...]]] = []
        others: list[PodInfo] = []
        memo, count, allowed, keys = self.memo, taken.get, self.allowed, self.keys
        for pod in pods:
            found = memo.get(pod.key)
            if found is not None and found[1] and found[0] is pod:
                broken: list[str] = []
                for i in found[1]:
                    taken[i] = n = count(i, 0) + 1
                    if allowed[i] < n:
                        broken.append(keys[i])
                if broken:
                    violating.append((pod, tuple(broken)))
                    continue
            others.append(pod)
        return violating, others
