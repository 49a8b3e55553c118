"""The cluster's own placement and preemption rules in gpuq's plan: whom a class may preempt
(`JobClass.may_preempt`), how many nodes a job may span (`Job.max_nodes`), and a queue manager
that preempts only what it admitted (`Job.admitted_by`). A plan never names a victim the
cluster could not take, and never spreads a job wider than it may run."""

from __future__ import annotations

import msgspec

from gpuq.model import JobClass, JobState, Node, PreviewRequest, Queue, QueuePolicy, Snapshot
from gpuq.model.codec import decode_snapshot, encode_snapshot
from gpuq.policy.config import UNGUARDED_POLICY as MECHANISM  # (Δ 0, no minimum runtime: the rules alone)
from gpuq.policy.engine import plan_preemption, request_for_job
from gpuq.policy.rules import Reason
from tests.factories import make_job, make_snapshot

NOW = 1_800_000_000.0
RUN = JobState.RUNNING
#: the lab's preempt/qos set-up (tests/fixtures/slurm/22.05/live/sacctmgr-show-qos.txt)
QOS = (
    JobClass("urgent", 1000, False, may_preempt=("low", "lowgrace", "normal")),
    JobClass("normal", 100, True, may_preempt=("low",)),
    JobClass("low", 10, True, may_preempt=()),
    JobClass("lowgrace", 10, True, may_preempt=()),
)


def running(jid: str, cls: str, node: str, gpus: int, ran: float, **extras: object) -> object:
    return make_job(jid, jid, "u", "t", cls, 10 if cls != "normal" else 100, RUN, NOW - ran - 60, gpus,
                    start_time=NOW - ran, allocation={node: range(gpus)}, **extras)  # fmt: skip


def snap(*jobs: object, nodes: tuple[Node, ...] = (Node("gpu1", 4), Node("gpu2", 4))) -> Snapshot:
    return make_snapshot("lab", "slurm", NOW, QOS, nodes, jobs)  # type: ignore[arg-type]


def test_a_class_takes_only_the_classes_the_cluster_lets_it() -> None:
    # gpu1: two young lowgrace jobs (the cheapest victims by lost work); gpu2: two old low jobs.
    s = snap(running("5", "lowgrace", "gpu1", 2, 60.0), running("6", "lowgrace", "gpu1", 2, 30.0),
             running("3", "low", "gpu2", 2, 3600.0), running("4", "low", "gpu2", 2, 7200.0))  # fmt: skip
    normal = plan_preemption(s, MECHANISM, PreviewRequest(gpus=4, job_class="normal", priority=100), NOW)
    assert [v.job_id for v in normal.victims] == ["3", "4"] and normal.nodes == ("gpu2",)
    spared = {c.job_id: (c.reason, c.detail) for c in normal.spared}
    assert spared["5"] == (Reason.CLUSTER, "the cluster lets class normal preempt only low, not lowgrace")
    # urgent may take both: the cheap lowgrace jobs go
    urgent = plan_preemption(s, MECHANISM, PreviewRequest(gpus=4, job_class="urgent", priority=1000), NOW)
    assert [v.job_id for v in urgent.victims] == ["6", "5"]


def test_a_class_that_may_preempt_nobody_waits() -> None:
    s = snap(running("3", "lowgrace", "gpu1", 4, 60.0), running("4", "lowgrace", "gpu2", 4, 60.0))
    plan = plan_preemption(s, MECHANISM, PreviewRequest(gpus=2, job_class="low", priority=10_000), NOW)
    assert not plan.would_preempt and plan.feasible
    assert plan.blocked == "the cluster lets class low preempt no job (it waits for free GPUs)"
    assert {c.reason for c in plan.spared} == {Reason.CLUSTER}


def test_classes_without_a_rule_keep_the_priority_rule_alone() -> None:
    s = make_snapshot("k", "kubernetes", NOW, (JobClass("hi", 100), JobClass("lo", 1)), (Node("n", 4),),
                      (running("1", "lo", "n", 4, 60.0),))  # type: ignore[arg-type]  # fmt: skip
    plan = plan_preemption(s, MECHANISM, PreviewRequest(gpus=4, job_class="hi", priority=100), NOW)
    assert [v.job_id for v in plan.victims] == ["1"]


def test_a_job_on_one_node_is_never_planned_across_nodes() -> None:
    nodes = (Node("gpu1", 4), Node("gpu2", 4), Node("gpu3", 4))
    s = snap(running("3", "low", "gpu1", 4, 60.0), running("4", "low", "gpu2", 4, 60.0), nodes=nodes)
    wide = plan_preemption(s, MECHANISM, PreviewRequest(gpus=8, job_class="urgent", priority=1000), NOW)
    assert wide.would_preempt  # (without a limit the request spans nodes)
    one = plan_preemption(s, MECHANISM, PreviewRequest(gpus=8, job_class="urgent", priority=1000, max_nodes=1), NOW)
    assert not one.feasible and not one.victims and one.nodes == ()
    assert one.blocked == "asks for 8 GPUs on one node, but the largest node has 4"
    pending = make_job("9", "n", "u", "t", "urgent", 1000, JobState.PENDING, NOW - 60, 8, max_nodes=1)
    assert plan_preemption(s, MECHANISM, request_for_job(pending), NOW).blocked == one.blocked


