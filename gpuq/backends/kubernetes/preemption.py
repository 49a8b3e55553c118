"""Predict what kube-scheduler's DefaultPreemption would do for a pending pod (pure; no I/O).

Follows kubernetes/kubernetes ``pkg/scheduler/framework/plugins/defaultpreemption`` and
``pkg/scheduler/framework/preemption`` (PostFilter), with GPUs (``nvidia.com/gpu``) as the only
resource:

1. Filters that preemption cannot fix exclude a node (UnschedulableAndUnresolvable): a cordoned
   node unless the pod tolerates ``node.kubernetes.io/unschedulable:NoSchedule``; any
   ``NoSchedule``/``NoExecute`` taint the pod does not tolerate; fewer allocatable GPUs than the
   pod asks for. A NotReady node without a not-ready or unreachable taint gets the not-ready
   one the node lifecycle controller would add; taints given are honoured as they are. If the
   pod fits on some node as it is, nothing is preempted.
2. Eligibility (``PodEligibleToPreemptOthers``): ``preemptionPolicy: Never`` preempts nobody; a
   pod nominated to a node that still passes those filters, where a lower-priority pod is
   terminating because the scheduler preempted it (``DisruptionTarget`` condition; before 1.27
   any terminating lower-priority pod), waits instead of preempting again.
3. Victims on each node (``SelectVictimsOnNode``): every pod of strictly lower priority is
   removed; the node is a candidate if the pod then fits. Victims are sorted most important first
   (higher priority, then earlier start) and reprieved greedily in that order: first those whose
   eviction would violate a PodDisruptionBudget, then the others. Terminating pods are victims
   like any other (the scheduler does not delete them again); pods nominated to the node with a
   priority at least the preemptor's keep their GPUs reserved.
4. The node (``pickOneNodeForPreemption``): fewest PDB violations, then the lowest highest-victim
   priority, then the smallest sum of victim priorities each shifted by 2^31 (so fewer victims of
   equal negative priority win), then fewest victims, then the latest earliest-start among the
   highest-priority victims, then the first.

Documented choices:

- PDB status never computed (``disruptions_allowed=None``, e.g. the recorded ``infer-server-pdb``):
  counted as 0 allowed disruptions, as upstream does (it reads the int32
  ``status.disruptionsAllowed``, which is 0 until the disruption controller writes it; the
  Eviction API likewise refuses such pods). Every pod it selects is then a violating victim.
- A PDB selector that is empty or invalid matches nothing, and a pod without labels matches no
  PDB (upstream's ``filterPodsWithPDBViolation``). Pods in ``disrupted_pods`` do not count down.
- Tolerations follow ``Toleration.ToleratesTaint``: empty effect matches every effect, empty key
  with ``Exists`` matches every taint, operator ``Equal`` (or empty) also compares the value;
  ``PreferNoSchedule`` taints never exclude. Other filters (affinity, ports, CPU, memory,
  topology spread) are not modelled.
- Every node is evaluated. Upstream dry-runs at most max(10 %, 100) of the nodes where preemption
  may help, from a random offset, and breaks final ties by Go map order; here ties go to the first
  node in the order given. Sorting is stable (upstream's is not) and a pod without a start time
  counts as starting now, i.e. after every recorded start.
- Finished pods (``finished=True``: Succeeded/Failed) are ignored, as the scheduler's informer
  drops them; only the preemptor's tolerations matter, so `PodInfo` has none. A lower-priority
  pod without GPUs is always reprieved, so it only counts where it uses up a PDB's budget.
- ``preempted_by_scheduler`` is for the backend to set from ``DisruptionTarget=True`` with reason
  ``PreemptionByScheduler`` (or the pre-1.27 name ``PreemptionByKubeScheduler``).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal, NamedTuple

import msgspec

from gpuq.backends.base import NativePlan, NativeVictim
from gpuq.backends.kubernetes.budgets import Budgets, LabelRequirement, LabelSelector, PdbInfo, selector_matches

__all__ = [
    "CRITERIA",
    "NOT_READY_TAINT",
    "UNREACHABLE_TAINT",
    "UNSCHEDULABLE_TAINT",
    "LabelRequirement",
    "LabelSelector",
    "NativeChoice",
    "NodeInfo",
    "NodeStatus",
    "NodeVerdict",
    "Outcome",
    "PdbInfo",
    "PodInfo",
    "Preemptor",
    "Taint",
    "Toleration",
    "Victim",
    "default_preemption",
    "selector_matches",
]

UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"
_EXCLUDING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})
#: math.MaxInt32 + 1: upstream shifts each priority by this before summing
_SHIFT = 2**31
_NO_LABELS: Mapping[str, str] = MappingProxyType({})

Outcome = Literal["fits", "never", "waiting", "no_fit", "preempt", "only_terminating"]
NodeStatus = Literal["excluded", "fits", "full", "no_victims", "too_small", "candidate"]


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str = ""
    effect: str = "NoSchedule"

    def __str__(self) -> str:
        return f"{self.key}{'=' + self.value if self.value else ''}:{self.effect}"


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""

    def tolerates(self, taint: Taint) -> bool:
        """``Toleration.ToleratesTaint`` of k8s.io/api/core/v1."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator in ("", "Equal"):
            return self.value == taint.value
        return self.operator == "Exists"


