"""Incident recordings: the size of an hour at 2 s refreshes of a 10,000-job cluster (goal < 50 MB),
the time each frame takes to write, to open a recording and seek, and to replay frame by frame.

    .venv/bin/python benchmarks/bench_recording.py            # 1,250 nodes x 8 GPUs, ~10,000 jobs, 1,800 frames
    .venv/bin/python benchmarks/bench_recording.py --quick    # 250 nodes, ~2,000 jobs, 150 frames

The cluster is gpuq's simulator (the demo's workload stream and policy) grown until about
`--jobs` jobs are queued or running (new arrivals are dropped past that, so it stays there), then
advanced 2 simulated seconds per frame. Two recordings are made of the same run: "simulated" as
the simulator leaves it, and "harsher", where on top of that 1% of the jobs change every frame
(a new `comment`), as a busier cluster would. Every 25th frame is checked to replay byte for byte.
No assertions: this prints measurements (benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import msgspec  # noqa: E402

from gpuq.backends.demo import DEMO_POLICY  # noqa: E402
from gpuq.backends.recording import Recording, RecordingWriter  # noqa: E402
from gpuq.model import Snapshot  # noqa: E402
from gpuq.model.codec import encode_snapshot  # noqa: E402
from gpuq.sim import NATIVE, ClusterSpec, Simulator, WorkloadStream  # noqa: E402

START = 1_800_000_000.0
CHECK_EVERY = 25


def grow(nodes: int, jobs: int, seed: int) -> Simulator:
    """A simulated cluster with about `jobs` jobs queued or running."""
    spec = ClusterSpec(nodes=nodes, gpus_per_node=8)
    # (~3,600 of 10,000 GPUs' worth of jobs run at once; the rest wait, up to the cap)
    sim = Simulator(policy=DEMO_POLICY, cluster=spec, stream=WorkloadStream(seed, spec, load=3.0), start=START,
                    max_pending=jobs, history_limit=500)  # fmt: skip
    while True:
        sim.run_until(sim.now + 600)
        live = len(sim.running) + sim.queued_count()
        if live >= jobs * 0.98 or sim.now - START > 48 * 3600:
            break
    if sim.max_pending is not None:
        sim.max_pending = max(0, jobs - len(sim.running))
    return sim


class Churn:
    """Changes `share` of the jobs in every frame (a new comment), on top of the simulator's own."""

    def __init__(self, share: float, seed: int) -> None:
        self.share = share
        self.rng = random.Random(seed)
        self.revision: dict[str, int] = {}

    def apply(self, snapshot: Snapshot) -> Snapshot:
        ids = [j.id for j in snapshot.jobs]
        for job_id in self.rng.sample(ids, max(1, int(len(ids) * self.share))):
            self.revision[job_id] = self.revision.get(job_id, 0) + 1
        replace, revision = msgspec.structs.replace, self.revision
        jobs = tuple(replace(j, comment=f"rev {revision[j.id]}") if j.id in revision else j for j in snapshot.jobs)
        return Snapshot(snapshot.cluster, snapshot.backend, snapshot.taken_at, snapshot.classes, snapshot.nodes, jobs,
                        snapshot.preemption_events)  # fmt: skip


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))]


