"""Kueue's own preemption plan, predicted (`gpuq.policy.queueplan`): each rule of Kueue's classical
preemption and its traps, as tables. Workloads are written ``name:queue:priority:gpus`` with
their admission order (later in a table: admitted more recently)."""

from __future__ import annotations

import pytest
from msgspec.structs import replace

from gpuq.errors import BadInput
from gpuq.model import (
    Job,
    JobClass,
    JobState,
    Node,
    PreviewRequest,
    Queue,
    QueueAdmission,
    QueuePolicy,
    QueueQuota,
    Snapshot,
)
from gpuq.model.codec import decode_snapshot, encode_snapshot
from gpuq.policy.queueplan import admission_block, queue_plan
from tests.factories import at, make_job, make_snapshot

NOW = 1_800_000_000.0
NEVER, LOWER, NEWER_EQ, ANY = (QueuePolicy.NEVER, QueuePolicy.LOWER_PRIORITY,
                               QueuePolicy.LOWER_OR_NEWER_EQUAL_PRIORITY, QueuePolicy.ANY)  # fmt: skip


def wl(spec: str, n: int, *, pods: int = 1, created: float | None = None) -> list[Job]:
    """The running pods of one admitted workload ``name:queue:priority:gpus``, the n-th admitted
    (admitted at NOW − 10000 + 100·n; created then too unless `created`)."""
    name, queue, priority, gpus = spec.split(":")
    admitted = NOW - 10_000 + 100 * n
    per = int(gpus) // pods
    return [make_job(f"{name}-{i}", name, "u", "t", "lo", 0, JobState.RUNNING, admitted, per,
                     start_time=admitted + 5, allocation={f"n{n}-{i}": range(per)}, admitted_by="kueue", queue=queue,
                     queue_priority=int(priority), owner=f"Job/t/{name}", queue_flavor="h100",
                     queue_time=at(created if created is not None else admitted), admitted_time=at(admitted))
            for i in range(pods)]  # fmt: skip


def cq(name: str, nominal: int, *, cohort: str | None = None, within: QueuePolicy = LOWER,
       reclaim: QueuePolicy = NEVER, borrowing: int | None = None, lending: int | None = None,
       borrow: QueuePolicy = NEVER, threshold: int | None = None, fair: bool = False) -> Queue:  # fmt: skip
    return Queue(name, cohort, within, reclaim, (QueueQuota("h100", nominal, borrowing, lending),), borrow, threshold,
                 fair_sharing=fair)  # fmt: skip


def snap(queues: tuple[Queue, ...], *specs: str, **pods: int) -> Snapshot:
    jobs = [j for n, spec in enumerate(specs) for j in wl(spec, n, pods=pods.get(spec.split(":")[0], 1))]
    nodes = [Node(node, 8) for j in jobs for node in j.allocation]
    s = make_snapshot("k", "kubernetes", NOW, (JobClass("hi", 1000), JobClass("lo", 100)), nodes, jobs)
    return Snapshot(s.cluster, s.backend, s.taken_at, s.classes, s.nodes, s.jobs, (), queues)


def ask(queue: str, gpus: int, priority: int, queued_since: float | None = None) -> PreviewRequest:
    return PreviewRequest(gpus=gpus, priority=priority, admitted_by="kueue", queue=queue, queued_since=queued_since)


def victims(s: Snapshot, request: PreviewRequest) -> list[str]:
    plan = queue_plan(s, request)
    assert plan is not None
    return sorted(v.workload.key.removeprefix("Job/t/") for v in plan.victims)