class PodInfo(msgspec.Struct, frozen=True, gc=False):
    """A pod that holds or reserves GPUs. `node` is where it is bound (None: pending).

    This and the other per-pod and per-node records are msgspec structs, not dataclasses: a
    preview on a large cluster builds tens of thousands, and a frozen dataclass is many times
    slower to build (benchmarks/README.md)."""

    key: str  # "namespace/name"
    namespace: str
    priority: int
    gpus: int
    node: str | None = None
    start_time: float | None = None  # epoch seconds, status.startTime
    terminating: bool = False  # metadata.deletionTimestamp is set
    labels: Mapping[str, str] = _NO_LABELS
    #: condition DisruptionTarget=True with reason PreemptionByScheduler (PreemptionByKubeScheduler before 1.27)
    preempted_by_scheduler: bool = False
    #: status.nominatedNodeName of a pending pod: it reserves GPUs there against lower priorities
    nominated_node: str | None = None
    finished: bool = False  # phase Succeeded or Failed

    @property
    def name(self) -> str:
        return self.key.partition("/")[2]


class NodeInfo(msgspec.Struct, frozen=True, gc=False):
    name: str
    allocatable_gpus: int
    schedulable: bool = True  # not spec.unschedulable (cordoned)
    taints: tuple[Taint, ...] = ()
    ready: bool = True


@dataclass(frozen=True, slots=True)
class Preemptor:
    key: str
    namespace: str
    priority: int
    gpus: int
    preemption_policy: str = "PreemptLowerPriority"  # or "Never"
    nominated_node: str | None = None
    tolerations: tuple[Toleration, ...] = ()


class Victim(NamedTuple):
    """A pod the scheduler would delete (a named tuple: one is made per candidate pod on every
    candidate node, 40,000 for a preview on 5,000 full nodes, where a dataclass costs 2 µs each)."""

    key: str
    priority: int
    gpus: int
    pdb_violation: bool
    terminating: bool = False  # already being deleted: the scheduler sends no new delete
    start_time: float | None = None
    violated_pdbs: tuple[str, ...] = ()  # "namespace/name" of the budgets it would break


class NodeVerdict(msgspec.Struct, frozen=True, gc=False):
    """One node as the scheduler sees it for this pod, for the "where the plans differ" table."""

    node: str
    status: NodeStatus
    note: str  # plain words
    free_gpus: int  # now: allocatable - bound pods - reserved by nominated pods
    victims: tuple[Victim, ...] = ()
    pdb_violations: int = 0
    chosen: bool = False
    #: the criterion on which another candidate beat this one
    lost_on: str | None = None

    @property
    def fits(self) -> bool:
        """The pod fits here now or once the victims are gone."""
        return self.status in ("fits", "candidate")


