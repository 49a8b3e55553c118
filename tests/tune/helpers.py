"""Replay results made by hand, and a stand-in replay (a module-level function, so worker
processes can run it) whose figures follow from the point's parameters."""

from __future__ import annotations

from collections.abc import Sequence
from types import MappingProxyType

from gpuq.replay.model import ClassStats, ReplayConfig, ReplayResult, WaitStats
from gpuq.trace.record import TraceJob


def result(u: float = 0.5, mean_s: float = 0.0, per_job: float = 0.0, *, jobs: int = 10, p95_s: float | None = None,
           utilisation: float | None = None) -> ReplayResult:  # fmt: skip
    """A result with the three objectives given (useful utilisation, mean wait, preemptions per job)."""
    wait = WaitStats(count=jobs, mean_s=mean_s, p50_s=mean_s, p95_s=2 * mean_s if p95_s is None else p95_s,
                     p99_s=3 * mean_s, max_s=4 * mean_s)  # fmt: skip
    percentiles = tuple(mean_s * i / 50 for i in range(101))
    return ReplayResult(
        strategy="requeue", jobs=jobs, gpu_hours=100.0, utilisation=u + 0.05 if utilisation is None else utilisation,
        useful_utilisation=u, wait=wait,
        classes=MappingProxyType({"batch": ClassStats(wait, jobs, 0, 3600.0)}),
        preemptions=round(per_job * jobs), preemptions_per_job=per_job, preemptions_per_gpu_hour=per_job * jobs / 100,
        max_preemptions_per_job_day=1, lost_gpu_hours=per_job * 3, checkpoint_overhead_gpu_hours=0.5,
        makespan_s=86400.0, events=1000, sim_wall_s=0.01,
        utilisation_series=tuple((3600.0 * i, min(1.0, u * (1 + (i % 3) / 10))) for i in range(24)),
        wait_percentiles=MappingProxyType({"all": percentiles, "batch": percentiles}),
    )  # fmt: skip


def trace_jobs(count: int = 5) -> tuple[TraceJob, ...]:
    return tuple(TraceJob(id=str(i), submit_time=1_700_000_000.0 + 60 * i, duration_s=600.0, gpus=1 + i % 4,
                          job_class="batch") for i in range(count))  # fmt: skip


def fake_replay(jobs: Sequence[TraceJob], config: ReplayConfig) -> ReplayResult:
    """Figures that depend on the jobs and on every knob a test grids over (never on the clock)."""
    p = config.policy
    u = 0.4 + p.delta / 1000 - p.min_runtime_s / 1e5 + config.checkpoint.costs(p)[0] / 1e4
    mean = 100.0 * len(jobs) + p.delta * 3 + (config.checkpoint.interval_s or 0) / 10
    per_job = 1.0 / (1 + p.delta) + (0.1 if config.strategy is not None and config.strategy.value == "cancel" else 0)
    return result(u, mean, per_job, jobs=len(jobs))


def failing_replay(jobs: Sequence[TraceJob], config: ReplayConfig) -> ReplayResult:
    from gpuq.errors import BadInput

    raise BadInput(f"replay refused delta {config.policy.delta:g}")


def write_trace(path: str, count: int = 5) -> str:
    """A gpuq.jobs/v1 file of `trace_jobs(count)`."""
    from gpuq.trace.joblog import write_jobs

    with open(path, "w", encoding="utf-8") as out:
        write_jobs(trace_jobs(count), out)
    return path
