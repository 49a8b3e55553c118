"""Time `gpuq --backend slurm queue -o json` end to end on the live lab, next to plain `squeue`.

    scripts/slurm-lab start && eval "$(scripts/slurm-lab env)"
    python benchmarks/bench_slurm_live.py [--fill 9500] [--runs 8] [--keep] [--holders 8 --detail-max 2]

With ``--fill N`` it first submits held one-GPU-less ``sleep`` jobs (``sbatch -H``, 8 at a time)
until the queue has N jobs, and cancels them afterwards unless ``--keep``. The gpuq cache
(``$XDG_CACHE_HOME/gpuq``) is pointed at a fresh temporary directory, so the first call is a cold
one (config, sacctmgr and a full-window sacct read) and the later ones are what an operator's
repeated ``gpuq queue`` costs: within the history TTL (15 s) no slurmdbd round trip at all; the
``--aged`` call ages the cached sacct read past the TTL first (an incremental sacct read).
Reports wall seconds per call (each a fresh process, as an operator runs it).

The many-GPU-holders path (more jobs holding GPUs than the backend's ``detail_one_by_one_max``,
default 32: one full ``scontrol show job -d -o`` instead of one read per job) needs more GPU jobs
than the lab's 8 GPUs can run, so ``--detail-max N`` lowers the threshold for the timed calls
(``GPUQ_SLURM_DETAIL_ONE_BY_ONE_MAX=N`` in their environment) and ``--holders M`` first starts M
one-GPU ``sleep`` jobs (and waits for them to run). The first call then reads the details after
squeue (no hint yet); the repeated ones start that read beside squeue (the disk cache remembers
that the last read saw many holders).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


def _wall(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, env=env, check=True)  # noqa: S603
    return time.perf_counter() - started


def _queue_len() -> int:
    out = subprocess.run(["squeue", "-h", "-r", "-o", "%i"], capture_output=True, text=True, check=True)  # noqa: S607
    return len(out.stdout.split())


def _fill(target: int) -> None:
    missing = target - _queue_len()
    if missing <= 0:
        return

    def submit(chunk: range) -> None:
        for i in chunk:
            subprocess.run(  # noqa: S603
                ["sbatch", "-H", "-J", f"bench{i}", "-o", "/dev/null", "--wrap", "sleep 600"],  # noqa: S607
                stdout=subprocess.DEVNULL,
                check=True,
            )

    step = (missing + 7) // 8
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(submit, [range(s, min(s + step, missing)) for s in range(0, missing, step)]))


def _start_holders(count: int) -> list[str]:
    ids = [
        subprocess.run(  # noqa: S603
            ["sbatch", "--parsable", "-N1", "--gres=gpu:1", "-J", "holder", "-o", "/dev/null", "--wrap", "sleep 3000"],  # noqa: S607
            capture_output=True,
            text=True,
            check=True,
        )
        .stdout.split(";")[0]
        .strip()
        for _ in range(count)
    ]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        out = subprocess.run(["squeue", "-h", "-t", "R", "-o", "%i"], capture_output=True, text=True, check=True)  # noqa: S607
        if set(ids) <= set(out.stdout.split()):
            return ids
        time.sleep(0.5)
    raise SystemExit(f"the {count} GPU jobs did not all start within 60 s (the lab has 8 GPUs)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fill", type=int, default=0, help="submit held jobs until the queue has this many")
    ap.add_argument("--runs", type=int, default=8, help="repeated calls after the first")
    ap.add_argument("--keep", action="store_true", help="leave the submitted jobs queued")
    ap.add_argument("--holders", type=int, default=0, help="first start this many 1-GPU jobs (at most 8 on the lab)")
    ap.add_argument(
        "--detail-max",
        type=int,
        default=None,
        help="GPUQ_SLURM_DETAIL_ONE_BY_ONE_MAX for the timed calls (e.g. 2 forces the many-holders path)",
    )
    args = ap.parse_args()
    if not os.environ.get("SLURM_CONF"):
        print('SLURM_CONF is not set: eval "$(scripts/slurm-lab env)"', file=sys.stderr)
        return 2
    gpuq = str(Path(sys.executable).with_name("gpuq"))
    cache = tempfile.mkdtemp(prefix="gpuq-bench-cache-")
    env = {**os.environ, "XDG_CACHE_HOME": cache}
    if args.detail_max is not None:
        env["GPUQ_SLURM_DETAIL_ONE_BY_ONE_MAX"] = str(args.detail_max)
    before = _queue_len()
    holders: list[str] = []
    try:
        if args.holders:
            holders = _start_holders(args.holders)
        if args.fill:
            _fill(args.fill)
        jobs = _queue_len()
        squeue = [_wall(["squeue"], env) for _ in range(5)]
        cmd = [gpuq, "--backend", "slurm", "queue", "-o", "json"]
        first = _wall(cmd, env)
        repeated = [_wall(cmd, env) for _ in range(args.runs)]
        # Age the cached sacct read past the TTL: the next call reads sacct since then (incremental).
        (path,) = Path(cache, "gpuq").glob("slurm-*.json")
        data = json.loads(path.read_text())
        data["history"]["fresh_at"] -= 3600
        path.write_text(json.dumps(data))
        aged = _wall(cmd, env)
        result = {
            "jobs_in_queue": jobs,
            "squeue_s": round(statistics.median(squeue), 3),
            "gpuq_first_s": round(first, 3),
            "gpuq_repeated_s": [round(x, 3) for x in repeated],
            "gpuq_repeated_median_s": round(statistics.median(repeated), 3),
            "gpuq_aged_history_s": round(aged, 3),
            "gpu_holders_started": len(holders),
            "GPUQ_SLURM_DETAIL_ONE_BY_ONE_MAX": env.get("GPUQ_SLURM_DETAIL_ONE_BY_ONE_MAX", ""),
            # No bytecode cache (PYTHONDONTWRITEBYTECODE=1, no PYTHONPYCACHEPREFIX) costs ~40 ms of compiling.
            "PYTHONDONTWRITEBYTECODE": os.environ.get("PYTHONDONTWRITEBYTECODE", ""),
            "PYTHONPYCACHEPREFIX": os.environ.get("PYTHONPYCACHEPREFIX", ""),
        }
        print(json.dumps(result, indent=2))
    finally:
        shutil.rmtree(cache, ignore_errors=True)
        if holders and not args.keep:
            subprocess.run(["scancel", *holders], check=False)  # noqa: S603, S607
        if args.fill and not args.keep and before == 0:
            subprocess.run(["scancel", "-u", os.environ.get("USER", "root")], check=False)  # noqa: S603, S607
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
