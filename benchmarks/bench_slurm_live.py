"""Time `gpuq --backend slurm queue -o json` end to end on the live lab, next to plain `squeue`.

    scripts/slurm-lab start && eval "$(scripts/slurm-lab env)"
    python benchmarks/bench_slurm_live.py [--fill 9500] [--runs 8] [--keep]

With ``--fill N`` it first submits held one-GPU-less ``sleep`` jobs (``sbatch -H``, 8 at a time)
until the queue has N jobs, and cancels them afterwards unless ``--keep``. The gpuq cache
(``$XDG_CACHE_HOME/gpuq``) is pointed at a fresh temporary directory, so the first call is a cold
one (config, sacctmgr and a full-window sacct read) and the later ones are what an operator's
repeated ``gpuq queue`` costs: within the history TTL (15 s) no slurmdbd round trip at all; the
``--aged`` call ages the cached sacct read past the TTL first (an incremental sacct read).
Reports wall seconds per call (each a fresh process, as an operator runs it).
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fill", type=int, default=0, help="submit held jobs until the queue has this many")
    ap.add_argument("--runs", type=int, default=8, help="repeated calls after the first")
    ap.add_argument("--keep", action="store_true", help="leave the submitted jobs queued")
    args = ap.parse_args()
    if not os.environ.get("SLURM_CONF"):
        print('SLURM_CONF is not set: eval "$(scripts/slurm-lab env)"', file=sys.stderr)
        return 2
    gpuq = str(Path(sys.executable).with_name("gpuq"))
    cache = tempfile.mkdtemp(prefix="gpuq-bench-cache-")
    env = {**os.environ, "XDG_CACHE_HOME": cache}
    before = _queue_len()
    try:
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
            # No bytecode cache (PYTHONDONTWRITEBYTECODE=1, no PYTHONPYCACHEPREFIX) costs ~40 ms of compiling.
            "PYTHONDONTWRITEBYTECODE": os.environ.get("PYTHONDONTWRITEBYTECODE", ""),
            "PYTHONPYCACHEPREFIX": os.environ.get("PYTHONPYCACHEPREFIX", ""),
        }
        print(json.dumps(result, indent=2))
    finally:
        shutil.rmtree(cache, ignore_errors=True)
        if args.fill and not args.keep and before == 0:
            subprocess.run(["scancel", "-u", os.environ.get("USER", "root")], check=False)  # noqa: S603, S607
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
