"""Slurm accounting readers (`gpuq.backends.slurm.trace`): records/s and peak RSS reading a
generated ``sacct --parsable2`` file of `TRACE_FIELDS` (default 1,000,000 rows, every 50th job
requeued once so its runs are merged) and a ``sacct --json`` file (default 100,000 jobs, each a
copy of a real 22.05 job object, steps included), each read in a fresh process.

    python benchmarks/bench_trace_export.py [rows] [json_jobs]   # files go to benchmarks/out/

Measures; asserts nothing.
"""

from __future__ import annotations

import copy
import json
import random
import subprocess
import sys
from datetime import datetime
from pathlib import Path

from gpuq.backends.slurm.trace import TRACE_FIELDS

OUT = Path(__file__).resolve().parent / "out"
SAMPLE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "slurm" / "22.05" / "sacct.json"

READ = """
import resource, sys, time
from gpuq.backends.slurm.trace import read_sacct_json, read_sacct_parsable
read = read_sacct_json if sys.argv[1].endswith(".json") else read_sacct_parsable
t0 = time.perf_counter()
n = sum(1 for _ in read(sys.argv[1]))
print(n, time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def _stamp(t: float) -> str:
    return datetime.fromtimestamp(t).strftime("%Y-%m-%dT%H:%M:%S")


def write_parsable(path: Path, rows: int) -> None:
    rng = random.Random(1)
    t = 1_795_000_000.0
    held: list[str] = []
    with path.open("w") as out:
        out.write("|".join(TRACE_FIELDS) + "\n")
        for i in range(1, rows + 1):
            t += rng.expovariate(1 / 3.0)
            start = t + rng.expovariate(1 / 600.0)
            run = int(rng.expovariate(1 / 2400.0))
            tres = f"billing=1,cpu=1,gres/gpu={rng.choice((1, 1, 2, 4, 8))},mem=1000M,node=1"
            state = "PREEMPTED" if i % 50 == 0 else "COMPLETED"
            line = (f"{i}|{i}|job{i % 97}|u{i % 13}|acct{i % 5}|gpu|{rng.choice(('low', 'normal', 'urgent'))}|"
                    f"{rng.randint(1, 100_000)}|{state}|{_stamp(t)}|{_stamp(t)}|{_stamp(start)}|"
                    f"{_stamp(start + run)}|{run}|{tres}|{tres}\n")  # fmt: skip
            out.write(line)
            if state == "PREEMPTED":  # its second run comes a few records later
                held.append(line.replace("PREEMPTED", "COMPLETED"))
            if len(held) > 3:
                out.write(held.pop(0))
        out.writelines(held)


def write_json(path: Path, jobs: int) -> None:
    doc = json.loads(SAMPLE.read_text())
    template = doc["jobs"][0]
    with path.open("w") as out:
        out.write('{"meta": ' + json.dumps(doc["meta"]) + ', "errors": [], "jobs": [\n')
        for i in range(jobs):
            job = copy.deepcopy(template)
            job["job_id"] = 1000 + i
            for key in ("submission", "eligible", "start", "end"):
                job["time"][key] += 3 * i
            out.write(("," if i else "") + json.dumps(job, indent=2) + "\n")
        out.write("]}\n")


def main(rows: int, json_jobs: int) -> None:
    OUT.mkdir(exist_ok=True)
    for name, write, count in (("sacct-trace.txt", write_parsable, rows), ("sacct-trace.json", write_json, json_jobs)):
        path = OUT / name
        write(path, count)
        size = path.stat().st_size / 2**20
        got = subprocess.run([sys.executable, "-c", READ, str(path)], capture_output=True, text=True, check=True)  # noqa: S603
        n, wall, rss = got.stdout.split()
        rate, speed = int(n) / float(wall), size / float(wall)
        print(f"{name}: {count:,} jobs written ({size:,.0f} MiB), {int(n):,} read in {float(wall):.1f} s = "
              f"{rate:,.0f} jobs/s, {speed:.0f} MiB/s, peak RSS {int(rss) / 1024:.0f} MiB")  # fmt: skip


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000, int(sys.argv[2]) if len(sys.argv) > 2 else 100_000)
