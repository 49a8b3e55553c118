"""End-to-end `gpuq queue -o json --snapshot big.json > /dev/null`: wall time and peak RSS.

    python benchmarks/bench_cli.py benchmarks/out/big.json [runs]

Targets (issue 2): <= 3 s and <= 1 GiB peak RSS. Measures; asserts nothing.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path


def main(path: str, runs: int) -> None:
    gpuq = Path(sys.executable).with_name("gpuq")
    times, peaks = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        t0 = time.perf_counter()
        with open(os.devnull, "wb") as sink:
            argv = [str(gpuq), "queue", "-o", "json", "--snapshot", path]
            subprocess.run(argv, stdout=sink, check=True)  # noqa: S603 - fixed argument list, no shell
        times.append(time.perf_counter() - t0)
        # ru_maxrss of children is the largest child so far (KiB on Linux).
        peaks.append(max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024)
    print(f"gpuq queue -o json on {path}: median {statistics.median(times):.2f} s "
          f"(min {min(times):.2f}, max {max(times):.2f}), peak RSS {max(peaks):.0f} MiB over {runs} runs")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "benchmarks/out/big.json", int(sys.argv[2]) if len(sys.argv) > 2 else 3)
