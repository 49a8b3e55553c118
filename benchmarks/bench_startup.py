"""What an operator waits for on a small cluster: each read command as a fresh
process on `tests/fixtures/snapshots/small.json` (a handful of jobs), stdout to /dev/null, private
XDG directories. Nearly all of it is the interpreter starting and gpuq's imports. Alongside, the
interpreter alone (`python -c pass`) as the floor.

    python benchmarks/bench_startup.py [--runs 9] [--tree DIR ...]

`--tree DIR` times the gpuq package under DIR instead of the installed one (repeatable, e.g. a
`git archive` of the previous commit beside the working tree); the trees take turns run by run, so
a VM that slows down for a while slows them alike. Measures; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SMALL = ROOT / "tests" / "fixtures" / "snapshots" / "small.json"

#: (label, gpuq's arguments after `--snapshot SMALL`)
COMMANDS = [
    ("queue -o json", ["queue", "-o", "json"]),
    ("queue", ["queue"]),
    ("gpus", ["gpus"]),
    ("sla", ["sla"]),
    ("overview", ["overview"]),
    ("job 201", ["job", "201"]),
    ("preview 201", ["preview", "201"]),
]

#: gpuq's console-script entry, run the way the installed `gpuq` runs it
_ENTRY = "import sys; from gpuq.cli.main import main; sys.exit(main())"


def _once(argv: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    with open(os.devnull, "wb") as sink:
        subprocess.run(argv, stdout=sink, stderr=subprocess.DEVNULL, check=True, env=env)  # noqa: S603 - fixed list
    return time.perf_counter() - t0


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--tree", action="append", default=[], help="time the gpuq package under DIR")
    args = parser.parse_args(argv)
    for tree in args.tree:
        if not Path(tree, "gpuq", "__init__.py").is_file():
            parser.error(f"--tree {tree}: no gpuq package there")
    trees = args.tree or [""]
    with tempfile.TemporaryDirectory() as home:
        base = {**os.environ, "COLUMNS": "120", "XDG_CONFIG_HOME": f"{home}/config", "XDG_STATE_HOME": f"{home}/state",
                "XDG_CACHE_HOME": f"{home}/cache"}  # fmt: skip
        floor = [_once([sys.executable, "-c", "pass"], base) for _ in range(args.runs)]
        print(f"python -c pass: median {statistics.median(floor) * 1000:.0f} ms")
        for label, rest in COMMANDS:
            times: dict[str, list[float]] = {tree: [] for tree in trees}
            for _ in range(args.runs):
                for tree in trees:
                    env = {**base, "PYTHONPATH": tree} if tree else base
                    times[tree].append(_once([sys.executable, "-c", _ENTRY, "--snapshot", str(SMALL), *rest], env))
            for tree in trees:
                got = times[tree]
                print(f"gpuq {label}{f' [{tree}]' if tree else ''}: median {statistics.median(got) * 1000:.0f} ms "
                      f"(min {min(got) * 1000:.0f}, max {max(got) * 1000:.0f}) over {args.runs} runs")  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1:])
