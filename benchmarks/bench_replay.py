"""Replay speed: events and jobs per second on one core with preemptions happening, and a
1,000,000-job trace replayed end to end (time and peak memory).

    .venv/bin/python benchmarks/bench_replay.py            # full run (a few minutes)
    .venv/bin/python benchmarks/bench_replay.py --quick    # smaller traces, for a smoke check

1. One core, in this process: generated traces (seeded) replayed with `gpuq.replay.run.replay`
   on a 64x8 cluster. `events/s` is the simulator's heap events (arrivals, finishes, aging,
   rechecks, graceful drains) per second of simulation (`sim_wall_s`); `jobs/s (sim)` the
   jobs over the same time; `jobs/s` the jobs over the whole call (the trace's conversion
   included). Two workloads:
   - "demo mix": the demo cluster's own stream (`gpuq.sim.WorkloadStream`: five classes, 1-16
     GPUs, a fifth of the jobs whole nodes, sweeps, checkpoints on 60% of jobs), an offered load
     of 0.9 with the daily swing (queues every afternoon);
   - "1-GPU mix": mostly one-GPU jobs (as the public traces are: 75% 1 GPU, then 2, 4, 8), the
     same classes, Poisson arrivals at a load of 0.9;
   each under a site policy (Δ = 50, minimum runtime 15 min, at most 3 preemptions a day,
   requeue), under gpuq's defaults before 12-07 (`UNGUARDED_POLICY`: Δ = 0, every priority gap
   preempts, no protections),
   and without preemption.
2. End to end: a 1,000,000-job trace of the demo mix (64x8 GPUs' worth at a load of 0.9),
   written as gpuq's job log to benchmarks/out/replay-trace-1m.jsonl (once; kept), replayed by
   `python -m gpuq replay FILE --cluster-shape 64x8 --policy site.toml -o json` in a fresh
   process: its wall time and its peak resident memory (the child's ru_maxrss).

No assertions: this prints measurements (the closing note of the replay issue has them).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import resource
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gpuq.policy.config import UNGUARDED_POLICY, Mode  # noqa: E402
from gpuq.replay.model import ReplayConfig  # noqa: E402
from gpuq.replay.run import replay  # noqa: E402
from gpuq.sim.gcpause import gc_paused  # noqa: E402
from gpuq.sim.workload import DEFAULT_CLASSES, ClusterSpec, WorkloadStream  # noqa: E402
from gpuq.trace.joblog import write_jobs  # noqa: E402
from gpuq.trace.record import TraceJob  # noqa: E402

OUT = ROOT / "benchmarks" / "out"
ORIGIN = 1_790_000_000.0
SHAPE = ClusterSpec(nodes=64, gpus_per_node=8)
# (the site policy and the unguarded one as they were before the defaults changed on 12-07: figures
# stay comparable across that change)
SITE = replace(UNGUARDED_POLICY, delta=50, min_runtime_s=900.0, max_preemptions_per_day=3, mode=Mode.REQUEUE)
SITE_TOML = ('[preemption]\ndelta = 50\nmin_runtime = "15m"\nmax_preemptions_per_day = 3\nmode = "requeue"\n'
             'default_checkpoint_interval = "0s"\ncheckpoint_cost = "0s"\nrestore_cost = "0s"\n')


def demo_mix(count: int, seed: int = 1, load: float = 0.9) -> list[TraceJob]:
    """The demo cluster's stream as a trace (ids, classes, priorities, checkpoint intervals)."""
    stream = WorkloadStream(seed, SHAPE, load=load, daily_swing=0.4)
    jobs: list[TraceJob] = []
    when = 0.0
    while len(jobs) < count:
        when, batch = stream.next_batch(when)
        for s in batch:
            jobs.append(TraceJob(s.id, ORIGIN + s.submit_time, s.duration_s, s.gpus, s.job_class, s.priority,
                                 user=s.user, tenant=s.tenant, name=s.name,
                                 checkpoint_interval_s=s.checkpoint_interval_s))  # fmt: skip
    return jobs[:count]


