"""Table tests for the kube-scheduler DefaultPreemption preview (gpuq.backends.kubernetes.preemption).

Each case is a small hand-built cluster whose answer changes if one rule is wrong or the
criteria run in another order: equal priority is never preempted, PDB violations count first,
the sum of priorities is compared after shifting each by 2^31, the start-time tie-break looks only
at the highest-priority victims, and the victim set comes from reprieving the most important pods
first, which is neither "fewest pods" nor "lowest priorities first".
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from gpuq.backends.kubernetes.budgets import Budgets
from gpuq.backends.kubernetes.preemption import (
    LabelRequirement,
    LabelSelector,
    NativeChoice,
    NodeInfo,
    NodeVerdict,
    PdbInfo,
    PodInfo,
    Preemptor,
    Taint,
    Toleration,
    default_preemption,
    selector_matches,
)

NS = "team"


def node(name: str, gpus: int = 8, **kw: Any) -> NodeInfo:
    return NodeInfo(name, gpus, **kw)


def pod(name: str, prio: int, gpus: int, on: str | None, start: float | None = 0.0, **kw: Any) -> PodInfo:
    return PodInfo(f"{NS}/{name}", NS, prio, gpus, on, start, **kw)


def pre(prio: int = 1000, gpus: int = 8, **kw: Any) -> Preemptor:
    return Preemptor(f"{NS}/pending", NS, prio, gpus, **kw)


def pdb(name: str, app: str, allowed: int | None, **kw: Any) -> PdbInfo:
    return PdbInfo(NS, name, LabelSelector({"app": app}), allowed, **kw)


def victims(choice: NativeChoice) -> list[str]:
    return [v.key.split("/", 1)[1] for v in choice.victims]


def verdict(choice: NativeChoice, name: str) -> NodeVerdict:
    return next(v for v in choice.nodes if v.node == name)


# ---------------------------------------------------------------- which pods may be victims


def test_equal_priority_is_never_preempted() -> None:
    # n1's pod has the preemptor's priority: were it eligible, n1 would win on PDB violations
    nodes = [node("n1"), node("n2")]
    pods = [pod("same", 1000, 8, "n1"), pod("lower", 999, 8, "n2", labels={"app": "db"})]
    choice = default_preemption(pre(1000), nodes, pods, [pdb("db", "db", 0)])
    assert (choice.node, victims(choice), choice.would_preempt) == ("n2", ["lower"], True)
    assert choice.victims[0].pdb_violation
    assert verdict(choice, "n1").status == "no_victims"
    assert choice.decided_by == "only candidate"


def test_only_equal_priority_pods_means_no_preemption() -> None:
    choice = default_preemption(pre(500), [node("n1")], [pod("a", 500, 4, "n1"), pod("b", 500, 4, "n1")])
    assert (choice.outcome, choice.node, choice.victims) == ("no_fit", None, ())
    assert choice.reason.startswith("no node would fit even after preempting every lower-priority pod")
    assert "n1: no lower-priority pods to preempt" in choice.reason


def test_node_too_small_even_without_its_lower_priority_pods() -> None:
    # 4 GPUs held by a higher-priority pod stay; n2 has fewer victims but cannot make room
    nodes = [node("n2"), node("n3")]
    pods = [pod("high", 2000, 4, "n2"), pod("low", 1, 4, "n2"), pod("x", 10, 4, "n3"), pod("y", 10, 4, "n3")]
    choice = default_preemption(pre(1000), nodes, pods)
    assert (choice.node, sorted(victims(choice))) == ("n3", ["x", "y"])
    assert verdict(choice, "n2").status == "too_small"
    assert verdict(choice, "n2").note == "only 4 of 8 GPUs even with every lower-priority pod gone"


# ---------------------------------------------------------------- victims on one node


def test_victim_set_is_minimal_not_the_lowest_priorities() -> None:
    # evicting lowest-first would take both (1 GPU frees too little); reprieving keeps "small"
    nodes = [node("n1", 4)]
    pods = [pod("small", 1, 1, "n1"), pod("big", 2, 3, "n1")]
    choice = default_preemption(pre(100, 3), nodes, pods)
    assert victims(choice) == ["big"]


def test_reprieve_keeps_higher_priority_even_if_that_means_more_victims() -> None:
    # one victim ("high") would do, but the most important pod is reprieved first
    pods = [pod("high", 10, 4, "n1"), pod("low1", 1, 2, "n1", start=5.0), pod("low2", 1, 2, "n1", start=6.0)]
    choice = default_preemption(pre(100, 4), [node("n1")], pods)
    assert victims(choice) == ["low1", "low2"]


def test_reprieve_tries_pdb_violating_pods_first() -> None:
    # by importance "high" would be kept and "guarded" evicted; PDB-violating pods go first
    pods = [pod("guarded", 5, 4, "n1", labels={"app": "db"}), pod("high", 10, 4, "n1")]
    choice = default_preemption(pre(100, 4), [node("n1")], pods, [pdb("db", "db", 0)])
    assert victims(choice) == ["high"]
    assert verdict(choice, "n1").pdb_violations == 0


@pytest.mark.parametrize(
    ("allowed", "disrupted", "expected", "violations"),
    [
        # budget 1: "a" (older, more important) uses it up, "b" would violate: "b" is reprieved first
        (1, frozenset(), ["a"], 0),
        # budget never computed counts as 0: both violate; "a" is reprieved, "b" goes, violating
        (None, frozenset(), ["b"], 1),
        # "a" already in disruptedPods does not count down: "b" violates and is reprieved first
        (0, frozenset({"a"}), ["a"], 0),
    ],
)
def test_pdb_budget_counts_down_in_importance_order(
    allowed: int | None, disrupted: frozenset[str], expected: list[str], violations: int
) -> None:
    pods = [pod("a", 5, 4, "n1", start=0.0, labels={"app": "x"}), pod("b", 5, 4, "n1", start=10.0, labels={"app": "x"})]
    choice = default_preemption(pre(100, 4), [node("n1")], pods, [pdb("x", "x", allowed, disrupted_pods=disrupted)])
    assert victims(choice) == expected
    assert verdict(choice, "n1").pdb_violations == violations
    assert [v.violated_pdbs for v in choice.victims] == [("team/x",) if violations else ()]


def test_pod_without_gpus_still_uses_up_a_budget() -> None:
    # "sidecar" (0 GPUs, older) takes train's budget of 1, so evicting "train" violates it: n2 wins
    pods = [
        pod("sidecar", 5, 0, "n1", start=0.0, labels={"app": "x"}),
        pod("train", 5, 8, "n1", start=10.0, labels={"app": "x"}),
        pod("dear", 900, 8, "n2"),
    ]
    choice = default_preemption(pre(1000), [node("n1"), node("n2")], pods, [pdb("x", "x", 1)])
    assert (choice.node, victims(choice)) == ("n2", ["dear"])
    assert [v.key for v in verdict(choice, "n1").victims] == ["team/train"]  # the sidecar is never a victim
    assert verdict(choice, "n1").pdb_violations == 1


def test_pdb_matching_needs_namespace_labels_and_a_selector() -> None:
    labelled = {"app": "x"}
    pods = [pod("a", 5, 8, "n1", labels=labelled), pod("b", 5, 8, "n2", labels={})]
    budgets = [
        PdbInfo("other", "x", LabelSelector({"app": "x"}), 0),  # other namespace
        PdbInfo(NS, "empty", LabelSelector(), 0),  # empty selector: nothing
        PdbInfo(NS, "none", None, 0),
        PdbInfo(NS, "not-in", LabelSelector(match_expressions=(LabelRequirement("app", "NotIn", ("y",)),)), 0),
    ]
    choice = default_preemption(pre(100), [node("n1"), node("n2")], pods, budgets)
    # "a" matches "not-in"; "b" has no labels, so it matches no PDB (even NotIn): n2 wins
    assert verdict(choice, "n1").victims[0].violated_pdbs == ("team/not-in",)
    assert (choice.node, victims(choice), choice.victims[0].pdb_violation) == ("n2", ["b"], False)


@pytest.mark.parametrize(
    ("requirement", "labels", "matches"),
    [
        (LabelRequirement("tier", "In", ("gold", "silver")), {"tier": "gold"}, True),
        (LabelRequirement("tier", "In", ("gold",)), {"tier": "bronze"}, False),
        (LabelRequirement("tier", "In", ("gold",)), {}, False),
        (LabelRequirement("tier", "NotIn", ("gold",)), {"tier": "bronze"}, True),
        (LabelRequirement("tier", "NotIn", ("gold",)), {"other": "1"}, True),
        (LabelRequirement("tier", "NotIn", ("gold",)), {"tier": "gold"}, False),
        (LabelRequirement("tier", "Exists"), {"tier": ""}, True),
        (LabelRequirement("tier", "Exists"), {"other": "1"}, False),
        (LabelRequirement("tier", "DoesNotExist"), {"other": "1"}, True),
        (LabelRequirement("tier", "DoesNotExist"), {"tier": "x"}, False),
        (LabelRequirement("tier", "In", ()), {"tier": "x"}, False),  # invalid: matches nothing
        (LabelRequirement("tier", "Exists", ("x",)), {"tier": "x"}, False),  # invalid
        (LabelRequirement("tier", "Gt", ("1",)), {"tier": "2"}, False),  # not a label-selector operator
    ],
)
def test_selector_expressions(requirement: LabelRequirement, labels: dict[str, str], matches: bool) -> None:
    assert selector_matches(LabelSelector(match_expressions=(requirement,)), labels) is matches


def test_selector_combines_labels_and_expressions() -> None:
    sel = LabelSelector({"app": "x"}, (LabelRequirement("tier", "In", ("gold",)),))
    assert selector_matches(sel, {"app": "x", "tier": "gold"})
    assert not selector_matches(sel, {"app": "x", "tier": "silver"})
    assert not selector_matches(sel, {"app": "y", "tier": "gold"})


# ---------------------------------------------------------------- choosing the node, rule by rule


def test_fewest_pdb_violations_comes_first() -> None:
    # n1's victim has far lower priority, but breaking its PDB counts before priorities
    pods = [pod("cheap", 10, 8, "n1", labels={"app": "db"}), pod("dear", 900, 8, "n2")]
    choice = default_preemption(pre(1000), [node("n1"), node("n2")], pods, [pdb("db", "db", 0)])
    assert (choice.node, victims(choice), choice.decided_by) == ("n2", ["dear"], "fewest PDB violations")
    assert verdict(choice, "n1").lost_on == "fewest PDB violations"


def test_lowest_highest_victim_priority_before_sum_and_count() -> None:
    # n1: one victim (smaller shifted sum, fewer victims) but of priority 50; n2: two of priority 10
    pods = [pod("one", 50, 8, "n1"), pod("two-a", 10, 4, "n2"), pod("two-b", 10, 4, "n2")]
    choice = default_preemption(pre(1000), [node("n1"), node("n2")], pods)
    assert (choice.node, sorted(victims(choice))) == ("n2", ["two-a", "two-b"])
    assert choice.decided_by == "lowest highest-victim priority"


@pytest.mark.parametrize(
    ("n1_prios", "n2_prios"),
    [
        ([100, -50], [100]),  # plain sums 50 < 100 would pick n1
        ([-10, -10], [-10]),  # two negative priorities: plain sums -20 < -10 would pick n1
    ],
)
def test_sum_of_priorities_is_shifted_by_2_31(n1_prios: list[int], n2_prios: list[int]) -> None:
    assert sum(n1_prios) < sum(n2_prios)  # the naive comparison prefers n1
    share1, share2 = 8 // len(n1_prios), 8 // len(n2_prios)
    pods = [pod(f"a{i}", p, share1, "n1") for i, p in enumerate(n1_prios)]
    pods += [pod(f"b{i}", p, share2, "n2") for i, p in enumerate(n2_prios)]
    choice = default_preemption(pre(1000), [node("n1"), node("n2")], pods)
    assert (choice.node, choice.decided_by) == ("n2", "smallest sum of victim priorities")
    assert victims(choice) == [f"b{i}" for i in range(len(n2_prios))]


def test_fewest_victims_decides_only_when_shifted_sums_tie() -> None:
    # equal shifted sums with different counts need a victim at the int32 minimum; n1's top
    # victim started later, so the start-time rule (which comes after) would pick n1
    pods = [pod("a0", 7, 4, "n1", start=100.0), pod("a1", -(2**31), 4, "n1"), pod("b0", 7, 8, "n2", start=0.0)]
    choice = default_preemption(pre(1000), [node("n1"), node("n2")], pods)
    assert (choice.node, victims(choice), choice.decided_by) == ("n2", ["b0"], "fewest victims")


def test_start_time_tie_break_looks_only_at_highest_priority_victims() -> None:
    # earliest of all victims: n1 (t=0) < n2 (t=50), which would pick n2;
    # earliest of the priority-10 victims: n1 100 > n2 50, so n1 (latest) wins
    pods = [
        pod("n1-top", 10, 4, "n1", start=100.0), pod("n1-low", 1, 4, "n1", start=0.0),
        pod("n2-top", 10, 4, "n2", start=50.0), pod("n2-low", 1, 4, "n2", start=200.0),
    ]  # fmt: skip
    choice = default_preemption(pre(1000), [node("n1"), node("n2")], pods)
    assert (choice.node, victims(choice)) == ("n1", ["n1-top", "n1-low"])
    assert choice.decided_by == "latest start among the highest-priority victims"


def test_unstarted_victim_counts_as_starting_now() -> None:
    pods = [pod("started", 10, 8, "n1", start=1e9), pod("unstarted", 10, 8, "n2", start=None)]
    choice = default_preemption(pre(1000), [node("n1"), node("n2")], pods)
    assert choice.node == "n2"


def test_full_tie_goes_to_the_first_node_given() -> None:
    pods = [pod("x", 10, 8, "n1"), pod("y", 10, 8, "n2")]
    choice = default_preemption(pre(1000), [node("n2"), node("n1")], pods)
    assert (choice.node, choice.decided_by) == ("n2", "first candidate in node order")
    assert verdict(choice, "n1").lost_on == "first candidate in node order"


def test_victims_are_listed_most_important_first_across_pdb_groups() -> None:
    pods = [pod("guarded", 5, 4, "n1", labels={"app": "db"}), pod("plain", 50, 4, "n1")]
    choice = default_preemption(pre(1000, 8), [node("n1")], pods, [pdb("db", "db", 0)])
    assert victims(choice) == ["plain", "guarded"]
    assert [v.pdb_violation for v in choice.victims] == [False, True]


# ---------------------------------------------------------------- eligibility and terminating pods


def test_fits_without_preemption_prefers_the_nominated_node() -> None:
    choice = default_preemption(pre(1000, 4, nominated_node="n2"), [node("n1"), node("n2")], [])
    assert (choice.outcome, choice.node, choice.reason) == ("fits", "n2", "fits without preemption on n2")
    assert not choice.would_preempt


def test_preemption_policy_never_preempts_nobody() -> None:
    pods = [pod("low", 1, 8, "n1")]
    choice = default_preemption(pre(1000, preemption_policy="Never"), [node("n1")], pods)
    assert (choice.outcome, choice.would_preempt, choice.victims, choice.node) == ("never", False, (), None)
    assert choice.reason.startswith("preemptionPolicy Never")
    # a Never pod that fits is simply scheduled
    fits = default_preemption(pre(1000, 4, preemption_policy="Never"), [node("n1")], [pod("low", 1, 4, "n1")])
    assert fits.outcome == "fits"


def test_terminating_victims_free_gpus_without_a_new_eviction() -> None:
    pods = [pod("leaving", 1, 4, "n1", terminating=True), pod("stays", 2000, 4, "n1")]
    choice = default_preemption(pre(1000, 4), [node("n1")], pods)
    assert (choice.outcome, choice.node, choice.would_preempt) == ("only_terminating", "n1", False)
    assert [(v.key, v.terminating) for v in choice.victims] == [("team/leaving", True)]


def test_scheduler_does_not_prefer_terminating_victims() -> None:
    # importance ignores termination: the older terminating pod is reprieved, the running one goes
    pods = [pod("leaving", 1, 4, "n1", start=0.0, terminating=True), pod("running", 1, 4, "n1", start=10.0)]
    choice = default_preemption(pre(1000, 4), [node("n1")], pods)
    assert (choice.would_preempt, victims(choice)) == (True, ["running"])


@pytest.mark.parametrize(
    ("by_scheduler", "minor", "outcome"),
    [
        (True, None, "waiting"),  # a victim of its earlier preemption is still terminating
        (False, None, "preempt"),  # since 1.27 a plain deletion does not count
        (False, 26, "waiting"),  # before 1.27 any terminating lower-priority pod did
    ],
)
def test_nominated_node_with_terminating_victims(by_scheduler: bool, minor: int | None, outcome: str) -> None:
    pods = [
        pod("leaving", 1, 2, "n1", terminating=True, preempted_by_scheduler=by_scheduler),
        pod("low", 1, 6, "n1"),
        pod("other", 1, 8, "n2", start=5.0),
    ]
    choice = default_preemption(pre(1000, 8, nominated_node="n1"), [node("n1"), node("n2")], pods,
                                scheduler_minor=minor)  # fmt: skip
    assert choice.outcome == outcome
    if outcome == "waiting":
        assert (choice.node, choice.victims, choice.would_preempt) == ("n1", (), False)
        assert choice.reason.startswith("already nominated to n1 where lower-priority pods are terminating")
        assert "free only 2 of the 8 GPUs missing" in choice.reason
    else:
        assert (choice.node, victims(choice)) == ("n2", ["other"])  # n1 needs two victims: larger shifted sum


def test_nominated_node_excluded_since_lets_it_preempt_elsewhere() -> None:
    pods = [pod("leaving", 1, 8, "n1", terminating=True, preempted_by_scheduler=True), pod("low", 1, 8, "n2")]
    nodes = [node("n1", schedulable=False), node("n2")]
    choice = default_preemption(pre(1000, nominated_node="n1"), nodes, pods)
    assert (choice.outcome, choice.node, victims(choice)) == ("preempt", "n2", ["low"])


def test_pods_nominated_with_higher_or_equal_priority_keep_their_reservation() -> None:
    nodes = [node("n1"), node("n2")]
    waiting = PodInfo("team/first", NS, 1000, 8, None, None, nominated_node="n1")
    choice = default_preemption(pre(1000), nodes, [waiting, pod("low", 1, 8, "n2")])
    assert (choice.node, victims(choice)) == ("n2", ["low"])
    lower = PodInfo("team/first", NS, 999, 8, None, None, nominated_node="n1")
    assert default_preemption(pre(1000), nodes, [lower, pod("low", 1, 8, "n2")]).outcome == "fits"


def test_finished_pods_hold_nothing() -> None:
    pods = [pod("done", 1, 8, "n1", finished=True)]
    assert default_preemption(pre(1000), [node("n1")], pods).outcome == "fits"


# ---------------------------------------------------------------- filters preemption cannot fix


@pytest.mark.parametrize(
    ("toleration", "taint", "tolerated"),
    [
        (Toleration("gpu", "Exists"), Taint("gpu", "a100"), True),
        (Toleration("gpu", "Equal", "a100"), Taint("gpu", "a100"), True),
        (Toleration("gpu", "Equal", "h100"), Taint("gpu", "a100"), False),
        (Toleration("gpu", "", "a100"), Taint("gpu", "a100"), True),  # empty operator is Equal
        (Toleration("gpu", "Exists", effect="NoExecute"), Taint("gpu", effect="NoSchedule"), False),
        (Toleration("", "Exists"), Taint("anything", "v", "NoExecute"), True),
        (Toleration("other", "Exists"), Taint("gpu"), False),
    ],
)
def test_toleration_matching(toleration: Toleration, taint: Taint, tolerated: bool) -> None:
    assert toleration.tolerates(taint) is tolerated


def test_cordoned_tainted_and_notready_nodes_are_not_candidates() -> None:
    nodes = [
        node("cordoned", schedulable=False),
        node("tainted", taints=(Taint("gpuq.io/maintenance", "xid-79"),)),
        node("notready", ready=False),
        node("soft", taints=(Taint("spot", effect="PreferNoSchedule"),)),
    ]
    pods = [pod(f"low-{n.name}", 1, 8, n.name) for n in nodes]
    choice = default_preemption(pre(1000), nodes, pods)
    assert (choice.node, victims(choice)) == ("soft", ["low-soft"])
    notes = {v.node: v.note for v in choice.nodes}
    assert notes["cordoned"] == "unschedulable (cordoned)"
    assert notes["tainted"] == "untolerated taint gpuq.io/maintenance=xid-79:NoSchedule"
    assert notes["notready"] == "untolerated taint node.kubernetes.io/not-ready:NoSchedule"


def test_unreachable_node_keeps_its_own_taint() -> None:
    # the controller marks an Unknown node unreachable (not not-ready): tolerating that admits it
    gone = node("gone", ready=False, taints=(Taint("node.kubernetes.io/unreachable"),))
    tol = (Toleration("node.kubernetes.io/unreachable", "Exists"),)
    choice = default_preemption(pre(1000, tolerations=tol), [gone], [pod("low", 1, 8, "gone")])
    assert (choice.node, victims(choice)) == ("gone", ["low"])
    assert default_preemption(pre(1000), [gone], [pod("low", 1, 8, "gone")]).outcome == "no_fit"


def test_tolerations_admit_cordoned_and_tainted_nodes() -> None:
    nodes = [node("cordoned", schedulable=False), node("tainted", taints=(Taint("maint", "x", "NoExecute"),))]
    pods = [pod("a", 10, 8, "cordoned", start=0.0), pod("b", 10, 8, "tainted", start=5.0)]
    tol = (Toleration("node.kubernetes.io/unschedulable", "Exists", effect="NoSchedule"), Toleration("maint", "Exists"))
    choice = default_preemption(pre(1000, tolerations=tol), nodes, pods)
    assert (choice.node, victims(choice)) == ("tainted", ["b"])  # both candidates; b started later
    assert default_preemption(pre(1000, tolerations=tol[:1]), nodes, pods).node == "cordoned"


def test_node_smaller_than_the_request_is_excluded() -> None:
    choice = default_preemption(pre(1000, 8), [node("small", 4)], [pod("low", 1, 4, "small")])
    assert choice.outcome == "no_fit"
    assert verdict(choice, "small").note == "only 4 allocatable GPUs, the pod asks for 8"


# ---------------------------------------------------------------- the recorded lab (../shared/k8s-recorded/README.md)


def _ts(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


_NOT_READY = Taint("node.kubernetes.io/not-ready")
_URGENT_TOLERATIONS = (
    Toleration("nvidia.com/gpu", "Exists", effect="NoSchedule"),
    Toleration("node.kubernetes.io/not-ready", "Exists", effect="NoExecute"),
    Toleration("node.kubernetes.io/unreachable", "Exists", effect="NoExecute"),
)


Lab = tuple[Preemptor, list[NodeInfo], list[PodInfo], list[PdbInfo]]


def _lab(*, not_ready_taints: bool = True, h5jrc_disruption: bool = False, node4_open: bool = False) -> Lab:
    """04-nodes.json, 05-pods-all.json and 16-pdbs.json as the preview's inputs. Every node was
    created with the not-ready taint that, with no controller-manager, nobody removed."""
    extra = (_NOT_READY,) if not_ready_taints else ()
    nodes = [node(f"gpu-node-{i}", taints=extra) for i in (1, 2, 3)]
    if node4_open:
        nodes.append(node("gpu-node-4", taints=extra))
    else:
        cordon = (Taint("node.kubernetes.io/unschedulable"), Taint("gpuq.io/maintenance", "xid-79"))
        nodes.append(node("gpu-node-4", schedulable=False, taints=cordon + extra))

    def lab_pod(key: str, prio: int, gpus: int, on: str | None, start: str | None, **kw: Any) -> PodInfo:
        return PodInfo(key, key.split("/")[0], prio, gpus, on, _ts(start) if start else None, **kw)

    llama = {"app": "train-llama-70b", "job-name": "train-llama-70b"}
    sweep = {"app": "sweep-lr", "job-name": "sweep-lr"}
    pods = [
        lab_pod("ml-team-a/train-llama-70b-7x2kq", 1000, 8, "gpu-node-1", "2026-11-29T11:02:00Z", labels=llama),
        lab_pod("ml-team-a/train-llama-70b-m9vtd", 1000, 8, None, None, labels=llama),
        lab_pod("ml-team-a/finetune-bert-0", 1000, 2, "gpu-node-3", "2026-11-29T15:30:00Z"),
        lab_pod("ml-team-a/notebook-alice", 100, 1, "gpu-node-3", "2026-11-29T13:00:00Z"),
        lab_pod("ml-team-b/sweep-lr-4wz8n", 100, 4, "gpu-node-3", "2026-11-29T12:10:00Z", labels=sweep),
        lab_pod("ml-team-b/sweep-lr-qp7fs", 100, 4, "gpu-node-2", "2026-11-29T12:10:00Z", labels=sweep,
                preempted_by_scheduler=True, finished=True),
        lab_pod("ml-team-b/sweep-lr-h5jrc", 100, 4, "gpu-node-2", "2026-11-29T12:10:00Z", labels=sweep,
                terminating=True, preempted_by_scheduler=h5jrc_disruption),
        lab_pod("ml-team-b/eval-small", 100, 1, "gpu-node-3", "2026-11-29T16:45:00Z"),
        lab_pod("ml-team-b/infer-server-0", 1000, 2, "gpu-node-4", "2026-11-28T08:00:00Z",
                labels={"app": "infer-server"}),
        lab_pod("ml-team-b/notebook-bob", 100, 1, "gpu-node-4", "2026-11-29T10:20:00Z"),
        lab_pod("ml-team-b/batch-embed-0", 500, 8, None, None),
    ]  # fmt: skip
    pdbs = [
        PdbInfo("ml-team-a", "train-llama-70b-pdb", LabelSelector({"job-name": "train-llama-70b"}), 0),
        PdbInfo("ml-team-b", "infer-server-pdb", LabelSelector({"app": "infer-server"}), None),  # never computed
    ]
    urgent = Preemptor("ml-team-a/urgent-pod", "ml-team-a", 100000, 8, nominated_node="gpu-node-2",
                       tolerations=_URGENT_TOLERATIONS)  # fmt: skip
    return urgent, nodes, pods, pdbs


def test_recorded_lab_as_staged_no_node_tolerates_the_pod() -> None:
    # the urgent pod tolerates not-ready only for NoExecute, and every node still has not-ready:NoSchedule
    urgent, nodes, pods, pdbs = _lab()
    choice = default_preemption(urgent, nodes, pods, pdbs)
    assert (choice.outcome, choice.node, choice.would_preempt) == ("no_fit", None, False)
    assert choice.reason == (
        "no node would fit even after preempting every lower-priority pod (gpu-node-1, gpu-node-2, gpu-node-3: "
        "untolerated taint node.kubernetes.io/not-ready:NoSchedule; gpu-node-4: unschedulable (cordoned))"
    )


def test_recorded_lab_on_a_real_cluster_nominates_gpu_node_2_again() -> None:
    # with the not-ready taints gone (Ready nodes), a current scheduler preempts again: h5jrc was
    # deleted without a DisruptionTarget condition. gpu-node-1's victim breaks train-llama-70b-pdb;
    # gpu-node-2 (one priority-100 victim) beats gpu-node-3 (highest victim finetune-bert-0, 1000).
    urgent, nodes, pods, pdbs = _lab(not_ready_taints=False)
    choice = default_preemption(urgent, nodes, pods, pdbs)
    assert (choice.outcome, choice.node, choice.would_preempt) == ("only_terminating", "gpu-node-2", False)
    assert [(v.key, v.terminating) for v in choice.victims] == [("ml-team-b/sweep-lr-h5jrc", True)]
    assert choice.decided_by == "lowest highest-victim priority"
    n1, n3, n4 = (verdict(choice, f"gpu-node-{i}") for i in (1, 3, 4))
    assert (n1.pdb_violations, n1.lost_on) == (1, "fewest PDB violations")
    assert n1.victims[0].violated_pdbs == ("ml-team-a/train-llama-70b-pdb",)
    assert n3.lost_on == "lowest highest-victim priority"
    assert [v.key for v in n3.victims] == [
        "ml-team-a/finetune-bert-0", "ml-team-b/sweep-lr-4wz8n", "ml-team-a/notebook-alice", "ml-team-b/eval-small",
    ]  # fmt: skip
    assert n4.status == "excluded"
    plan = choice.to_plan()
    assert (plan.would_preempt, plan.nodes, [v.id for v in plan.victims]) == (
        False, ("gpu-node-2",), ["ml-team-b/sweep-lr-h5jrc"])  # fmt: skip
    assert plan.victims[0].details == {"pdb_violation": "no", "terminating": "yes"}


@pytest.mark.parametrize(("disruption", "minor"), [(True, None), (False, 23)])
def test_recorded_lab_urgent_pod_waits_for_its_victim(disruption: bool, minor: int | None) -> None:
    # the lab's own server is 1.23-era (any terminating pod counts); a current scheduler would have
    # written DisruptionTarget on the victim it deleted
    urgent, nodes, pods, pdbs = _lab(not_ready_taints=False, h5jrc_disruption=disruption)
    choice = default_preemption(urgent, nodes, pods, pdbs, scheduler_minor=minor)
    assert (choice.outcome, choice.node, choice.victims) == ("waiting", "gpu-node-2", ())
    assert choice.reason == (
        "already nominated to gpu-node-2 where terminating pods free enough GPUs (ml-team-b/sweep-lr-h5jrc)"
    )


def test_recorded_lab_uncomputed_pdb_protects_infer_server() -> None:
    # uncordon gpu-node-4: infer-server-0 is matched by infer-server-pdb, whose status was never computed
    urgent, nodes, pods, pdbs = _lab(not_ready_taints=False, node4_open=True)
    n4 = verdict(default_preemption(urgent, nodes, pods, pdbs), "gpu-node-4")
    assert n4.pdb_violations == 1
    assert [(v.key, v.violated_pdbs) for v in n4.victims] == [
        ("ml-team-b/infer-server-0", ("ml-team-b/infer-server-pdb",)), ("ml-team-b/notebook-bob", ())]  # fmt: skip


def test_recorded_lab_batch_embed_never_preempts() -> None:
    _, nodes, pods, pdbs = _lab(not_ready_taints=False)
    batch = Preemptor("ml-team-b/batch-embed-0", "ml-team-b", 500, 8, "Never", tolerations=_URGENT_TOLERATIONS)
    choice = default_preemption(batch, nodes, pods, pdbs)
    assert (choice.outcome, choice.victims) == ("never", ())
    assert {v.node: v.status for v in choice.nodes} == {
        "gpu-node-1": "full", "gpu-node-2": "full", "gpu-node-3": "full", "gpu-node-4": "excluded"}  # fmt: skip


def test_kept_budgets_rematch_a_changed_pod_and_agree_with_fresh_ones() -> None:
    # one node: the preemptor needs 4 of 4 GPUs; "a" (under a PDB with no disruptions left) and
    # "b" must both go, so the node's violations say whether "a" counts against the budget
    nodes = [node("n1", 4)]
    budgets_given = [pdb("guard", "web", 0)]
    kept = Budgets(budgets_given)
    first = [pod("a", 10, 2, "n1", labels={"app": "web"}), pod("b", 10, 2, "n1")]
    choice = default_preemption(pre(gpus=4), nodes, first, budgets_given, budgets=kept)
    assert verdict(choice, "n1").pdb_violations == 1
    assert set(kept.memo) == {f"{NS}/a", f"{NS}/b"}
    # "a" relabelled (a new object under the same key): matched again, no longer under the PDB
    changed = [pod("a", 10, 2, "n1", labels={"app": "batch"}), first[1]]
    again = default_preemption(pre(gpus=4), nodes, changed, budgets_given, budgets=kept)
    fresh = default_preemption(pre(gpus=4), nodes, changed, budgets_given)
    assert verdict(again, "n1").pdb_violations == verdict(fresh, "n1").pdb_violations == 0
    assert victims(again) == victims(fresh)
    # budgets kept for other PDBs are not used: the call builds its own
    other = default_preemption(pre(gpus=4), nodes, first, [pdb("guard", "web", 0)], budgets=kept)
    assert verdict(other, "n1").pdb_violations == 1