def report(name: str, path: Path, writes: list[float], checks: dict[int, bytes], frames: int) -> None:
    size = path.stat().st_size
    recording = Recording.open(path)
    keys = recording.keyframes(recording.clusters[0])
    kinds = [0] * frames
    for i in keys:
        kinds[i] = 1
    print(f"\n{name}: {frames} frames, {len(keys)} keyframes, {size / 1e6:.1f} MB ({size / frames / 1e3:.1f} kB/frame)")
    ms = [w * 1e3 for w in writes]
    key_ms = [m for m, k in zip(ms, kinds, strict=True) if k]
    delta_ms = [m for m, k in zip(ms, kinds, strict=True) if not k]
    median = statistics.median
    print(f"  write per frame: mean {statistics.mean(ms):.1f} ms, median {median(ms):.1f}, p95 "
          f"{percentile(ms, 0.95):.1f}, max {max(ms):.1f}; deltas median {median(delta_ms or [0]):.1f} ms, "
          f"keyframes median {median(key_ms):.1f} ms")  # fmt: skip
    rng = random.Random(5)
    opens, seeks = [], []
    for index in [rng.randrange(frames) for _ in range(20)]:
        t0 = time.perf_counter()
        fresh = Recording.open(path)
        t1 = time.perf_counter()
        fresh.snapshot_at(fresh.clusters[0], index)
        t2 = time.perf_counter()
        opens.append((t1 - t0) * 1e3)
        seeks.append((t2 - t1) * 1e3)
    print(f"  open: median {statistics.median(opens):.1f} ms; then seek to a random frame: median "
          f"{statistics.median(seeks):.0f} ms, max {max(seeks):.0f} ms")  # fmt: skip
    fresh = Recording.open(path)
    cluster = fresh.clusters[0]
    steps = []
    mismatches = 0
    for index in range(frames):
        t0 = time.perf_counter()
        snapshot = fresh.snapshot_at(cluster, index)
        steps.append((time.perf_counter() - t0) * 1e3)
        if index in checks and encode_snapshot(snapshot) != checks[index]:
            mismatches += 1
    print(f"  sequential replay per frame: mean {statistics.mean(steps):.1f} ms, median "
          f"{statistics.median(steps):.1f}, p95 {percentile(steps, 0.95):.1f}; {len(checks)} frames checked byte "
          f"for byte, {mismatches} differ")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="250 nodes, ~2,000 jobs, 150 frames")
    parser.add_argument("--nodes", type=int, default=1250)
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--frames", type=int, default=1800)
    parser.add_argument("--step", type=float, default=2.0, help="simulated seconds per frame")
    parser.add_argument("--churn", type=float, default=0.01, help="share of jobs changed per frame (harsher case)")
    parser.add_argument("--keyframe-every", type=int, default=60)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, help="directory for the recordings (default: a temporary one)")
    args = parser.parse_args()
    if args.quick:
        args.nodes, args.jobs, args.frames = 250, 2000, 150
    print(f"simulator: {'compiled' if NATIVE else 'sources'}; {args.nodes} nodes x 8 GPUs, ~{args.jobs} jobs, "
          f"{args.frames} frames every {args.step:g} s, keyframe every {args.keyframe_every}")  # fmt: skip
    t0 = time.perf_counter()
    sim = grow(args.nodes, args.jobs, args.seed)
    first = sim.snapshot()
    queued = sum(1 for j in first.jobs if j.is_pending or j.holds_gpus)
    print(f"grown in {time.perf_counter() - t0:.0f} s: {len(first.jobs)} jobs in a snapshot ({queued} queued or "
          f"running), {len(first.preemption_events)} preemption events, {len(encode_snapshot(first)) / 1e6:.1f} MB "
          "as a snapshot file")  # fmt: skip
    out = args.out or Path(tempfile.mkdtemp(prefix="gpuq-bench-rec-"))
    plain = RecordingWriter(out / "simulated", "demo", keyframe_every=args.keyframe_every)
    harsh = RecordingWriter(out / "harsher", "demo", keyframe_every=args.keyframe_every)
    churn = Churn(args.churn, args.seed)
    writes: dict[str, list[float]] = {"simulated": [], "harsher": []}
    checks: dict[str, dict[int, bytes]] = {"simulated": {}, "harsher": {}}
    changed = 0
    previous = {j.id: j for j in first.jobs}
    for index in range(args.frames):
        sim.run_until(sim.now + args.step)
        snapshot = sim.snapshot()
        changed += sum(1 for j in snapshot.jobs if previous.get(j.id) != j)
        previous = {j.id: j for j in snapshot.jobs}
        for name, writer, snap in (("simulated", plain, snapshot), ("harsher", harsh, churn.apply(snapshot))):
            t = time.perf_counter()
            writer.add(snap)
            writes[name].append(time.perf_counter() - t)
            if index % CHECK_EVERY == 0:
                checks[name][index] = encode_snapshot(snap)
    plain.close()
    harsh.close()
    print(f"the simulator changed or added {changed / args.frames:.0f} jobs per frame on average")
    report("simulated", plain.path, writes["simulated"], checks["simulated"], args.frames)
    report(f"harsher (+{args.churn:.0%} of jobs changed per frame)", harsh.path, writes["harsher"], checks["harsher"],
           args.frames)  # fmt: skip
    print(f"\nrecordings in {out}")


if __name__ == "__main__":
    main()
