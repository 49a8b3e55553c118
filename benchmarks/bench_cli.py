"""End-to-end `gpuq queue -o json --snapshot big.json > /dev/null`: wall time and peak RSS, beside
a bare msgspec decode + encode of the same file in a fresh process (the yardstick of the goal
"queue -o json <= 2x a bare decode + encode").

    python benchmarks/bench_cli.py benchmarks/out/big.json [runs]

Measures; asserts nothing.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

BARE = """
import sys, msgspec
from gpuq.model.codec import SnapshotDocument
data = open(sys.argv[1], "rb").read()
sys.stdout.buffer.write(msgspec.json.encode(msgspec.json.decode(data, type=SnapshotDocument)))
"""


def _run(argv: list[str], runs: int) -> tuple[list[float], float]:
    times, peak_kib = [], 0
    for _ in range(runs):
        t0 = time.perf_counter()
        with open(os.devnull, "wb") as sink:
            subprocess.run(argv, stdout=sink, check=True)  # noqa: S603 - fixed argument list, no shell
        times.append(time.perf_counter() - t0)
        # ru_maxrss of children is the largest child so far (KiB on Linux).
        peak_kib = max(peak_kib, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    return times, peak_kib / 1024


def main(path: str, runs: int) -> None:
    gpuq = Path(sys.executable).with_name("gpuq")
    bare, _ = _run([sys.executable, "-c", BARE, path], runs)
    times, peak = _run([str(gpuq), "queue", "-o", "json", "--snapshot", path], runs)
    print(f"bare msgspec decode + encode (a fresh process): median {statistics.median(bare):.2f} s")
    print(f"gpuq queue -o json on {path}: median {statistics.median(times):.2f} s "
          f"(min {min(times):.2f}, max {max(times):.2f}), peak RSS {peak:.0f} MiB over {runs} runs; "
          f"{statistics.median(times) / statistics.median(bare):.2f}x the bare decode + encode")  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "benchmarks/out/big.json", int(sys.argv[2]) if len(sys.argv) > 2 else 3)
