"""Generate the issue's large snapshot: 10,000 nodes x 8 GPUs, 200,000 jobs, every GPU busy.

Usage: python benchmarks/gen_big_snapshot.py big.json [--nodes 10000] [--jobs 200000] [--seed 7]
About 25,000 jobs of 1-8 GPUs run (packed so every GPU is busy); the rest are pending.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

from gpuq.timefmt import format_time

NOW = 1_795_000_000.0  # a fixed instant keeps runs comparable
CLASSES = [
    {"name": "urgent", "priority": 1000, "preemptible": False, "target_p95_s": 600, "max_wait_s": 1800},
    {"name": "high", "priority": 500, "preemptible": True, "target_p95_s": 1800, "max_wait_s": 3600},
    {"name": "normal", "priority": 100, "preemptible": True, "target_p95_s": 3600, "max_wait_s": 7200},
    {"name": "low", "priority": 10, "preemptible": True, "target_p95_s": 14400, "max_wait_s": 28800},
]


def generate(nodes: int, jobs: int, seed: int) -> dict[str, object]:
    rng = random.Random(seed)
    out_jobs: list[dict[str, object]] = []
    t = format_time
    for n in range(nodes):
        name = f"gpu-{n:05d}"
        idx = 0
        while idx < 8:
            width = min(rng.choice([1, 1, 2, 2, 4, 4, 8]), 8 - idx)
            cls = rng.choice(CLASSES[1:])
            start = NOW - rng.randint(60, 86400)
            submit = start - rng.randint(0, 7200)
            out_jobs.append({
                "id": str(len(out_jobs) + 1), "name": f"train-{len(out_jobs)}", "user": f"user{rng.randint(1, 300)}",
                "tenant": f"team{rng.randint(1, 40)}", "class": cls["name"], "priority": cls["priority"],
                "state": "running", "submit_time": t(submit), "eligible_time": t(submit), "start_time": t(start),
                "end_time": None, "gpus": width, "allocation": {name: list(range(idx, idx + width))},
                "preemption_times": [t(start - 600)] if rng.random() < 0.05 else [],
                "last_checkpoint_time": t(NOW - rng.randint(0, 3600)) if rng.random() < 0.5 else None,
                "exempt_until": t(NOW + 3600) if rng.random() < 0.01 else None,
            })
            idx += width
    while len(out_jobs) < jobs:
        cls = rng.choice(CLASSES)
        submit = NOW - rng.randint(0, 86400)
        out_jobs.append({
            "id": str(len(out_jobs) + 1), "name": f"job-{len(out_jobs)}", "user": f"user{rng.randint(1, 300)}",
            "tenant": f"team{rng.randint(1, 40)}", "class": cls["name"], "priority": cls["priority"],
            "state": "pending", "submit_time": t(submit), "eligible_time": t(submit), "start_time": None,
            "end_time": None, "gpus": rng.choice([1, 2, 4, 8]), "allocation": {}, "preemption_times": [],
            "last_checkpoint_time": None, "exempt_until": None, "reason": "Resources",
        })
    return {
        "format": "gpuq.snapshot/v1", "cluster": "big", "backend": "snapshot", "taken_at": t(NOW),
        "classes": CLASSES,
        "nodes": [{"name": f"gpu-{n:05d}", "gpus": 8, "gpu_model": "H100", "state": "allocated"} for n in range(nodes)],
        "jobs": out_jobs,
    }


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out")
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--jobs", type=int, default=200_000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)  # (benchmarks/out/ is not committed)
    with open(args.out, "w") as stream:
        json.dump(generate(args.nodes, args.jobs, args.seed), stream, separators=(",", ":"))


if __name__ == "__main__":
    main(sys.argv[1:])
