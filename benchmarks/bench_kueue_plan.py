"""Kueue's own plan, predicted (`gpuq.policy.queueplan.queue_plan`), at scale (measures; asserts
nothing).

    python benchmarks/bench_kueue_plan.py [WORKLOADS] [QUEUES]    (default 15,000, 30)

QUEUES ClusterQueues in cohorts of 10, their nominal quotas in one flavor sharing out exactly what
the cohort's workloads use (the cohort is full),
``withinClusterQueue: LowerOrNewerEqualPriority``, ``reclaimWithinCohort: Any``; WORKLOADS admitted
workloads of 2 pods × 4 GPUs spread over them, priorities 0..9, admitted a second apart. Queue 0
holds fewer than its share and every other queue borrows, so every workload of its cohort is a
candidate: the worst case for the candidate search, order and minimal set. The request: 600 GPUs
at priority 5 waiting in queue 0. Measured, median of 5: the first plan on a new snapshot (it
groups the pods into workloads) and the next ones (the grouping kept with the snapshot).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gpuq.model import JobState, Node, PreviewRequest, Queue, QueuePolicy, QueueQuota, Snapshot  # noqa: E402
from tests.factories import at, make_job  # noqa: E402

NOW = 1_800_000_000.0


def build(workloads: int, queues: int) -> Snapshot:
    jobs, nodes = [], []
    for n in range(workloads):
        queue = 0 if n % 50 == 0 else 1 + n % (queues - 1)
        t = NOW - 100_000 + n
        for pod in range(2):
            node = f"node-{n}-{pod}"
            nodes.append(Node(node, 8))
            jobs.append(make_job(f"wl{n}-{pod}", f"wl{n}", "u", "t", "lo", 0, JobState.RUNNING, t, 4, start_time=t,
                                 allocation={node: range(4)}, admitted_by="kueue", queue=f"cq{queue}",
                                 queue_priority=n % 10, owner=f"Job/t/wl{n}", queue_flavor="h100",
                                 queue_time=at(t), admitted_time=at(t)))  # fmt: skip
    # each cohort's quota is exactly what its queues use, shared evenly: the cohort is full
    used: dict[int, int] = {}
    for job in jobs:
        cohort = int(str(job.queue)[2:]) // 10
        used[cohort] = used.get(cohort, 0) + job.gpus
    members = {c: len([i for i in range(queues) if i // 10 == c]) for c in used}
    qs = tuple(Queue(f"cq{i}", f"cohort{i // 10}", QueuePolicy.LOWER_OR_NEWER_EQUAL_PRIORITY, QueuePolicy.ANY,
                     (QueueQuota("h100", used.get(i // 10, 0) // members.get(i // 10, 1)
                                 + (used.get(i // 10, 0) % members.get(i // 10, 1) if i % 10 == 0 else 0)),))
               for i in range(queues))  # fmt: skip
    return Snapshot("bench", "kubernetes", at(NOW), (), tuple(nodes), tuple(jobs), (), qs)


def median_ms(run: object, times: int = 5) -> float:
    found = []
    for _ in range(times):
        start = time.perf_counter()
        run()  # type: ignore[operator]
        found.append((time.perf_counter() - start) * 1000)
    return statistics.median(found)


def main() -> None:
    from gpuq.policy.queueplan import queue_plan

    workloads = int(sys.argv[1]) if len(sys.argv) > 1 else 15_000
    queues = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    base = build(workloads, queues)
    request = PreviewRequest(gpus=600, priority=5, admitted_by="kueue", queue="cq0")

    def fresh() -> None:
        s = Snapshot(base.cluster, base.backend, base.taken_at, base.classes, base.nodes, base.jobs, (), base.queues)
        queue_plan(s, request)

    queue_plan(base, request)  # (warm-up: imports, and the grouping kept with `base`)
    plan = queue_plan(base, request)
    assert plan is not None
    print(f"{workloads} admitted workloads ({2 * workloads} pods) in {queues} ClusterQueues: "
          f"{len(plan.victims)} victims, {plan.notes[-1]}")  # fmt: skip
    print(f"  first plan on a new snapshot: {median_ms(fresh):.1f} ms")
    print(f"  next plans:                   {median_ms(lambda: queue_plan(base, request)):.1f} ms")


if __name__ == "__main__":
    main()