@dataclass(frozen=True, slots=True)
class NativeChoice:
    """kube-scheduler's choice for one pending pod."""

    would_preempt: bool  # at least one pod would get a new delete
    node: str | None  # where the pod goes or waits; None when nowhere
    victims: tuple[Victim, ...]  # most important first
    reason: str  # plain words
    outcome: Outcome
    nodes: tuple[NodeVerdict, ...] = ()  # in the order the nodes were given
    decided_by: str | None = None  # the criterion that picked `node` among candidates

    def to_plan(self) -> NativePlan:
        """The backend contract's form (`Backend.native_preview`)."""
        victims = tuple(
            NativeVictim(
                id=v.key,
                nodes=(self.node,) if self.node else (),
                gpus=v.gpus,
                priority=v.priority,
                reason=_victim_reason(v),
                details={"pdb_violation": "yes" if v.pdb_violation else "no",
                         "terminating": "yes" if v.terminating else "no"},
            )
            for v in self.victims
        )  # fmt: skip
        return NativePlan(self.would_preempt, nodes=(self.node,) if self.node else (), victims=victims,
                          notes=(self.reason,))  # fmt: skip


def _victim_reason(v: Victim) -> str:
    parts = [f"lower priority ({v.priority})"]
    if v.terminating:
        parts.append("already terminating")
    if v.violated_pdbs:
        parts.append("violates PodDisruptionBudget " + ", ".join(v.violated_pdbs))
    return "; ".join(parts)


# ---------------------------------------------------------------- selectors and filters


def _exclusion(node: NodeInfo, pod: Preemptor) -> str | None:
    """Why a filter that preemption cannot fix rejects `node`, or None."""
    tol = pod.tolerations
    if not node.schedulable and not any(t.tolerates(Taint(UNSCHEDULABLE_TAINT)) for t in tol):
        return "unschedulable (cordoned)"
    taints = node.taints
    if not node.ready and not any(t.key in (NOT_READY_TAINT, UNREACHABLE_TAINT) for t in taints):
        taints = (*taints, Taint(NOT_READY_TAINT))
    for taint in taints:
        if taint.effect in _EXCLUDING_EFFECTS and not any(t.tolerates(taint) for t in tol):
            return f"untolerated taint {taint}"
    if node.allocatable_gpus < pod.gpus:
        return f"only {node.allocatable_gpus} allocatable GPUs, the pod asks for {pod.gpus}"
    return None


def _importance(p: PodInfo) -> tuple[int, float]:
    """Sort key, most important first (``util.MoreImportantPod``)."""
    return (-p.priority, math.inf if p.start_time is None else p.start_time)


# ---------------------------------------------------------------- victims on one node


class _Candidate(msgspec.Struct, frozen=True, gc=False):
    index: int  # position in the node list
    node: str
    victims: tuple[Victim, ...]  # most important first
    violations: int


def _select_victims(need: int, room: int, lower: list[PodInfo], budgets: Budgets) -> tuple[list[Victim], int]:
    """``SelectVictimsOnNode`` once every lower-priority pod is known to make room: reprieve
    violating pods first, then the others, most important first; keep each that still fits."""
    lower.sort(key=_importance)
    violating, others = budgets.split(lower)
    victims: list[Victim] = []
    violations = 0
    for pod, broken in violating:
        if room - pod.gpus >= need:
            room -= pod.gpus
        else:
            victims.append(Victim(pod.key, pod.priority, pod.gpus, True, pod.terminating, pod.start_time, broken))
            violations += 1
    for pod in others:
        if room - pod.gpus >= need:
            room -= pod.gpus
        else:
            victims.append(Victim(pod.key, pod.priority, pod.gpus, False, pod.terminating, pod.start_time))
    if violating and others:
        victims.sort(key=lambda v: (-v.priority, math.inf if v.start_time is None else v.start_time))
    return victims, violations


# ---------------------------------------------------------------- choosing the node


def _earliest_top_start(c: _Candidate) -> float:
    """``util.GetEarliestPodStartTime``: earliest start among the highest-priority victims only."""
    top = max(v.priority for v in c.victims)
    return min(math.inf if v.start_time is None else v.start_time for v in c.victims if v.priority == top)


