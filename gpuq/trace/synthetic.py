"""A generated trace of the shape public GPU-cluster traces have, for benchmarks and tests of
the preemption defaults (`benchmarks/bench_defaults.py`).

The shape of the public trace the defaults were judged on (15,802 jobs of 1–64 GPUs over 60
days, replayed on 640 GPUs): jobs ask for 1, 2, 4, 8, 16, 32 or 64 GPUs, mostly one
(`SIZES`); run times are log-normal (median 3.4 h, σ 1.5, at most 10 days) as such traces'
are; arrivals are Poisson at the rate that offers `load` × the cluster's GPUs; no job records
checkpoints (public traces do not); classes and priorities are drawn by the trace class rules
(`gpuq.trace.classes.assign_classes`), as `gpuq replay` draws them for a trace without any.

Deterministic: the same arguments give the same jobs.
"""

from __future__ import annotations

import math
import random
from typing import Final

from gpuq.trace.classes import assign_classes
from gpuq.trace.record import TraceJob

__all__ = ["SIZES", "public_shape"]

#: (GPUs, weight): most jobs ask for one GPU, a few for whole racks
SIZES: Final = ((1, 50), (2, 12), (4, 12), (8, 16), (16, 5), (32, 3), (64, 2))
_MEDIAN_S: Final = 3.4 * 3600.0
_SIGMA: Final = 1.5
_LONGEST_S: Final = 10 * 86400.0


def public_shape(count: int = 15_802, gpus: int = 640, *, load: float = 1.0, seed: int = 1,
                 origin: float = 1_700_000_000.0) -> list[TraceJob]:  # fmt: skip
    """`count` jobs whose GPU-time is `load` × `gpus` over their submit span (see above)."""
    rng = random.Random(seed)
    sizes, weights = zip(*SIZES, strict=True)
    mean_gpus = sum(s * w for s, w in SIZES) / sum(weights)
    # mean of the capped log-normal, near enough: the cap trims a tail of under 0.1%
    mean_run = _MEDIAN_S * math.exp(_SIGMA**2 / 2)
    gap = mean_gpus * mean_run / (load * gpus)
    jobs: list[TraceJob] = []
    t = origin
    for i in range(count):
        t += rng.expovariate(1.0 / gap)
        run = min(_LONGEST_S, max(60.0, rng.lognormvariate(math.log(_MEDIAN_S), _SIGMA)))
        size = rng.choices(sizes, weights)[0]
        jobs.append(TraceJob(f"j{i + 1}", round(t), round(run), size, user=f"u{i % 97}", tenant=f"vc{i % 11}"))
    return list(assign_classes(jobs, seed=seed))
