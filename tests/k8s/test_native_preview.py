"""kube-scheduler's own choice beside gpuq's plan (`preview … -o json` → ``"native"``), built from
the backend's cache (gpuq/backends/kubernetes/native.py), on the recorded lab."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from gpuq.backends.base import NativePlan, NativeVictim
from gpuq.backends.kubernetes import wire as w
from gpuq.backends.kubernetes.native import _preemptor, choose_class, node_info, pdb_info, pod_info
from gpuq.backends.kubernetes.preemption import NOT_READY_TAINT, Taint
from gpuq.model import PreviewRequest
from gpuq.policy.plan import Candidate, Plan, Reason
from gpuq.service import Preview
from gpuq.views.preview import what_differs
from tests.k8s.conftest import Gpuq, Target
from tests.k8s.double import FIXTURES


def _items(name: str, decoder: Any) -> list[Any]:
    return list(msgspec.json.decode((FIXTURES / name).read_bytes(), type=decoder).items)


PODS = {p.metadata.key: p for p in _items("05-pods-all.json", w.PodList)}
NODES = {n.metadata.name: n for n in _items("04-nodes.json", w.NodeList)}
CLASSES = _items("15-priorityclasses.json", w.PriorityClassList)


def _preview(gpuq: Gpuq, *args: str) -> dict[str, Any]:
    result = gpuq("--backend", "kubernetes", "preview", *args, "-o", "json")
    assert result.exit_code == 0, result.output
    native: dict[str, Any] = json.loads(result.stdout)["native"]
    return native


def test_the_urgent_pod_waits_on_its_nominated_node(target: Target, gpuq: Gpuq, xdg: dict[str, Path]) -> None:
    """The recorded server is 1.23: before 1.27 a pod nominated to a node where a lower-priority
    pod is terminating waits for it (sweep-lr-h5jrc frees the 4 GPUs it lacks there)."""
    target.config(xdg["config"])
    native = _preview(gpuq, "ml-team-a/urgent-pod")
    assert native == {
        "would_preempt": False, "nodes": ["gpu-node-2"], "victims": [],
        "notes": ["already nominated to gpu-node-2 where terminating pods free enough GPUs (ml-team-b/sweep-lr-h5jrc)"],
    }  # fmt: skip


def test_a_current_scheduler_nominates_the_node_of_the_terminating_pod(target: Target, gpuq: Gpuq,
                                                                       xdg: dict[str, Path]) -> None:  # fmt: skip
    """Server version unknown: the 1.27+ check, which waits only for pods the scheduler itself
    preempted (DisruptionTarget); h5jrc was deleted without it, so the scheduler evaluates victims:
    gpu-node-2, where only that terminating pod stands in the way, beats gpu-node-1 (a PDB
    violation) and gpu-node-3 (a higher-priority victim); it deletes nothing new."""
    assert target.double is not None
    target.double.reply("GET", "/version", status=404, body=b'{"kind":"Status","code":404}')
    target.config(xdg["config"])
    native = _preview(gpuq, "ml-team-a/urgent-pod")
    assert native["would_preempt"] is False and native["nodes"] == ["gpu-node-2"]
    assert [(v["id"], v["terminating"], v["pdb_violation"]) for v in native["victims"]] == [
        ("ml-team-b/sweep-lr-h5jrc", "yes", "no")]  # fmt: skip
    assert "only pods already terminating" in native["notes"][0]


def test_a_what_if_request_preempts_on_the_node_kube_scheduler_picks(target: Target, gpuq: Gpuq,
                                                                     xdg: dict[str, Path]) -> None:  # fmt: skip
    target.config(xdg["config"])
    native = _preview(gpuq, "--gpus", "8", "--priority", "5000")
    # gpu-node-1: its only pod is under a PDB allowing no disruption (a violation); gpu-node-2: the
    # urgent pod (100000 >= 5000) is nominated there and reserves it; gpu-node-4 is cordoned
    assert native["would_preempt"] is True and native["nodes"] == ["gpu-node-3"]
    victims = [(v["id"], v["priority"], v["gpus"]) for v in native["victims"]]
    assert victims == [("ml-team-a/finetune-bert-0", 1000, 2), ("ml-team-b/sweep-lr-4wz8n", 100, 4),
                       ("ml-team-a/notebook-alice", 100, 1), ("ml-team-b/eval-small", 100, 1)]  # fmt: skip
    assert all(v["nodes"] == ["gpu-node-3"] for v in native["victims"])


def test_a_class_that_never_preempts_preempts_nobody(target: Target, gpuq: Gpuq, xdg: dict[str, Path]) -> None:
    target.config(xdg["config"])
    native = _preview(gpuq, "ml-team-b/batch-embed-0")
    assert native["would_preempt"] is False and native["victims"] == []
    assert native["notes"] == ["preemptionPolicy Never: the pod waits and preempts nobody"]


def test_the_table_says_where_the_plans_differ(target: Target, gpuq: Gpuq, xdg: dict[str, Path]) -> None:
    target.config(xdg["config"])
    result = gpuq("--backend", "kubernetes", "preview", "ml-team-a/urgent-pod")
    assert result.exit_code == 0, result.output
    flat = " ".join(result.stdout.split())
    assert "native scheduler: would not preempt on gpu-node-2" in flat
    assert ("where they differ: gpuq's policy would also preempt ml-team-a/train-llama-70b-7x2kq (the native "
            "scheduler: already nominated to gpu-node-2") in flat  # fmt: skip


# ---------------------------------------------------------------- the inputs, from the wire objects
def test_a_ready_nodes_not_ready_taint_is_left_out_as_the_node_state_leaves_it() -> None:
    one = node_info(NODES["gpu-node-1"])  # Ready, yet tainted not-ready (no lifecycle controller ran)
    assert (one.ready, one.taints, one.schedulable, one.allocatable_gpus) == (True, (), True, 8)
    four = node_info(NODES["gpu-node-4"])
    assert not four.schedulable
    assert four.taints == (Taint("node.kubernetes.io/unschedulable"), Taint("gpuq.io/maintenance", "xid-79"))
    down = msgspec.structs.replace(NODES["gpu-node-1"], status=msgspec.structs.replace(
        NODES["gpu-node-1"].status, conditions=(w.Condition(type="Ready", status="False"),)))  # fmt: skip
    assert node_info(down).taints == (Taint(NOT_READY_TAINT),) and not node_info(down).ready


def test_pods_and_budgets_as_the_scheduler_reads_them() -> None:
    victim = pod_info(PODS["ml-team-b/sweep-lr-qp7fs"])
    assert victim.finished and victim.preempted_by_scheduler  # Failed, DisruptionTarget/PreemptionByScheduler
    leaving = pod_info(PODS["ml-team-b/sweep-lr-h5jrc"])
    assert leaving.terminating and not leaving.preempted_by_scheduler and leaving.node == "gpu-node-2"
    urgent = pod_info(PODS["ml-team-a/urgent-pod"])
    assert (urgent.node, urgent.nominated_node, urgent.priority, urgent.gpus) == (None, "gpu-node-2", 100000, 8)
    budgets = {b.metadata.name: pdb_info(b) for b in _items("16-pdbs.json", w.PodDisruptionBudgetList)}
    assert budgets["train-llama-70b-pdb"].disruptions_allowed == 0
    assert budgets["infer-server-pdb"].disruptions_allowed is None  # never computed (observedGeneration 0)


def test_the_class_a_bump_moves_to() -> None:
    """The smallest value at least the one asked for, else the largest, among classes that share
    the pod's preemptionPolicy (gpuq-batch-never, 500, never preempts)."""
    names = {p: (c.metadata.name if (c := choose_class(CLASSES, p, "PreemptLowerPriority")) else None)
             for p in (50, 100, 150, 600, 1000, 1001, 200000, None)}  # fmt: skip
    assert names == {50: "gpuq-low", 100: "gpuq-low", 150: "gpuq-normal", 600: "gpuq-normal", 1000: "gpuq-normal",
                     1001: "gpuq-urgent", 200000: "gpuq-urgent", None: "gpuq-urgent"}  # fmt: skip
    never = choose_class(CLASSES, 150, "Never")
    assert never is not None and never.metadata.name == "gpuq-batch-never"
    assert choose_class([c for c in CLASSES if c.value > 10**9], 100) is None  # system classes only