#: ``pickOneNodeForPreemption``'s score functions, in order; a higher score wins
CRITERIA: tuple[tuple[str, Callable[[_Candidate], float]], ...] = (
    ("fewest PDB violations", lambda c: -c.violations),
    ("lowest highest-victim priority", lambda c: -max(v.priority for v in c.victims)),
    ("smallest sum of victim priorities", lambda c: -sum(v.priority + _SHIFT for v in c.victims)),
    ("fewest victims", lambda c: -len(c.victims)),
    ("latest start among the highest-priority victims", _earliest_top_start),
)


def _pick(cands: list[_Candidate]) -> tuple[_Candidate, str, dict[int, str]]:
    """The winner, the criterion that decided, and for each loser the criterion it lost on."""
    if len(cands) == 1:
        return cands[0], "only candidate", {}
    lost: dict[int, str] = {}
    left = cands
    for name, score in CRITERIA:
        scores = [score(c) for c in left]
        best = max(scores)
        kept = [c for c, s in zip(left, scores, strict=True) if s == best]
        lost.update((c.index, name) for c, s in zip(left, scores, strict=True) if s != best)
        left = kept
        if len(left) == 1:
            return left[0], name, lost
    lost.update((c.index, "first candidate in node order") for c in left[1:])
    return left[0], "first candidate in node order", lost


# ---------------------------------------------------------------- the whole decision