# (queue, workloads, request, expected victims, what the row shows)
WITHIN = [
    (
        cq("a", 8),
        ("x:a:100:4", "y:a:100:4"),
        ask("a", 4, 500),
        ["y"],
        "the most recently admitted of equal priority goes first, and one is enough",
    ),
    (cq("a", 8), ("x:a:100:4", "y:a:300:4"), ask("a", 4, 500), ["x"], "lower priority first"),
    (cq("a", 8), ("x:a:500:4", "y:a:500:4"), ask("a", 4, 500), [], "LowerPriority: an equal priority is protected"),
    (
        cq("a", 8, within=NEWER_EQ),
        ("x:a:500:4", "y:a:500:4"),
        ask("a", 4, 500, queued_since=NOW - 20_000),
        ["y"],
        "LowerOrNewerEqualPriority: an equal one queued after the preemptor is taken",
    ),
    (
        cq("a", 8, within=NEWER_EQ),
        ("x:a:500:4", "y:a:500:4"),
        ask("a", 4, 500),
        [],
        "LowerOrNewerEqualPriority: not one queued before it (a what-if queues now)",
    ),
    (cq("a", 8, within=NEVER), ("x:a:100:4", "y:a:100:4"), ask("a", 4, 500), [], "Never"),
    (
        cq("a", 8),
        ("x:a:600:4", "y:a:100:4"),
        ask("a", 8, 500),
        [],
        "no set frees enough: nothing is preempted (not a part)",
    ),
]


@pytest.mark.parametrize(("queue", "specs", "request_", "expected", "why"), WITHIN, ids=[r[-1] for r in WITHIN])
def test_within_cluster_queue(queue: Queue, specs: tuple[str, ...], request_: PreviewRequest, expected: list[str],
                              why: str) -> None:  # fmt: skip
    assert victims(snap((queue,), *specs), request_) == expected, why


def test_a_workload_is_preempted_whole() -> None:
    """A 2-pod workload of 2 × 2 GPUs: both pods go, though one would free the 2 asked for."""
    s = snap((cq("a", 4),), "x:a:100:4", x=2)
    plan = queue_plan(s, ask("a", 2, 500))
    assert plan is not None and [sorted(j.id for j in v.workload.jobs) for v in plan.victims] == [["x-0", "x-1"]]


COHORT = [
    # other queues' workloads before one's own
    (
        (cq("a", 8, cohort="c", reclaim=ANY), cq("b", 0, cohort="c")),
        ("own:a:100:4", "lent:b:900:4"),
        ask("a", 4, 500),
        ["lent"],
        "another queue's (borrowing) workload before one's own, whatever its priority",
    ),
    (
        (cq("a", 8, cohort="c", reclaim=LOWER), cq("b", 0, cohort="c")),
        ("own:a:100:4", "lent:b:900:4"),
        ask("a", 4, 500),
        ["own"],
        "reclaimWithinCohort LowerPriority: a higher one elsewhere is left",
    ),
    # reclaim only from queues above their nominal quota
    (
        (cq("a", 4, cohort="c", reclaim=ANY, within=NEVER), cq("b", 4, cohort="c")),
        ("mine:a:100:4", "b1:b:100:4"),
        ask("a", 4, 500),
        [],
        "b is within its nominal quota: nothing to reclaim",
    ),
    (
        (cq("a", 8, cohort="c", reclaim=ANY, within=NEVER), cq("b", 4, cohort="c")),
        ("b1:b:100:4", "b2:b:100:4", "b3:b:100:4"),
        ask("a", 4, 500),
        ["b3"],
        "b borrows 8 beyond its 4: the most recently admitted goes, and b stops borrowing",
    ),
    (
        (cq("a", 8, cohort="c", reclaim=ANY, within=NEVER), cq("b", 4, cohort="c")),
        ("b1:b:100:4", "b2:b:100:4", "b3:b:100:4"),
        ask("a", 12, 500),
        [],
        "b is back to its nominal quota after one: Kueue reclaims no further",
    ),
    (
        (cq("a", 4, cohort="c"), cq("b", 4, cohort="c")),
        ("b1:b:100:4", "b2:b:100:4"),
        ask("a", 4, 500),
        [],
        "reclaimWithinCohort Never",
    ),
]