def test_the_preemptor_of_a_pod_and_of_a_what_if() -> None:
    pod = PODS["ml-team-a/urgent-pod"]
    own = _preemptor(PreviewRequest(gpus=8, priority=100000, job_id=pod.metadata.key), pod, CLASSES)
    assert (own.priority, own.preemption_policy, own.nominated_node) == (100000, "PreemptLowerPriority", "gpu-node-2")
    assert any(t.key == "nvidia.com/gpu" and t.operator == "Exists" for t in own.tolerations)
    # previewed at another priority: the class a bump would move it to
    moved = _preemptor(PreviewRequest(gpus=8, priority=700, job_id=pod.metadata.key), pod, CLASSES)
    assert moved.priority == 1000
    what_if = _preemptor(PreviewRequest(gpus=2, job_class="gpuq-batch-never"), None, CLASSES)
    assert (what_if.priority, what_if.preemption_policy, what_if.gpus) == (500, "Never", 2)
    assert _preemptor(PreviewRequest(gpus=1, urgent=True), None, CLASSES).priority == 100000


# ---------------------------------------------------------------- where they differ
def _candidate(job: str, reason: Reason, detail: str, lost_s: float = 0.0) -> Candidate:
    return Candidate(job, reason, detail, ("n1",), 4, lost_s, 1.0, 100.0)