def _summary(verdicts: Iterable[NodeVerdict]) -> str:
    """Node notes grouped: "gpu-node-1, gpu-node-2: untolerated taint X; gpu-node-4: unschedulable (cordoned)"."""
    by_note: dict[str, list[str]] = defaultdict(list)
    for v in verdicts:
        by_note[v.note].append(v.node)
    parts = []
    for note, names in by_note.items():
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        parts.append(f"{shown}: {note}")
    return "; ".join(parts)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def default_preemption(
    preemptor: Preemptor,
    nodes: Sequence[NodeInfo],
    pods: Iterable[PodInfo],
    pdbs: Sequence[PdbInfo] = (),
    *,
    scheduler_minor: int | None = None,
    budgets: Budgets | None = None,
) -> NativeChoice:
    """What kube-scheduler would do for `preemptor` now. `pods` are the cluster's pods (bound,
    and pending ones with a nominated node); `scheduler_minor` below 27 selects the older
    nominated-node check (any terminating lower-priority pod makes the preemptor wait).
    `budgets`: `Budgets(pdbs)` kept from an earlier call on the same `pdbs` (it remembers which
    budgets each pod counts against)."""
    need, prio = preemptor.gpus, preemptor.priority
    if budgets is None or budgets.pdbs is not pdbs:
        budgets = Budgets(pdbs)
    used: dict[str, int] = defaultdict(int)  # by bound pods and pods nominated with priority >= prio
    lower: dict[str, list[PodInfo]] = defaultdict(list)  # potential victims that matter
    leaving: dict[str, list[PodInfo]] = defaultdict(list)  # terminating pods, any priority
    counted = bool(pdbs)
    for pod in pods:
        if pod.finished or pod.key == preemptor.key:
            continue
        on = pod.node
        if on is None:
            if pod.nominated_node is not None and pod.priority >= prio:
                used[pod.nominated_node] += pod.gpus
            continue
        used[on] += pod.gpus
        if pod.terminating:
            leaving[on].append(pod)
        # a lower-priority pod without GPUs is always reprieved: it matters only if it uses up a budget
        if pod.priority < prio and ((counted and budgets.note(pod)) or pod.gpus):
            lower[on].append(pod)

    excluded: dict[int, str] = {}
    free: list[int] = []
    for i, node in enumerate(nodes):
        free.append(node.allocatable_gpus - used.get(node.name, 0))
        why = _exclusion(node, preemptor)
        if why is not None:
            excluded[i] = why

    def verdicts(extra: Mapping[int, NodeVerdict] = MappingProxyType({})) -> tuple[NodeVerdict, ...]:
        out = []
        for i, node in enumerate(nodes):
            if i in extra:
                out.append(extra[i])
            elif i in excluded:
                out.append(NodeVerdict(node.name, "excluded", excluded[i], free[i]))
            elif free[i] >= need:
                out.append(NodeVerdict(node.name, "fits", "fits without preemption", free[i]))
            else:
                out.append(NodeVerdict(node.name, "full", f"{max(free[i], 0)} of {need} GPUs free", free[i]))
        return tuple(out)

    fitting = [i for i in range(len(nodes)) if i not in excluded and free[i] >= need]
    if fitting:
        at = next((i for i in fitting if nodes[i].name == preemptor.nominated_node), fitting[0])
        name = nodes[at].name
        return NativeChoice(False, name, (), f"fits without preemption on {name}", "fits", verdicts())

    if preemptor.preemption_policy == "Never":
        return NativeChoice(False, None, (), "preemptionPolicy Never: the pod waits and preempts nobody", "never",
                            verdicts())  # fmt: skip

    nominated = next((i for i, n in enumerate(nodes) if n.name == preemptor.nominated_node), None)
    if nominated is not None and nominated not in excluded:
        name = nodes[nominated].name
        legacy = scheduler_minor is not None and scheduler_minor < 27
        on_node = leaving.get(name, [])
        waiting = [p for p in on_node if p.priority < prio and (legacy or p.preempted_by_scheduler)]
        if waiting:
            freed = sum(p.gpus for p in on_node)
            lacking = need - free[nominated]
            keys = ", ".join(p.key for p in waiting)
            if freed >= lacking:
                reason = f"already nominated to {name} where terminating pods free enough GPUs ({keys})"
            else:
                reason = (f"already nominated to {name} where lower-priority pods are terminating ({keys}); "
                          f"the scheduler waits for them although they free only {freed} of the {lacking} "
                          "GPUs missing")  # fmt: skip
            return NativeChoice(False, name, (), reason, "waiting", verdicts())

    extra: dict[int, NodeVerdict] = {}
    cands: list[_Candidate] = []
    for i, node in enumerate(nodes):
        if i in excluded:
            continue
        mine = lower.get(node.name)
        if not mine:
            extra[i] = NodeVerdict(node.name, "no_victims", "no lower-priority pods to preempt", free[i])
            continue
        room = free[i] + sum(p.gpus for p in mine)
        if room < need:
            note = f"only {max(room, 0)} of {need} GPUs even with every lower-priority pod gone"
            extra[i] = NodeVerdict(node.name, "too_small", note, free[i])
            continue
        victims, violations = _select_victims(need, room, mine, budgets)
        cands.append(_Candidate(i, node.name, tuple(victims), violations))

    if not cands:
        reason = "no node would fit even after preempting every lower-priority pod"
        all_verdicts = verdicts(extra)
        if all_verdicts:
            reason += f" ({_summary(all_verdicts)})"
        return NativeChoice(False, None, (), reason, "no_fit", all_verdicts)

    best, decided_by, lost = _pick(cands)
    for c in cands:
        won = c is best
        note = (f"{'chosen' if won else 'candidate'}: {_plural(len(c.victims), 'victim')}, "
                f"{_plural(c.violations, 'PDB violation')}"
                + ("" if won else f"; lost on {lost[c.index]}"))  # fmt: skip
        extra[c.index] = NodeVerdict(c.node, "candidate", note, free[c.index], c.victims, c.violations, won,
                                     None if won else lost[c.index])  # fmt: skip
    name = best.node
    fresh = [v for v in best.victims if not v.terminating]
    if not fresh:
        keys = ", ".join(v.key for v in best.victims)
        reason = (f"on {name} only pods already terminating stand in the way ({keys}); "
                  "the scheduler nominates the node and evicts nothing new")  # fmt: skip
        return NativeChoice(False, name, best.victims, reason, "only_terminating", verdicts(extra), decided_by)
    reason = f"preempts {_plural(len(fresh), 'pod')} on {name} ({decided_by})"
    return NativeChoice(True, name, best.victims, reason, "preempt", verdicts(extra), decided_by)
