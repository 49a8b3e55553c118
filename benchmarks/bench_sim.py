"""Simulator speed: events per second, and the speed-up over the seed's time-stepped demo.

    .venv/bin/python benchmarks/bench_sim.py            # full run (~10 s, mostly the seed demo)
    .venv/bin/python benchmarks/bench_sim.py --quick    # smaller workloads, for a smoke check

1. Seed comparison: the same 5,000 one-GPU jobs (whole-second submit times and durations,
   priorities 0-100, distinct submit times so the seed demo does not crash on ties) on 128 GPUs:
   `seed_demo.preemptive_schedule(jobs, gpu_count=128, dt=1)` (tests/fixtures/seed_demo.py) against gpuq's simulator
   with the equivalent lossless policy (graceful preemption, no grace period, Δ = 0). Two sets of
   durations: 10 min-4 h (typical GPU jobs) and 1 min-1 h. A time-stepped loop costs GPUs ×
   makespan / dt, the event heap only events, so the gap grows with job length.
2. Events per second: heap events processed (arrivals, finishes, aging, rechecks; stale entries
   of preempted jobs are not counted) per second spent in `run()`, on one-GPU jobs without and
   with preemption, and on the demo cluster's own workload (16 × 8 GPUs, five classes,
   multi-node jobs, checkpoints, aging, victims chosen by the policy engine's rules), under the
   old default policy (`UNGUARDED_POLICY`, Δ = 0) and as `--backend demo` runs it (its damped
   site policy and load).
3. A yardstick: the bare event loop below runs the preempting one-GPU workload with nothing but
   a heap, a FIFO-by-priority queue and the same victim rule (the most recently started job of
   lower priority: the least lost work) — no Δ, protections, classes, modes, aging, placement or
   accounting. It is about the least an interpreted event loop pays for these events; gpuq's
   own figure is to be read against it.

The first line says which simulator runs: the mypyc-compiled modules (an install with a C
compiler) or the sources (none, or GPUQ_PURE_PYTHON=1). No assertions: this prints
measurements (see the closing note of the simulator issue).
"""

from __future__ import annotations

import argparse
import heapq
import random
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
# The seed's demo is kept once, as the fixture the equivalence test runs.
sys.path.insert(0, str(ROOT / "tests" / "fixtures"))

import seed_demo  # noqa: E402

from gpuq.backends.demo import DEMO_POLICY  # noqa: E402
from gpuq.backends.demo import LOAD as DEMO_LOAD  # noqa: E402
from gpuq.backends.demo import MAX_PENDING as DEMO_MAX_PENDING  # noqa: E402
from gpuq.model import JobClass  # noqa: E402
from gpuq.policy.config import UNGUARDED_POLICY, Mode  # noqa: E402
from gpuq.sim.simulator import Simulator  # noqa: E402
from gpuq.sim.workload import ClusterSpec, JobSpec, WorkloadStream  # noqa: E402

SEED_CLASSES = (JobClass("batch", priority=0, preemptible=True),)
LOSSLESS = replace(UNGUARDED_POLICY, mode=Mode.GRACEFUL, grace_period_s=0.0)
START = 1_800_000_000.0


def comparison_jobs(seed: int, count: int, span: int, shortest: int, longest: int, flat: bool = False) -> list[JobSpec]:
    rng = random.Random(seed)
    submits = rng.sample(range(span), count)  # distinct: the seed demo raises TypeError on ties
    return [
        JobSpec(id=str(i), submit_time=float(t), duration_s=float(rng.randint(shortest, longest)),
                priority=0 if flat else rng.randint(0, 100), job_class="batch")
        for i, t in enumerate(submits)
    ]


def run_seed(specs: list[JobSpec], gpus: int) -> tuple[float, int]:
    jobs = [seed_demo.Job(s.id, s.priority, s.submit_time, s.duration_s) for s in specs]
    t = time.perf_counter()
    timeline = seed_demo.preemptive_schedule(jobs, gpu_count=gpus, dt=1)
    return time.perf_counter() - t, len(timeline)


