"""Time `gpuq --backend slurm queue -o json` end to end on the live lab, next to plain `squeue`.

    scripts/slurm-lab start && eval "$(scripts/slurm-lab env)"
    python benchmarks/bench_slurm_live.py [--fill 9500] [--runs 8] [--aged-runs 3] [--keep]
                                          [--holders 8 --detail-max 2] [--tree DIR ...] [--rounds N]

With ``--fill N`` it first submits held one-GPU-less ``sleep`` jobs (``sbatch -H``, 8 at a time)
until the queue has N jobs, and cancels them afterwards unless ``--keep``. The gpuq cache
(``$XDG_CACHE_HOME/gpuq``) is pointed at a fresh temporary directory, so the first call is a cold
one (config, sacctmgr and a full-window sacct read) and the later ones are what an operator's
repeated ``gpuq queue`` costs: within the history TTL (15 s) no slurmdbd round trip at all. Then
three kinds of aged calls, each made ``--aged-runs`` times from a copy of the cache file as the
repeated calls left it, with some of its timestamps moved back:

- ``aged_history``: the sacct read's ``fresh_at`` 1 h back (past ``history_ttl_s``; the read
  window itself is unchanged): an incremental sacct read is due;
- ``aged_config``: the preemption config's timestamps 90 s back (past ``config_ttl_s`` = 60 s,
  within ``config_max_age_s``): the config is due for a check (or, before that existed, a re-read);
- ``aged_both``: every timestamp in the file 65 s back: what an operator typing ``gpuq queue``
  once a minute gets (config and sacct window both past their TTLs).

Reports wall seconds per call (each a fresh process, as an operator runs it). ``--tree DIR``
(repeatable) times the ``gpuq`` package under DIR instead of the installed one (``PYTHONPATH=DIR``,
e.g. an unpacked older revision: ``git archive REV gpuq | tar -x -C DIR``); ``--rounds N`` runs
all phases N times, alternating the trees, so before/after figures share the machine's state.

The many-GPU-holders path (more jobs holding GPUs than the backend's ``detail_one_by_one_max``,
default 32: one full ``scontrol show job -d -o`` instead of one read per job) needs more GPU jobs
than the lab's 8 GPUs can run, so ``--detail-max N`` lowers the threshold for the timed calls
(``GPUQ_SLURM_DETAIL_ONE_BY_ONE_MAX=N`` in their environment) and ``--holders M`` first starts M
one-GPU ``sleep`` jobs (and waits for them to run). The first call then reads the details after
squeue (no hint yet); the repeated ones take the running jobs' indexes from the disk cache (kept
by job id and run) and read no details at all while those jobs keep running.
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
from typing import Any


def _wall(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, env=env, check=True)  # noqa: S603
    return time.perf_counter() - started


def _shift(node: object, keys: frozenset[str], by: float) -> None:
    """Move the timestamps named `keys` (anywhere in a decoded cache file) `by` seconds back."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in keys and isinstance(value, int | float) and not isinstance(value, bool):
                node[key] = value - by
            else:
                _shift(value, keys, by)
    elif isinstance(node, list):
        for item in node:
            _shift(item, keys, by)


#: The cache file's timestamps, by part (older layouts lack some: they are simply not there).
_CONFIG_TIMES = frozenset({"read_at", "checked_at"})
_HISTORY_TIMES = frozenset({"read_until", "fresh_at", "at"})


def _aged(pristine: dict[str, Any], phase: str) -> dict[str, Any]:
    data = json.loads(json.dumps(pristine))
    if phase == "aged_history":
        data["history"]["fresh_at"] -= 3600
    elif phase == "aged_config":
        _shift(data.get("config"), _CONFIG_TIMES, 90)
    else:  # aged_both: a minute later
        _shift(data.get("config"), _CONFIG_TIMES, 65)
        _shift(data.get("history"), _HISTORY_TIMES, 65)
    return data


