"""Table rendering at scale: `gpuq gpus` on 10,000 nodes and `gpuq queue` as a table of 10,000 rows,
each a fresh process with its stdout to /dev/null (`COLUMNS=200`, as in a pipe), beside `-o json`
of the same command on the same file (the yardstick: decoding, views, no table).

    python benchmarks/bench_tables.py [--runs 3] [--out benchmarks/out] [--nodes 10000] [--rows 10000]
                                      [--tree DIR ...]

`--tree DIR` times the gpuq package under DIR instead of the installed one (repeatable, e.g. a
`git archive` of the previous commit beside the working tree), each case timed under each tree in turn.

The snapshots come from gen_big_snapshot.generate, checked and written by gpuq.model's codec:
`tables-gpus.json` (N nodes x 8 GPUs, every GPU busy, no pending jobs) and `tables-queue.json`
(ROWS jobs: ROWS/10 nodes' running jobs, the rest pending). Measures; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen_big_snapshot import generate  # noqa: E402 - a sibling script, found through sys.path

from gpuq.model.codec import decode_snapshot, encode_snapshot  # noqa: E402


def _write(path: Path, nodes: int, jobs: int) -> None:
    doc = generate(nodes, jobs, seed=7)
    # Through the model: the file is what gpuq itself writes, and a generator bug fails here.
    path.write_bytes(encode_snapshot(decode_snapshot(json.dumps(doc), str(path))))


def _time(argv: list[str], runs: int, tree: str) -> list[float]:
    env = {**os.environ, "COLUMNS": "200"}
    if tree:
        env["PYTHONPATH"] = tree
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        with open(os.devnull, "wb") as sink:
            subprocess.run(argv, stdout=sink, check=True, env=env)  # noqa: S603 - fixed argument list, no shell
        times.append(time.perf_counter() - t0)
    return times


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", default="benchmarks/out")
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--tree", action="append", default=[], help="time the gpuq package under DIR")
    args = parser.parse_args(argv)
    for tree in args.tree:
        if not Path(tree, "gpuq", "__init__.py").is_file():
            parser.error(f"--tree {tree}: no gpuq package there")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    grid, queue = out / "tables-gpus.json", out / "tables-queue.json"
    # Every GPU busy: about 2.9 running jobs per node; no pending jobs beyond them.
    _write(grid, args.nodes, 0)
    _write(queue, max(1, args.rows // 30), args.rows)
    gpuq = str(Path(sys.executable).with_name("gpuq"))
    cases = [
        (f"gpuq gpus, {args.nodes} nodes", [gpuq, "gpus", "--snapshot", str(grid)]),
        (f"gpuq queue, {args.rows} rows", [gpuq, "queue", "--limit", "0", "--snapshot", str(queue)]),
    ]
    for label, command in cases:
        for output in ("table", "json"):
            for tree in args.tree or [""]:
                times = _time([*command, "-o", output], args.runs, tree)
                print(f"{label}, -o {output}{f' [{tree}]' if tree else ''}: median {statistics.median(times):.2f} s "
                      f"(min {min(times):.2f}, max {max(times):.2f}) over {args.runs} runs")  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1:])