def test_a_job_on_two_nodes_is_planned_on_two() -> None:
    nodes = (Node("gpu1", 4), Node("gpu2", 4), Node("gpu3", 4))
    # one GPU free on each node; freeing 3 + 3 on two nodes is what 8 GPUs on two nodes need
    s = snap(*(running(f"{i}", "low", f"gpu{i}", 3, 60.0 * i) for i in (1, 2, 3)), nodes=nodes)
    plan = plan_preemption(s, MECHANISM, PreviewRequest(gpus=8, job_class="urgent", priority=1000, max_nodes=2), NOW)
    assert plan.would_preempt and len(plan.nodes) == 2
    assert {n for v in plan.victims for n in v.nodes} <= set(plan.nodes)
    assert plan_preemption(s, MECHANISM, PreviewRequest(gpus=9, job_class="urgent", priority=1000, max_nodes=2),
                           NOW).blocked == "asks for 9 GPUs on at most 2 nodes, but the largest node has 4"  # fmt: skip


def test_a_queue_manager_preempts_only_what_it_admitted() -> None:
    s = make_snapshot("k", "kubernetes", NOW, (JobClass("hi", 100), JobClass("lo", 1)),
                      (Node("n1", 4), Node("n2", 4)),
                      (running("young", "lo", "n1", 4, 60.0), running("old", "lo", "n2", 4, 9000.0, admitted_by="kueue")))  # type: ignore[arg-type]  # noqa: E501  # fmt: skip
    plain = plan_preemption(s, MECHANISM, PreviewRequest(gpus=4, job_class="hi", priority=100), NOW)
    assert [v.job_id for v in plain.victims] == ["young"]
    held = plan_preemption(s, MECHANISM, PreviewRequest(gpus=4, job_class="hi", priority=100, admitted_by="kueue"), NOW)
    assert [v.job_id for v in held.victims] == ["old"]
    assert {c.job_id: c.reason for c in held.spared}["young"] is Reason.CLUSTER


def test_the_rules_travel_in_the_snapshot_file_only_where_set() -> None:
    s = snap(running("3", "low", "gpu1", 4, 60.0, max_nodes=1, admitted_by="kueue"),
             running("4", "low", "gpu2", 4, 60.0))  # fmt: skip
    s = make_snapshot("lab", "slurm", NOW, (*QOS, JobClass("plain", 1)), s.nodes, s.jobs)
    data = encode_snapshot(s)
    doc = msgspec.json.decode(data)
    assert [c.get("may_preempt") for c in doc["classes"]] == [["low", "lowgrace", "normal"], ["low"], [], [], None]
    assert (doc["jobs"][0]["max_nodes"], doc["jobs"][0]["admitted_by"]) == (1, "kueue")
    assert "max_nodes" not in doc["jobs"][1] and "admitted_by" not in doc["jobs"][1]
    back = decode_snapshot(data)
    assert back.classes == s.classes and back.jobs == s.jobs
    assert encode_snapshot(back) == data


# ---------------------------------------------------------------------------- a queue manager's queues

KUEUE_CLASSES = (JobClass("hi", 1000), JobClass("mid", 500), JobClass("lo", 100))


def admitted(jid: str, node: str, queue: str, priority: int, ran: float = 9000.0) -> object:
    """A running pod of a Workload Kueue admitted through `queue` at Workload priority `priority`
    (the pod itself at priority 0: its Job names a WorkloadPriorityClass, not a PriorityClass)."""
    return make_job(jid, jid, "u", "t", "lo", 0, RUN, NOW - ran - 60, 4, start_time=NOW - ran,
                    allocation={node: range(4)}, admitted_by="kueue", queue=queue, queue_priority=priority)  # fmt: skip


def kueue_snap(*jobs: object, queues: tuple[Queue, ...]) -> Snapshot:
    nodes = (Node("n1", 4), Node("n2", 4), Node("n3", 4))
    s = make_snapshot("k", "kubernetes", NOW, KUEUE_CLASSES, nodes, jobs)  # type: ignore[arg-type]
    return Snapshot(s.cluster, s.backend, s.taken_at, s.classes, s.nodes, s.jobs, s.preemption_events, queues)


def waiting(queue: str, priority: int = 500) -> PreviewRequest:
    return PreviewRequest(gpus=4, job_class="mid", priority=priority, admitted_by="kueue", queue=queue)