@pytest.mark.parametrize(("queues", "specs", "request_", "expected", "why"), COHORT, ids=[r[-1] for r in COHORT])
def test_reclaim_within_cohort(queues: tuple[Queue, ...], specs: tuple[str, ...], request_: PreviewRequest,
                               expected: list[str], why: str) -> None:  # fmt: skip
    assert victims(snap(queues, *specs), request_) == expected, why


def test_the_fill_back_makes_the_set_minimal() -> None:
    """Order: 2 GPUs (prio 100), 2 (200), then 8 (300). Taking them in order fits only at the
    third; putting the first two back still fits: only the 8-GPU one goes."""
    s = snap((cq("a", 12),), "big:a:300:8", "m:a:200:2", "s:a:100:2")
    assert victims(s, ask("a", 8, 500)) == ["big"]
    # 6 asked: small and medium together are not enough (4 free), so the big one; the fill-back
    # puts both small ones back
    assert victims(s, ask("a", 6, 500)) == ["big"]
    # 2 asked: the first in order is enough
    assert victims(s, ask("a", 2, 500)) == ["s"]


BORROW = [
    # a at its nominal 4 (its own workload), b borrowing 4 beyond its 4, z lending 4 it does not
    # use: the cohort's 12 are all in use. With borrowWithinCohort a may borrow while it preempts
    # in the cohort, but only workloads below maxPriorityThreshold + 1
    (
        (
            cq("a", 4, cohort="c", reclaim=ANY, borrow=LOWER, threshold=130),
            cq("b", 4, cohort="c"),
            cq("z", 4, cohort="c"),
        ),
        ("own:a:100:4", "b1:b:150:4", "b2:b:120:4"),
        ask("a", 4, 500),
        ["b2"],
        "below maxPriorityThreshold + 1: taken while borrowing",
    ),
    (
        (
            cq("a", 4, cohort="c", reclaim=ANY, borrow=LOWER, threshold=100),
            cq("b", 4, cohort="c"),
            cq("z", 4, cohort="c"),
        ),
        ("own:a:100:4", "b1:b:150:4", "b2:b:120:4"),
        ask("a", 4, 500),
        ["own"],
        "none below the threshold: only its own, lower-priority workload",
    ),
    (
        (cq("a", 4, cohort="c", reclaim=ANY), cq("b", 4, cohort="c"), cq("z", 4, cohort="c")),
        ("own:a:100:4", "b1:b:150:4", "b2:b:120:4"),
        ask("a", 4, 500),
        ["own"],
        "no borrowWithinCohort and at its nominal quota: no reclaim, its own workload with borrowing",
    ),
    (
        (cq("a", 8, cohort="c", reclaim=ANY), cq("b", 4, cohort="c")),
        ("own:a:100:2", "b1:b:150:6"),
        ask("a", 6, 500),
        ["b1"],
        "under its nominal quota: reclaims first, without borrowing, the whole workload though b borrows 2",
    ),
]


@pytest.mark.parametrize(("queues", "specs", "request_", "expected", "why"), BORROW, ids=[r[-1] for r in BORROW])
def test_borrow_within_cohort(queues: tuple[Queue, ...], specs: tuple[str, ...], request_: PreviewRequest,
                              expected: list[str], why: str) -> None:  # fmt: skip
    assert victims(snap(queues, *specs), request_) == expected, why


def test_a_request_that_fits_is_admitted_preempting_nothing() -> None:
    s = snap((cq("a", 4, cohort="c"), cq("b", 8, cohort="c")), "x:a:100:4")
    plan = queue_plan(s, ask("a", 4, 500))
    assert plan is not None and plan.admits_now and not plan.victims
    assert "borrowing from cohort c" in plan.notes[0]
    # b lends at most 2: 4 more no longer fit at once
    s = snap((cq("a", 4, cohort="c"), cq("b", 8, cohort="c", lending=2)), "x:a:100:4")
    plan = queue_plan(s, ask("a", 4, 500))
    assert plan is not None and not plan.admits_now


