"""Trace readers: jobs/s and peak RSS reading a generated 1,000,000-job `gpuq.jobs/v1` file and
a 1,000,000-row Helios `cluster_log.csv`, each read in a fresh process (so the peak RSS is that
read's alone).

    python benchmarks/bench_trace.py [jobs]      # default 1,000,000; files go to benchmarks/out/

Measures; asserts nothing.
"""

from __future__ import annotations

import random
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from gpuq.trace import TraceJob
from gpuq.trace.joblog import write_jobs
from gpuq.trace.presets import HELIOS_COLUMNS

OUT = Path(__file__).resolve().parent / "out"

READ = """
import resource, sys, time
from gpuq.service.tracing import open_trace
t0, c0 = time.perf_counter(), time.process_time()
n = sum(1 for _ in open_trace(sys.argv[1]))
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
print(n, wall, cpu, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def _jobs(count: int) -> Iterator[TraceJob]:
    rng = random.Random(1)
    t = 1_700_000_000.0
    for i in range(count):
        t += rng.expovariate(1 / 3.0)
        wait = rng.expovariate(1 / 600.0)
        run = rng.expovariate(1 / 2400.0)
        yield TraceJob(f"{i}", round(t, 3), round(run, 3), rng.choice((1, 1, 2, 4, 8, 16)), user=f"u{i % 97}",
                       tenant=f"vc{i % 13}", start_time=round(t + wait, 3), end_time=round(t + wait + run, 3),
                       state="COMPLETED")  # fmt: skip


def _stamp(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M:%S")


def generate(count: int) -> tuple[Path, Path]:
    OUT.mkdir(exist_ok=True)
    joblog, helios = OUT / f"trace-{count}.jsonl", OUT / f"helios-{count}.csv"
    if not joblog.exists():
        with joblog.open("w") as out:
            write_jobs(_jobs(count), out, {"source": "bench_trace"})
    if not helios.exists():
        with helios.open("w") as out:
            out.write(",".join(HELIOS_COLUMNS) + "\n")
            for job in _jobs(count):
                start, end = job.start_time or 0.0, job.end_time or 0.0
                times = f"{_stamp(job.submit_time)},{_stamp(start)},{_stamp(end)}"
                spans = f"{int(end - start)},{int(start - job.submit_time)}"
                out.write(f"{job.id},{job.user},{job.tenant},{job.gpus},4,1,{job.state},{times},{spans}\n")
    return joblog, helios


def measure(path: Path) -> None:
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", READ, str(path)], capture_output=True, text=True, check=True)  # noqa: S603
    total = time.perf_counter() - t0
    count, wall, cpu, rss_kib = done.stdout.split()
    jobs, size = int(count), path.stat().st_size / 2**20
    # CPU time as well as wall time: on a shared machine the wall clock also counts other work
    print(f"{path.name}: {jobs:,} jobs ({size:.0f} MiB): {float(wall):.2f} s wall = {jobs / float(wall):,.0f} jobs/s; "
          f"{float(cpu):.2f} s CPU = {jobs / float(cpu):,.0f} jobs/CPU-s; peak RSS {int(rss_kib) / 1024:.0f} MiB; "
          f"process {total:.2f} s")  # fmt: skip


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    for path in generate(count):
        measure(path)


if __name__ == "__main__":
    main()
