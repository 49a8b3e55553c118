"""Slurm read-path parsing at scale (measures; asserts nothing).

    python benchmarks/bench_slurm_parse.py [JOBS]        (default 200,000)

Builds the equivalent of a JOBS-job queue by replicating the real 22.05 records kept in
tests/fixtures/slurm/22.05/live/ (fresh job ids per copy), then times, in a fresh process each:
- the chosen live path: ``squeue --Format`` lines + ``scontrol show job -d -o`` detail lines for
  the GPU-holding jobs, plus ``sacct -P`` history;
- ``squeue --json`` (22.05 shape) for comparison, at a tenth of JOBS (it needs ~10x the memory).
The inputs are built in a separate process and read back from files, as CLI output would be.
Prints seconds and peak RSS (target for JOBS=200,000: <= 3 s and <= 1 GiB).
"""

from __future__ import annotations

import gc
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LIVE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "slurm" / "22.05" / "live"
DELIM = "\x1f"


def build_text(jobs: int) -> tuple[str, str, str]:
    lines = [line for line in (LIVE / "squeue-format.txt").read_text().splitlines() if line]
    detail = {
        line.split(" ", 1)[0][6:]: line
        for line in (LIVE / "scontrol-show-job-d-o.txt").read_text().splitlines()
        if line.startswith("JobId=")
    }
    acct = [line for line in (LIVE / "sacct-parsable.txt").read_text().splitlines() if line]
    squeue: list[str] = []
    scontrol: list[str] = []
    sacct: list[str] = []
    copy = 0
    while len(squeue) < jobs:
        base = 1_000_000 + copy * 1000
        for line in lines:
            f = line.split(DELIM)
            raw = f[0]
            new = str(base + int(raw))
            f[0] = new
            for i in (1, 3):  # array / het parent ids
                if f[i].isdigit():
                    f[i] = str(base + int(f[i]))
            squeue.append(DELIM.join(f))
            if raw in detail and "IDX:" in detail[raw]:
                scontrol.append(detail[raw].replace(f"JobId={raw} ", f"JobId={new} ", 1))
            if len(squeue) >= jobs:
                break
        for line in acct:
            f = line.split("|")
            f[0] = f"{copy}x{f[0]}"
            sacct.append("|".join(f))
        copy += 1
    return "\n".join(squeue), "\n".join(scontrol), "\n".join(sacct[:jobs])


def child(kind: str, jobs: int, workdir: str) -> None:
    # As `gpuq` itself runs commands: the cyclic GC is off (gpuq.cli.main.main), since the parsers
    # build hundreds of thousands of acyclic objects that it would rescan again and again.
    gc.disable()
    work = Path(workdir)
    if kind == "build":
        for name, text in zip(("squeue", "scontrol", "sacct"), build_text(jobs), strict=True):
            (work / name).write_text(text)
        return
    if kind == "text":
        from gpuq.backends.slurm.sacct import parse_sacct_parsable
        from gpuq.backends.slurm.text import parse_scontrol_detail, parse_squeue_format

        squeue, scontrol, sacct = ((work / n).read_text() for n in ("squeue", "scontrol", "sacct"))
        t0 = time.perf_counter()
        # The live path with many GPU-holding jobs: one detail read, then one squeue pass.
        read = parse_squeue_format(squeue, "qos", parse_scontrol_detail(scontrol))
        t1 = time.perf_counter()
        records = parse_sacct_parsable(sacct)
        t2 = time.perf_counter()
        took = t2 - t0
        count = len(read.jobs)
        holding = sum(1 for j in read.jobs if j.holds_gpus)
        extra = (
            f"queue {t1 - t0:.2f} s ({holding:,} holding GPUs) + history {t2 - t1:.2f} s ({len(records):,} sacct rows)"
        )
    else:
        from gpuq.backends.slurm.jsonread import load_json, parse_jobs_json

        sample = json.loads((LIVE / "squeue.json").read_text())
        template = sample["jobs"]
        out = []
        copy = 0
        while len(out) < jobs:
            for job in template:
                clone = dict(job)
                clone["job_id"] = 1_000_000 + copy * 1000 + job["job_id"]
                out.append(clone)
            copy += 1
        sample["jobs"] = out[:jobs]
        text = json.dumps(sample)
        del out, template
        t0 = time.perf_counter()
        data, _ = load_json(text, "squeue --json")
        count = len(parse_jobs_json(data, "qos").jobs)
        took = time.perf_counter() - t0
        extra = f"{len(text) / 1e6:.0f} MB of JSON"
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{kind:5} {count:>8,} jobs  parse {took:6.2f} s  peak RSS {rss:7.0f} MiB  ({extra})")


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(sys.argv[2], int(sys.argv[3]), sys.argv[4])
        return
    jobs = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    with tempfile.TemporaryDirectory() as work:
        for kind, n in (("build", jobs), ("text", jobs), ("json", max(1, jobs // 10))):
            subprocess.run([sys.executable, __file__, "--child", kind, str(n), work], check=True)  # noqa: S603


if __name__ == "__main__":
    main()
