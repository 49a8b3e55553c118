"""Core speed figures for the issue's targets (measures; asserts nothing).

    python benchmarks/gen_big_snapshot.py benchmarks/out/big.json
    python benchmarks/bench_core.py benchmarks/out/big.json

Prints: snapshot load time; single-node 8-GPU preview time inside the process (target <= 100 ms);
SLA over 1,000,000 jobs (target <= 1 s).
"""

from __future__ import annotations

import random
import statistics
import sys
import time

from gpuq.model import Job, JobClass, JobState, Snapshot
from gpuq.policy.config import DEFAULT_POLICY
from gpuq.policy.engine import Request, plan_preemption
from gpuq.sla import sla_report
from gpuq.snapshot_io import read_snapshot_file


def timed(fn, repeat: int = 5) -> tuple[float, object]:  # type: ignore[no-untyped-def]
    runs = []
    result = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs), result


def million_jobs() -> Snapshot:
    rng = random.Random(3)
    now = 1_795_000_000.0
    classes = tuple(JobClass(c, 0, True, 3600, 7200) for c in ("urgent", "high", "normal", "low"))
    jobs = []
    for i in range(1_000_000):
        submit = now - rng.randint(0, 30 * 86400)
        if i % 10 == 0:
            jobs.append(Job(str(i), "j", "u", "t", classes[i % 4].name, 1, JobState.PENDING, submit, 1,
                            eligible_time=submit))
        else:
            start = submit + rng.expovariate(1 / 900)
            jobs.append(Job(str(i), "j", "u", "t", classes[i % 4].name, 1, JobState.COMPLETED, submit, 1,
                            eligible_time=submit, start_time=start, end_time=start + 60))
    return Snapshot("m", "bench", now, classes, (), tuple(jobs))


def main(path: str) -> None:
    t0 = time.perf_counter()
    snap = read_snapshot_file(path)
    print(f"load {len(snap.jobs)} jobs / {len(snap.nodes)} nodes: {time.perf_counter() - t0:.2f} s")
    t0 = time.perf_counter()
    plan_preemption(snap, DEFAULT_POLICY, Request(gpus=8, priority=200), snap.taken_at)
    elapsed_ms = (time.perf_counter() - t0) * 1000
    print(f"first preview on the fresh snapshot (builds its placement and loss-order indexes): {elapsed_ms:.1f} ms")
    for priority in (200, 2000):
        seconds, plan = timed(lambda p=priority: plan_preemption(
            snap, DEFAULT_POLICY, Request(gpus=8, priority=p), snap.taken_at))
        print(f"preview 8 GPUs at priority {priority}: median {seconds * 1000:.1f} ms "
              f"(victims {[v.job_id for v in plan.victims]}, spared {len(plan.spared)})")  # type: ignore[attr-defined]
    big = million_jobs()
    seconds, report = timed(lambda: sla_report(big, DEFAULT_POLICY, big.taken_at), repeat=3)
    print(f"SLA over {len(big.jobs)} jobs: median {seconds:.2f} s "
          f"(overall p95 {report.overall.p95_s:.0f} s)")  # type: ignore[attr-defined]


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "benchmarks/out/big.json")
