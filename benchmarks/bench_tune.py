"""Tuning speed: a 48-point grid (Δ × checkpoint interval × minimum runtime × strategy) replayed
over a generated 100,000-job trace across 2 local processes, as `gpuq tune` runs it (the
service's `tune`: each worker reads the trace file once, then replays its points).

    .venv/bin/python benchmarks/bench_tune.py                 # 100,000 jobs, 48 points, 2 workers
    .venv/bin/python benchmarks/bench_tune.py --jobs 20000 --workers 1 --points 4   # a smoke run

The trace (benchmarks/out/tune-trace-N.jsonl, made once) has five classes in the simulator's
default mix, Poisson arrivals every 45 s on average, log-normal run times (median 40 min, mean 66 min),
1-16 GPUs (mean 4.3), on a 56x8 cluster: about 85% offered load, so queues form and preemptions happen.
Prints the wall time, points per minute, events per second across the run, and the best point.
Measures; asserts nothing.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gpuq.service.tuning import TuneRequest, tune  # noqa: E402
from gpuq.trace import TraceJob  # noqa: E402
from gpuq.trace.joblog import write_jobs  # noqa: E402

OUT = Path(__file__).resolve().parent / "out"
GRID_48 = (
    "delta=0,50,100",
    "checkpoint_interval=10m,30m",
    "min_runtime=0,10m",
    "strategy=requeue,cancel,graceful,suspend",
)
SHAPE = "56x8"
_CLASSES = (("urgent", 3), ("high", 12), ("normal", 45), ("low", 25), ("batch", 15))
_SIZES = ((1, 30), (2, 20), (4, 22), (8, 22), (16, 6))


def _jobs(count: int) -> Iterator[TraceJob]:
    rng = random.Random(7)
    names, weights = zip(*_CLASSES, strict=True)
    sizes, size_weights = zip(*_SIZES, strict=True)
    t = 1_700_000_000.0
    for i in range(count):
        t += rng.expovariate(1 / 45.0)
        run = min(7 * 86400.0, rng.lognormvariate(math.log(2400.0), 1.0))
        yield TraceJob(str(i), round(t, 3), round(run, 3), rng.choices(sizes, size_weights)[0],
                       job_class=rng.choices(names, weights)[0], user=f"u{i % 41}", tenant=f"t{i % 7}")  # fmt: skip


def trace_file(count: int) -> Path:
    OUT.mkdir(exist_ok=True)
    path = OUT / f"tune-trace-{count}.jsonl"
    if not path.exists():
        with path.open("w") as out:
            write_jobs(_jobs(count), out, {"source": "bench_tune"})
    return path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--points", type=int, default=48, help="48, or fewer (the first axes' first values)")
    args = parser.parse_args()
    grid = GRID_48
    if args.points < 48:  # a smoke run: Δ values only
        grid = ("delta=" + ",".join(str(50 * i) for i in range(args.points)),)
    path = trace_file(args.jobs)
    request = TuneRequest(str(path), grid, shape=SHAPE)
    last = [0.0]
    began = time.perf_counter()

    def progress(done: int, total: int) -> None:
        now = time.perf_counter() - began
        if done and now - last[0] >= 15:
            last[0] = now
            print(f"  {done}/{total} points after {now:.0f} s", flush=True)

    report = tune(request, workers=args.workers, progress=progress)
    wall = time.perf_counter() - began
    rows = report.ranking.rows
    events = sum(r.result.events for r in rows)
    sim = sum(r.result.sim_wall_s for r in rows)
    preempted = sum(r.result.preemptions for r in rows)
    best = report.ranking.best
    print(f"{len(rows)} points x {args.jobs:,} jobs on {report.ran_on}: {wall:.1f} s wall "
          f"({len(rows) / wall * 60:.1f} points/min); {events:,} events, {events / wall:,.0f} events/s of wall time, "
          f"simulation {sim:.1f} s CPU in all; {preempted:,} preemptions in all")  # fmt: skip
    print(f"best {best.point.id}: {best.point.label}, score {best.score:.4f}, useful U "
          f"{100 * best.u:.1f}%, mean wait {best.result.wait.mean_s:.0f} s")  # fmt: skip


if __name__ == "__main__":
    main()