def one_gpu_mix(count: int, seed: int = 2, load: float = 0.9) -> list[TraceJob]:
    rng = random.Random(seed)
    sizes, weights = (1, 2, 4, 8), (75, 10, 8, 7)
    names = [c.name for c in DEFAULT_CLASSES]
    class_weights = (3, 12, 45, 25, 15)
    mean_gpus = sum(s * w for s, w in zip(sizes, weights, strict=True)) / sum(weights)
    median = 1800.0
    rate = load * SHAPE.total_gpus / (mean_gpus * median * math.exp(0.5))
    jobs, when = [], 0.0
    for i in range(count):
        when += rng.expovariate(rate)
        duration = min(8 * 3600.0, max(60.0, round(rng.lognormvariate(math.log(median), 1.0))))
        interval = rng.choice((600.0, 1800.0)) if rng.random() < 0.5 else None
        jobs.append(TraceJob(str(i + 1), ORIGIN + round(when), duration, rng.choices(sizes, weights)[0],
                             rng.choices(names, class_weights)[0], checkpoint_interval_s=interval))  # fmt: skip
    return jobs


def one_core(label: str, jobs: list[TraceJob]) -> None:
    for policy_name, policy, preemption in (("site policy", SITE, True), ("default policy", UNGUARDED_POLICY, True),
                                            ("no preemption", SITE, False)):  # fmt: skip
        config = ReplayConfig(policy=policy, nodes=SHAPE.nodes, gpus_per_node=SHAPE.gpus_per_node,
                              preemption=preemption)  # fmt: skip
        began = time.perf_counter()
        result = replay(jobs, config)
        wall = time.perf_counter() - began
        n = result.jobs
        print(f"   {label}, {n:,} jobs, {policy_name}: {result.events:,} events in {result.sim_wall_s:.2f} s = "
              f"{result.events / result.sim_wall_s:,.0f} events/s, {n / result.sim_wall_s:,.0f} jobs/s (sim), "
              f"{n / wall:,.0f} jobs/s (whole call, {wall:.2f} s); {result.preemptions:,} preemptions "
              f"({result.preemptions_per_job:.2f}/job), utilisation {result.utilisation:.2f}, "
              f"P95 wait {result.wait.p95_s:,.0f} s")  # fmt: skip


def end_to_end(count: int) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    trace = OUT / f"replay-trace-{count // 1000}k.jsonl" if count < 1_000_000 else OUT / "replay-trace-1m.jsonl"
    if not trace.exists():
        began = time.perf_counter()
        with gc_paused(), trace.open("w", encoding="utf-8") as out:
            write_jobs(demo_mix(count), out, {"source": "benchmarks/bench_replay.py", "seed": 1})
        print(f"   wrote {trace.relative_to(ROOT)} ({trace.stat().st_size / 2**20:,.0f} MiB) in "
              f"{time.perf_counter() - began:.1f} s")  # fmt: skip
    policy = OUT / "replay-site-policy.toml"
    policy.write_text(SITE_TOML, encoding="utf-8")
    argv = [sys.executable, "-m", "gpuq", "replay", str(trace), "--cluster-shape", "64x8", "--policy", str(policy),
            "-o", "json"]  # fmt: skip
    began = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=False)  # noqa: S603 - fixed argument list
    wall = time.perf_counter() - began
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20  # KiB -> GiB
    if done.returncode != 0:
        print(f"   gpuq replay failed ({done.returncode}): {done.stderr.strip()}")
        return
    doc = json.loads(done.stdout)
    print(f"   gpuq replay of {doc['jobs']:,} jobs: {wall:.1f} s wall (simulation {doc['sim_wall_s']:.1f} s, "
          f"{doc['events']:,} events = {doc['events'] / doc['sim_wall_s']:,.0f} events/s), peak RSS {peak:.2f} GiB; "
          f"{doc['preemptions']:,} preemptions, utilisation {doc['utilisation']:.2f}, "
          f"P95 wait {doc['wait']['p95_s']:,.0f} s")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smaller traces")
    args = parser.parse_args()
    import gpuq.sim

    build = "compiled (mypyc)" if gpuq.sim.NATIVE else "pure Python (not compiled, or GPUQ_PURE_PYTHON=1)"
    print(f"simulator modules: {build}")
    count = 20_000 if args.quick else 100_000
    print("1. One core, 64x8 GPUs")
    one_core("demo mix", demo_mix(count))
    one_core("1-GPU mix", one_gpu_mix(count))
    print("2. End to end, gpuq replay in a fresh process")
    end_to_end(50_000 if args.quick else 1_000_000)


if __name__ == "__main__":
    main()