@pytest.mark.parametrize(
    ("spared", "expected"),
    [
        (_candidate("ns/p", Reason.CAP, "capped: preempted 3x in 24h (cap 2)"),
         "the native scheduler would also preempt ns/p (gpuq spares it: capped: preempted 3x in 24h (cap 2))"),
        (_candidate("ns/p", Reason.NOT_NEEDED, "cheaper alternative found on n2", 7200.0 * 4),
         "the native scheduler would also preempt ns/p (gpuq spares it: cheaper alternative found on n2; it would "
         "lose 8.00 GPU-hours since its last checkpoint or start)"),
    ],
)  # fmt: skip
def test_what_differs_says_why_gpuq_spares_the_schedulers_victim(spared: Candidate, expected: str) -> None:
    plan = Plan(PreviewRequest(gpus=4, priority=10), 10.0, True, False, True, ("n2",),
                (_candidate("ns/q", Reason.CHOSEN, "chosen"),), (spared,), 4, 1.0)  # fmt: skip
    native = NativePlan(True, ("n1",), (NativeVictim("ns/p", ("n1",), 4, 1, "lower priority (1)"),), ("preempts",))
    assert what_differs(Preview(plan, native)) == f"{expected}; gpuq's policy would also preempt ns/q"


def test_a_watch_event_reaches_the_preview_without_converting_everything_again(target: Target) -> None:
    """The converted pods follow each event (the state's change hook): a pod deleted on
    gpu-node-3 is no victim there any more, and only it was looked at again."""
    backend = target.backend(watch=False)
    snap = backend.snapshot()
    request = PreviewRequest(gpus=8, priority=5000)
    before = backend.native_preview(snap, request)
    assert before is not None and "ml-team-b/sweep-lr-4wz8n" in {v.id for v in before.victims}
    state = backend.state
    store = state.store("pods")
    kept = {k: v for k, v in backend.native._pods._by_key.items() if k != "ml-team-b/sweep-lr-4wz8n"}
    with state.lock:
        gone = store.items["ml-team-b/sweep-lr-4wz8n"]
        store.apply("DELETED", gone)
        state._changed(store, gone, None)
    after = backend.native_preview(snap, request)  # (no new list: watch off lists at each snapshot)
    assert after is not None and "ml-team-b/sweep-lr-4wz8n" not in {v.id for v in after.victims}
    assert all(backend.native._pods._by_key[k] is info for k, info in kept.items())  # the others: not rebuilt


def test_a_snapshot_leaves_the_preview_nothing_to_convert(target: Target) -> None:
    """`snapshot()` converts the pods, nodes and budgets and matches every pod against the
    budgets (`NativePreview.warm`), so that the first preview of a process only plans: a preview
    right after it converts no object and matches no pod again, and plans what a preview without
    the warm-up plans."""
    backend = target.backend(watch=False)
    snap = backend.snapshot()
    native = backend.native
    assert native._budgets is not None and native._budgets.memo  # the recorded lab has PDBs over pods
    matched = dict(native._budgets.memo)

    def no_conversion(obj: Any) -> Any:
        raise AssertionError(f"converted {obj.metadata.key} again")

    for cache in (native._pods, native._nodes, native._pdbs):
        cache.convert = no_conversion
    request = PreviewRequest(gpus=8, priority=5000)
    plan = backend.native_preview(snap, request)
    assert all(native._budgets.memo[k] is v for k, v in matched.items())  # not matched again

    cold = target.backend(watch=False)
    cold.state.refresh()  # (the list alone, without the snapshot's warm-up)
    assert plan == cold.native_preview(snap, request)