def test_a_cluster_queue_that_never_preempts_waits_for_quota() -> None:
    """withinClusterQueue Never: gpuq's priority rule alone would take either pod; Kueue neither."""
    never = Queue("cq", within_queue=QueuePolicy.NEVER)
    s = kueue_snap(admitted("a", "n1", "cq", 100), admitted("b", "n2", "cq", 100), admitted("c", "n3", "cq", 100),
                   queues=(never,))  # fmt: skip
    plan = plan_preemption(s, MECHANISM, waiting("cq"), NOW)
    assert not plan.would_preempt and plan.victims == () and plan.feasible
    assert plan.blocked == ("the cluster lets it preempt no job: Kueue's ClusterQueue cq has withinClusterQueue: "
                            "Never, no cohort (it waits for free quota)")  # fmt: skip
    assert {c.reason for c in plan.spared} == {Reason.CLUSTER}
    assert "withinClusterQueue: Never" in plan.spared[0].detail
    # the same cluster without the ClusterQueue's rule: gpuq's plan takes one
    assert plan_preemption(kueue_snap(*s.jobs, queues=()), MECHANISM, waiting("cq"), NOW).would_preempt


def test_lower_priority_compares_the_workloads_priorities() -> None:
    """The pods run at priority 0; Kueue compares their Workloads' priorities (queue_priority)."""
    lower = Queue("cq", within_queue=QueuePolicy.LOWER_PRIORITY)
    s = kueue_snap(admitted("equal", "n1", "cq", 500, ran=60.0), admitted("higher", "n2", "cq", 900, ran=60.0),
                   admitted("lower", "n3", "cq", 100), queues=(lower,))  # fmt: skip
    plan = plan_preemption(s, MECHANISM, waiting("cq"), NOW)
    assert [v.job_id for v in plan.victims] == ["lower"]
    spared = {c.job_id: c.detail for c in plan.spared}
    assert spared["equal"] == ("Kueue's ClusterQueue cq (withinClusterQueue: LowerPriority) preempts only lower-"
                               "priority workloads: Workload priority 500 against the requester's 500")  # fmt: skip
    newer = Queue("cq", within_queue=QueuePolicy.LOWER_OR_NEWER_EQUAL_PRIORITY)
    plan = plan_preemption(kueue_snap(*s.jobs, queues=(newer,)), MECHANISM, waiting("cq"), NOW)
    assert [v.job_id for v in plan.victims] == ["lower"]
    assert "equal; Kueue takes an equal one only if it is newer" in {c.job_id: c.detail for c in plan.spared}["equal"]


def test_other_queues_only_within_the_cohort_as_reclaim_allows() -> None:
    queues = (Queue("mine", cohort="all", within_queue=QueuePolicy.NEVER, reclaim_within_cohort=QueuePolicy.ANY),
              Queue("peer", cohort="all"), Queue("alone"))  # fmt: skip
    s = kueue_snap(admitted("same", "n1", "mine", 100), admitted("peer", "n2", "peer", 900),
                   admitted("alone", "n3", "alone", 100), queues=queues)  # fmt: skip
    plan = plan_preemption(s, MECHANISM, waiting("mine"), NOW)
    assert [v.job_id for v in plan.victims] == ["peer"]  # (Any: whatever its priority)
    spared = {c.job_id: c.detail for c in plan.spared}
    assert spared["alone"].startswith("in Kueue ClusterQueue alone, outside ClusterQueue mine's cohort all")
    assert spared["same"].endswith("lets its workloads preempt none in the same queue")
    lower = (msgspec.structs.replace(queues[0], reclaim_within_cohort=QueuePolicy.LOWER_PRIORITY), *queues[1:])
    plan = plan_preemption(kueue_snap(*s.jobs, queues=lower), MECHANISM, waiting("mine"), NOW)
    assert plan.victims == () and not plan.blocked.startswith("the cluster lets it")  # (it may reclaim lower ones)


def test_an_urgent_request_counts_at_the_urgent_priority_and_queues_travel_in_the_file() -> None:
    lower = Queue("cq", cohort="all", within_queue=QueuePolicy.LOWER_PRIORITY)
    top = 2 * MECHANISM.urgent_priority  # (above the urgent priority: never taken)
    s = kueue_snap(admitted("higher", "n1", "cq", 900), admitted("x", "n2", "cq", top), admitted("y", "n3", "cq", top),
                   queues=(lower,))  # fmt: skip
    assert plan_preemption(s, MECHANISM, waiting("cq"), NOW).victims == ()
    request = msgspec.structs.replace(waiting("cq"), urgent=True)
    assert [v.job_id for v in plan_preemption(s, MECHANISM, request, NOW).victims] == ["higher"]
    data = encode_snapshot(s)
    doc = msgspec.json.decode(data)
    assert doc["queues"] == [{"name": "cq", "cohort": "all", "within_queue": "lower_priority"}]
    assert (doc["jobs"][0]["queue"], doc["jobs"][0]["queue_priority"]) == ("cq", 900)
    back = decode_snapshot(data)
    assert back.queues == s.queues and back.jobs == s.jobs and encode_snapshot(back) == data
    # a file without queues (older gpuq) loads, and is written back without them
    old = kueue_snap(running("1", "lo", "n1", 4, 60.0), queues=())
    assert b"queues" not in encode_snapshot(old) and decode_snapshot(encode_snapshot(old)).queues == ()