def test_fair_sharing_is_said_not_predicted() -> None:
    s = snap((cq("a", 4, cohort="c"), cq("b", 4, cohort="c", fair=True)), "x:a:100:4")
    plan = queue_plan(s, ask("a", 4, 500))
    assert plan is not None and not plan.victims and "fair sharing" in plan.notes[0]


def test_a_request_in_no_queue_has_no_kueue_plan() -> None:
    assert queue_plan(snap((cq("a", 4),)), PreviewRequest(gpus=1, priority=5)) is None


def test_why_kueue_has_not_admitted_it() -> None:
    s = snap((cq("a", 8),), "x:a:100:6")
    job = make_job("w", "w", "u", "t", "hi", 1000, JobState.PENDING, NOW - 50, 4, admitted_by="kueue", queue="a")
    assert admission_block(s, job) == ("Kueue holds it in ClusterQueue a for lack of quota: flavor h100: 6 of 8 "
                                       "nominal GPUs in use; 4 more need 2 beyond it, and with no cohort it cannot "
                                       "borrow (usage counted as the admitted workloads' running pods' GPUs (the "
                                       "snapshot has no admission reservations))")  # fmt: skip


def test_the_quotas_and_times_survive_a_snapshot_file() -> None:
    """Old files (no quotas, no times) still load: the fields are optional; new ones round-trip."""
    s = snap((cq("a", 8, cohort="c", borrowing=4, lending=2, borrow=LOWER, threshold=7),), "x:a:100:4")
    data = encode_snapshot(s)
    back = decode_snapshot(data)
    assert back.queues == s.queues and back.jobs == s.jobs and encode_snapshot(back) == data


def test_the_reservation_counts_where_the_snapshot_has_it_the_pods_otherwise() -> None:
    """Kueue counts an admission's reservation, running pods or not: x reserves 8 though one 4-GPU
    pod of it runs, and z (no pod yet) reserves 2; y has no reservation in the snapshot and counts
    its pod's 4. 8 + 2 + 4 = 14 of 16: 4 more do not fit, and x (lowest) is the one to take."""
    reserved = (QueueAdmission("Job/t/x", {"h100": 8}, 100), QueueAdmission("Job/t/z", {"h100": 2}, 300))
    s = snap((replace(cq("a", 16), admitted=reserved),), "x:a:100:4", "y:a:200:4")
    plan = queue_plan(s, ask("a", 4, 500))
    assert plan is not None and not plan.admits_now
    assert [(v.workload.key, v.workload.usage) for v in plan.victims] == [("Job/t/x", {"h100": 8})]
    assert plan.notes == ("flavor h100: 14 of 16 nominal GPUs in use; preempts within the ClusterQueue, borrowing "
                          "if need be", "usage counted as each admitted workload's reservation (status.admission) "
                          "where the snapshot has it, its running pods' GPUs otherwise")  # fmt: skip
    # without the reservations (an older snapshot): 4 + 4 of 16, so 4 more fit at once
    plan = queue_plan(snap((cq("a", 16),), "x:a:100:4", "y:a:200:4"), ask("a", 4, 500))
    assert plan is not None and plan.admits_now
    assert plan.notes[1] == ("usage counted as the admitted workloads' running pods' GPUs (the snapshot has no "
                             "admission reservations)")  # fmt: skip


def test_the_reservations_survive_a_snapshot_file_and_a_bad_time_is_named() -> None:
    adm = QueueAdmission("Job/t/x", {"h100": 8}, 100, at(NOW - 50), at(NOW - 40))
    s = snap((replace(cq("a", 16), admitted=(adm,)),), "x:a:100:4")
    data = encode_snapshot(s)
    back = decode_snapshot(data)
    assert back.queues == s.queues and encode_snapshot(back) == data
    head, _, tail = data.rpartition(b'"admitted_time":"')  # (the queue's: queues come after the jobs)
    bad = head + b'"admitted_time":"1969-01-01T00:00:00Z","x":"' + tail
    with pytest.raises(BadInput, match=r"queues\[0\]\.admitted\[0\]\.admitted_time"):
        decode_snapshot(bad)