def run_gpuq(specs: list[JobSpec], gpus: int) -> tuple[float, float, Simulator]:
    """(seconds including job submission, seconds in the event loop only, the simulator)."""
    sim = Simulator(policy=LOSSLESS, cluster=ClusterSpec(nodes=gpus // 8, gpus_per_node=8), classes=SEED_CLASSES)
    t = time.perf_counter()
    sim.submit(specs)
    t_loop = time.perf_counter()
    sim.run()
    end = time.perf_counter()
    return end - t, end - t_loop, sim


def best_gpuq(specs: list[JobSpec], gpus: int, repeat: int = 3) -> tuple[float, float, Simulator]:
    runs = [run_gpuq(specs, gpus) for _ in range(repeat)]
    return min(runs, key=lambda r: r[0])


def bare_loop(specs: list[JobSpec], gpus: int) -> tuple[float, int, int]:
    """(seconds in the loop, events, preemptions) of the yardstick loop (see the module doc)."""

    class Bare:
        __slots__ = ("id", "priority", "duration", "done", "start", "epoch")

        def __init__(self, spec: JobSpec) -> None:
            self.id, self.priority, self.duration = spec.id, spec.priority, spec.duration_s
            self.done = self.start = 0.0
            self.epoch = 0

    events = [(s.submit_time, i, 0, Bare(s), 0) for i, s in enumerate(specs)]
    heapq.heapify(events)
    seq = len(events)
    pop, push = heapq.heappop, heapq.heappush
    free, queue, running = gpus, [], {}  # running: in start order
    processed = preempted = 0
    began = time.perf_counter()
    while events:
        now, _, kind, job, epoch = pop(events)
        if kind:  # a finish
            if job.epoch != epoch:
                continue  # of a run preempted since
            free += 1
            del running[job.id]
        else:
            push(queue, (-job.priority, now, job.id, job))
        processed += 1
        while queue:
            if not free:
                wanted = -queue[0][0]
                for victim in reversed(running.values()):
                    if victim.priority < wanted:
                        break
                else:
                    break  # nobody to preempt
                del running[victim.id]
                victim.done += now - victim.start
                victim.epoch += 1
                preempted += 1
                push(queue, (-victim.priority, now, victim.id, victim))
                free += 1
            head = pop(queue)[3]
            free -= 1
            head.start = now
            head.epoch += 1
            seq += 1
            push(events, (now + head.duration - head.done, seq, 1, head, head.epoch))
            running[head.id] = head
    return time.perf_counter() - began, processed, preempted


def demo_run(days: float, seed: int, backend_settings: bool = False) -> tuple[float, Simulator]:
    """The demo cluster's workload under gpuq's old defaults (`UNGUARDED_POLICY`, Δ = 0: every gap
    preempts; kept so the figures stay comparable), or with
    `backend_settings` exactly as `--backend demo` runs it (its damped site policy and load)."""
    if backend_settings:
        sim = Simulator(policy=DEMO_POLICY, stream=WorkloadStream(seed, ClusterSpec(), load=DEMO_LOAD), start=START,
                        max_pending=DEMO_MAX_PENDING)
    else:
        sim = Simulator(policy=UNGUARDED_POLICY, stream=WorkloadStream(seed, ClusterSpec(), load=1.05), start=START,
                        max_pending=300)
    t = time.perf_counter()
    sim.run_until(START + days * 86400)
    return time.perf_counter() - t, sim


def _rates(label: str, seconds: float, sim: Simulator) -> str:
    events = sim.events_processed
    return (f"   {label}: {events} events in {seconds:.3f} s = {events / seconds:,.0f} events/s "
            f"({sim.preemptions} preemptions, {sim.plans} policy-engine plans)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smaller workloads")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--skip-seed-demo", action="store_true", help="do not run the (slow) seed demo")
    args = parser.parse_args()
    count = 1000 if args.quick else 5000

    import gpuq.sim

    build = "compiled (mypyc)" if gpuq.sim.NATIVE else "pure Python (not compiled, or GPUQ_PURE_PYTHON=1)"
    print(f"simulator modules: {build}")
    print(f"1. Speed-up over seed_demo.preemptive_schedule(jobs, gpu_count=128, dt=1), {count} one-GPU jobs")
    for label, shortest, longest in (("durations 10 min-4 h", 600, 14_400), ("durations 1 min-1 h", 60, 3600)):
        mean = (shortest + longest) / 2
        span = int(count * mean / 128 * 0.95)  # offered load a little above capacity: queues and preemption
        specs = comparison_jobs(args.seed, count, span, shortest, longest)
        total, loop, sim = best_gpuq(specs, 128)
        line = (f"   {label}, submits over {span} s: gpuq {total:.3f} s ({sim.events_processed} events, "
                f"{sim.preemptions} preemptions, makespan {sim.now:.0f} s)")
        if not args.skip_seed_demo:
            seed_s, entries = run_seed(specs, 128)
            line += (f"; seed demo {seed_s:.3f} s ({entries} timeline entries); speed-up {seed_s / total:.1f}x "
                     f"({seed_s / loop:.1f}x counting the event loop only, as the seed's own jobs are built "
                     f"before its clock starts)")
        print(line)

    print("2. Events per second (event loop only, best of 3)")
    flat = comparison_jobs(args.seed, count, int(count * 1830 / 128), 60, 3600, flat=True)
    _, loop, sim = best_gpuq(flat, 128)
    print(_rates("one-GPU jobs, equal priorities (no preemption)", loop, sim))
    busy = comparison_jobs(args.seed, count, int(count * 1830 / 128 * 0.95), 60, 3600)
    _, loop, sim = best_gpuq(busy, 128)
    print(_rates("one-GPU jobs, priorities 0-100 (preempting)", loop, sim))
    bare = min(bare_loop(busy, 128) for _ in range(3))
    print(f"   yardstick, the bare loop on the same preempting jobs: {bare[1]} events in {bare[0]:.3f} s = "
          f"{bare[1] / bare[0]:,.0f} events/s ({bare[2]} preemptions; no policy at all)")
    days = 7.0 if args.quick else 30.0
    for label, backend_settings in (("default policy", False), ("as --backend demo runs it", True)):
        demo_s, demo = demo_run(days, args.seed, backend_settings)
        util = demo.busy_gpu_s() / (demo.capacity * (demo.now - demo.t0))
        print(_rates(f"demo cluster 16x8 GPUs, {label}, {days:g} simulated days, utilisation {util:.2f}",
                     demo_s, demo))


if __name__ == "__main__":
    main()
