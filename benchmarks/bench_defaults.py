"""The shipped preemption defaults on a public-shaped trace at full load, against the old ones.

    .venv/bin/python benchmarks/bench_defaults.py             # 15,802 jobs on 80x8 GPUs
    .venv/bin/python benchmarks/bench_defaults.py --jobs 600 --nodes 8    # the tests' scale

The trace (`gpuq.trace.synthetic.public_shape`) has the shape of the public trace the defaults
were judged on: 15,802 jobs of 1–64 GPUs (mostly one), log-normal run times, Poisson arrivals
offering the whole cluster's GPUs (load 1.0) over ~60 days, no recorded checkpoints, classes by
gpuq's trace class rules. It is replayed under:

- "shipped": `DEFAULT_POLICY` (Δ 50, minimum runtime 30m, 3 preemptions a day, hourly default
  checkpoints, saves 1m, restores 2m, requeue);
- "unguarded": `UNGUARDED_POLICY` (Δ 0, no minimum runtime, no cap, no default checkpoints,
  free checkpoints: gpuq's defaults before 12-07);
- "hourly checkpoints only": the unguarded policy with a 1 h default checkpoint interval.

For each: preemptions per job, the most of one job in any 24 h, GPU-time lost as a share of the
work done, the makespan against the submit span, P95 wait, and the thrash guard's verdict. The
issue's bounds for the shipped defaults: ≤ 1 preemption per job, no job over the daily cap in
any 24 h, ≤ 10% of the work lost. Measures; asserts nothing (tests/replay/test_defaults.py does,
at a smaller scale).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gpuq.policy.config import DEFAULT_POLICY, UNGUARDED_POLICY  # noqa: E402
from gpuq.replay.model import ReplayConfig  # noqa: E402
from gpuq.replay.run import replay  # noqa: E402
from gpuq.trace.synthetic import public_shape  # noqa: E402

POLICIES = (
    ("shipped", DEFAULT_POLICY),
    ("unguarded", UNGUARDED_POLICY),
    ("hourly checkpoints only", replace(UNGUARDED_POLICY, default_checkpoint_interval_s=3600.0)),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=15_802)
    parser.add_argument("--nodes", type=int, default=80, help="nodes of 8 GPUs (default 80: 640 GPUs)")
    parser.add_argument("--load", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    import gpuq.sim

    print(f"simulator modules: {'compiled' if gpuq.sim.NATIVE else 'pure Python'}")
    jobs = public_shape(args.jobs, args.nodes * 8, load=args.load, seed=args.seed)
    span = (jobs[-1].submit_time - jobs[0].submit_time) / 86400
    gpus = [j.gpus for j in jobs]
    print(f"{len(jobs):,} jobs of {min(gpus)}–{max(gpus)} GPUs over {span:.1f} days, on {args.nodes}x8 GPUs, "
          f"offered load {args.load:g}")  # fmt: skip
    for name, policy in POLICIES:
        began = time.perf_counter()
        r = replay(jobs, ReplayConfig(policy=policy, nodes=args.nodes, gpus_per_node=8))
        wall = time.perf_counter() - began
        thrash = r.thrash
        share = thrash.lost_share if thrash is not None else None
        verdict = (thrash.summary() if thrash is not None and thrash.flagged else "no thrash")[:400]
        print(f"  {name}: {r.preemptions_per_job:.2f} preemptions per job ({r.preemptions:,}), at most "
              f"{r.max_preemptions_per_job_day} of one job in 24 h, {share or 0:.1%} of the work lost, makespan "
              f"{r.makespan_s / 86400:.1f} days for {span:.1f} days of submits, P95 wait {r.wait.p95_s / 3600:.1f} h, "
              f"utilisation {r.utilisation:.2f} (useful {r.useful_utilisation:.2f}); {wall:.1f} s\n"
              f"      guard: {verdict}")  # fmt: skip


if __name__ == "__main__":
    main()