def _phases(tree: str, base_env: dict[str, str], gpuq: str, runs: int, aged_runs: int) -> dict[str, Any]:
    cache = tempfile.mkdtemp(prefix="gpuq-bench-cache-")
    env = {**base_env, "XDG_CACHE_HOME": cache}
    if tree:
        env["PYTHONPATH"] = tree
    cmd = [gpuq, "--backend", "slurm", "queue", "-o", "json"]
    try:
        first = _wall(cmd, env)
        repeated = [_wall(cmd, env) for _ in range(runs)]
        (path,) = Path(cache, "gpuq").glob("slurm-*.json")
        pristine = json.loads(path.read_text())
        out: dict[str, Any] = {
            "gpuq_first_s": round(first, 3),
            "gpuq_repeated_s": [round(x, 3) for x in repeated],
            "gpuq_repeated_median_s": round(statistics.median(repeated), 3),
        }
        for phase in ("aged_history", "aged_config", "aged_both"):
            times = []
            for _ in range(aged_runs):
                path.write_text(json.dumps(_aged(pristine, phase)))
                times.append(_wall(cmd, env))
            out[f"gpuq_{phase}_s"] = [round(x, 3) for x in times]
            out[f"gpuq_{phase}_median_s"] = round(statistics.median(times), 3)
        return out
    finally:
        shutil.rmtree(cache, ignore_errors=True)


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
    ap.add_argument("--aged-runs", type=int, default=3, help="calls per aged phase (each from the same cache)")
    ap.add_argument("--tree", action="append", default=[], help="time the gpuq package under DIR (repeatable)")
    ap.add_argument("--rounds", type=int, default=1, help="run every phase this many times, alternating trees")
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
    if args.runs < 1 or args.aged_runs < 1 or args.rounds < 1:
        print("--runs, --aged-runs and --rounds must be 1 or more", file=sys.stderr)
        return 2
    for tree in args.tree:
        if not Path(tree, "gpuq", "__init__.py").is_file():
            print(f"--tree {tree}: no gpuq package there", file=sys.stderr)
            return 2
    gpuq = str(Path(sys.executable).with_name("gpuq"))
    env = dict(os.environ)
    if args.detail_max is not None:
        env["GPUQ_SLURM_DETAIL_ONE_BY_ONE_MAX"] = str(args.detail_max)
    trees = args.tree or [""]
    before = _queue_len()
    holders: list[str] = []
    try:
        if args.holders:
            holders = _start_holders(args.holders)
        if args.fill:
            _fill(args.fill)
        jobs = _queue_len()
        squeue = [_wall(["squeue"], env) for _ in range(5)]
        rounds: dict[str, list[dict[str, Any]]] = {tree or "installed": [] for tree in trees}
        for _ in range(args.rounds):
            for tree in trees:
                rounds[tree or "installed"].append(_phases(tree, env, gpuq, args.runs, args.aged_runs))
        result: dict[str, Any] = {
            "jobs_in_queue": jobs,
            "squeue_s": round(statistics.median(squeue), 3),
            "gpu_holders_started": len(holders),
            "GPUQ_SLURM_DETAIL_ONE_BY_ONE_MAX": env.get("GPUQ_SLURM_DETAIL_ONE_BY_ONE_MAX", ""),
            # No bytecode cache (PYTHONDONTWRITEBYTECODE=1, no PYTHONPYCACHEPREFIX) costs ~40 ms of compiling.
            "PYTHONDONTWRITEBYTECODE": os.environ.get("PYTHONDONTWRITEBYTECODE", ""),
            "PYTHONPYCACHEPREFIX": os.environ.get("PYTHONPYCACHEPREFIX", ""),
        }
        if len(rounds) == 1 and args.rounds == 1:
            result.update(next(iter(rounds.values()))[0])
        else:
            result["rounds"] = rounds
        print(json.dumps(result, indent=2))
    finally:
        if holders and not args.keep:
            subprocess.run(["scancel", *holders], check=False)  # noqa: S603, S607
        if args.fill and not args.keep and before == 0:
            subprocess.run(["scancel", "-u", os.environ.get("USER", "root")], check=False)  # noqa: S603, S607
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
