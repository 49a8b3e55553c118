"""Core speed figures for the issue's targets (measures; asserts nothing).

    python benchmarks/gen_big_snapshot.py benchmarks/out/big.json
    python benchmarks/bench_core.py benchmarks/out/big.json

Prints: snapshot load time beside a bare msgspec decode + encode of the same file (the model
decodes straight from the file, so the two should be close); single-node 8-GPU preview time
inside the process (target <= 100 ms); SLA over 1,000,000 jobs (target <= 1 s).
"""

from __future__ import annotations

import gc
import random
import statistics
import sys
import time

import msgspec

from gpuq.model import Job, JobClass, JobState, PreviewRequest, Snapshot, from_epoch
from gpuq.model.codec import SnapshotDocument, read_snapshot_file
from gpuq.policy.config import DEFAULT_POLICY
from gpuq.policy.engine import plan_preemption
from gpuq.sla import sla_report


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
        at = from_epoch(submit)
        if i % 10 == 0:
            jobs.append(Job(str(i), "j", "u", "t", classes[i % 4].name, 1, JobState.PENDING, at, at, None, None, 1,
                            {}, (), None, None))  # fmt: skip
        else:
            start = submit + rng.expovariate(1 / 900)
            jobs.append(Job(str(i), "j", "u", "t", classes[i % 4].name, 1, JobState.COMPLETED, at, at,
                            from_epoch(start), from_epoch(start + 60), 1, {}, (), None, None))  # fmt: skip
    return Snapshot("m", "bench", from_epoch(now), classes, (), tuple(jobs))


def bare(path: str) -> float:
    """A bare msgspec decode of the file into the same structs and an encode back."""
    with open(path, "rb") as stream:
        data = stream.read()
    t0 = time.perf_counter()
    msgspec.json.encode(msgspec.json.decode(data, type=SnapshotDocument))
    return time.perf_counter() - t0


def main(path: str) -> None:
    t0 = time.perf_counter()
    snap = read_snapshot_file(path)
    loaded = time.perf_counter() - t0
    loads = [loaded] + [timed(lambda: read_snapshot_file(path), repeat=1)[0] for _ in range(2)]
    bares = [bare(path) for _ in range(3)]
    print(f"load {len(snap.jobs)} jobs / {len(snap.nodes)} nodes: {statistics.median(loads):.2f} s "
          f"(bare msgspec decode + encode of the file: {statistics.median(bares):.2f} s; "
          f"ratio {statistics.median(loads) / statistics.median(bares):.2f})")  # fmt: skip
    # The first preview builds the snapshot's placement and loss-order indexes. A long-running
    # process leaves the collector alone; a command (cli.options.App.snapshot) freezes what it
    # read, so no full collection walks the fresh snapshot during the preview.
    for how in ("in a long-running process", "as a command runs it (gc.freeze after the read)"):
        fresh = read_snapshot_file(path)
        if how.startswith("as a command"):
            gc.freeze()
        t0 = time.perf_counter()
        plan_preemption(fresh, DEFAULT_POLICY, PreviewRequest(gpus=8, priority=200), fresh.now)
        print(f"first preview on a freshly read snapshot, {how}: {(time.perf_counter() - t0) * 1000:.1f} ms")
    del fresh
    for priority in (200, 2000):
        seconds, plan = timed(lambda p=priority: plan_preemption(
            snap, DEFAULT_POLICY, PreviewRequest(gpus=8, priority=p), snap.now))
        print(f"preview 8 GPUs at priority {priority}: median {seconds * 1000:.1f} ms "
              f"(victims {[v.job_id for v in plan.victims]}, spared {len(plan.spared)})")  # type: ignore[attr-defined]
    big = million_jobs()
    seconds, report = timed(lambda: sla_report(big, DEFAULT_POLICY, big.now), repeat=3)
    print(f"SLA over {len(big.jobs)} jobs: median {seconds:.2f} s "
          f"(overall p95 {report.overall.p95_s:.0f} s)")  # type: ignore[attr-defined]


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "benchmarks/out/big.json")
