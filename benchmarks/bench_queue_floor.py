"""How fast `gpuq queue -o json` could be in CPython: a stripped pipeline that does only what the
command must do, beside the bare msgspec decode + encode that issue 8's goal ("≤ 2× the bare
figure") is measured against. Each in a fresh process, as `bench_cli.py` runs them.

    python benchmarks/bench_queue_floor.py benchmarks/out/big.json [runs]

The floor pipeline, each step the cheapest form found for it (see benchmarks/README.md):
- the file decoded by msgspec straight into the model's jobs, as a `Job` subclass that carries the
  four fields `queue -o json` adds, so the whole document is one `encode` call (no splice);
- `codec._sound`, the load-time checks every snapshot gets (`--no-checks` skips it here, to show
  that the checks are not what keeps the goal out of reach);
- per job the wait, the effective priority (one aging rate for every class: less than the
  command works out), the preemption counts, each set with `msgspec.structs.force_setattr`;
- the order: two stable sorts, by submit time then effective priority, as the command sorts;
- one encode of the document in queue order, written out.

It is no second implementation: it prints timings and nothing reads its output.
"""

from __future__ import annotations

import gc
import operator
import os
import statistics
import subprocess
import sys
import time
from typing import Any

import msgspec
from bench_cli import BARE  # (the same yardstick as bench_cli.py's)
from msgspec.structs import force_setattr

from gpuq.model import DAY_S, Job, JobState
from gpuq.model.codec import SnapshotDocument, _sound
from gpuq.timefmt import round_ms

STAGES = ("read+decode", "checks", "rows", "sorts", "encode+write")


class JobOut(Job, frozen=True, gc=False, omit_defaults=True, kw_only=True, rename={"job_class": "class"}):
    """A job with the four fields `queue -o json` adds: UNSET until set, then always written
    (null included), after the job's own fields."""

    wait_s: Any = msgspec.UNSET
    effective_priority: Any = msgspec.UNSET
    preemptions: Any = msgspec.UNSET
    preemptions_24h: Any = msgspec.UNSET


class DocumentOut(SnapshotDocument, frozen=True, gc=False):
    jobs: tuple[JobOut, ...] = ()


def floor_pipeline(path: str, checks: bool) -> None:
    """The stripped pipeline; prints each stage's seconds to stderr."""
    gc.disable()  # (as the command runs: nothing it builds is freed before it ends)
    t1 = time.perf_counter()
    with open(path, "rb") as stream:
        doc = msgspec.json.decode(stream.read(), type=DocumentOut)
    t2 = time.perf_counter()
    if checks and not _sound(doc):
        raise SystemExit(f"{path}: not a sound snapshot")
    t3 = time.perf_counter()
    now = doc.taken_at.timestamp()
    day_ago = now - DAY_S
    pending = JobState.PENDING
    max_wait, rate = 3600.0, 1.0
    rows: list[JobOut] = []
    append = rows.append
    for job in doc.jobs:
        since = job.eligible_time or job.submit_time
        start = job.start_time
        effective = float(job.priority)
        wait: float | None
        if start is not None:
            wait = max(0.0, (start - since).total_seconds())
        elif job.state is pending:
            waited = now - since.timestamp()
            if waited > max_wait:
                effective += rate * (waited - max_wait) / 60.0
            wait = waited if waited > 0 else 0.0
        else:
            wait = None
        times = job.preemption_times
        recent = sum(1 for t in times if day_ago < t.timestamp() <= now) if times else 0
        force_setattr(job, "wait_s", None if wait is None else round_ms(wait))
        force_setattr(job, "effective_priority", effective)
        force_setattr(job, "preemptions", len(times))
        force_setattr(job, "preemptions_24h", recent)
        append(job)
    t4 = time.perf_counter()
    rows.sort(key=operator.attrgetter("submit_time"))
    rows.sort(key=operator.attrgetter("effective_priority"), reverse=True)
    t5 = time.perf_counter()
    out = bytearray()
    msgspec.json.Encoder().encode_into({"cluster": doc.cluster, "taken_at": doc.taken_at, "jobs": rows}, out)
    out += b"\n"
    sys.stdout.buffer.write(out)
    sys.stdout.flush()
    t6 = time.perf_counter()
    marks = (t1, t2, t3, t4, t5, t6)
    print(" ".join(f"{(b - a):.3f}" for a, b in zip(marks, marks[1:], strict=False)), file=sys.stderr)
    os._exit(0)  # (as the command ends: without freeing what it built)


def _run(argv: list[str], runs: int) -> tuple[list[float], list[list[float]]]:
    times, stages = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        with open(os.devnull, "wb") as sink:
            done = subprocess.run(argv, stdout=sink, stderr=subprocess.PIPE, text=True, check=True)  # noqa: S603
        times.append(time.perf_counter() - t0)
        if done.stderr.strip():
            stages.append([float(x) for x in done.stderr.split()])
    return times, stages


def main(path: str, runs: int) -> None:
    bare, _ = _run([sys.executable, "-c", BARE, path], runs)
    base = statistics.median(bare)
    print(f"bare msgspec decode + encode (a fresh process): median {base:.2f} s")
    for label, flag in (("floor pipeline", "--checks"), ("floor pipeline without the load-time checks", "--no-checks")):
        times, stages = _run([sys.executable, __file__, "--child", flag, path], runs)
        median = statistics.median(times)
        parts = ", ".join(f"{name} {statistics.median(s[i] for s in stages):.3f}" for i, name in enumerate(STAGES))
        print(f"{label}: median {median:.2f} s, {median / base:.2f}x the bare figure ({parts})")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        floor_pipeline(sys.argv[3], checks=sys.argv[2] == "--checks")
    else:
        main(
            sys.argv[1] if len(sys.argv) > 1 else "benchmarks/out/big.json",
            int(sys.argv[2]) if len(sys.argv) > 2 else 5,
        )
