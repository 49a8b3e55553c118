"""What a replay is asked to do (`ReplayConfig`) and what it reports (`ReplayResult`).

Shared by the replay itself, tuning (which varies a config over a grid) and the front ends
(which render a result). Plain frozen dataclasses: a result crosses process boundaries
(tuning's worker processes, a Slurm array task's result file) as `to_dict`/`from_dict`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from gpuq.model import JobClass
from gpuq.policy.config import DEFAULT_POLICY, Mode, Policy
from gpuq.policy.thrash import Thrash

__all__ = ["CheckpointModel", "ClassStats", "LogEntry", "ReplayConfig", "ReplayResult", "WaitStats"]


@dataclass(frozen=True, slots=True)
class CheckpointModel:
    """What checkpoints cost: `save_cost_s` per save (overhead on useful work), `restore_cost_s`
    per restart, each None for the policy's (`Policy.checkpoint_cost_s`, `restore_cost_s`); the
    interval per class (`class_intervals`), else `interval_s`, else the job's own recorded
    interval, else the policy's default; None/0 everywhere: the job saves nothing."""

    save_cost_s: float | None = None
    restore_cost_s: float | None = None
    interval_s: float | None = None
    class_intervals: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))

    def costs(self, policy: Policy) -> tuple[float, float]:
        """(save, restore) seconds: this model's, else the policy's."""
        save = policy.checkpoint_cost_s if self.save_cost_s is None else self.save_cost_s
        restore = policy.restore_cost_s if self.restore_cost_s is None else self.restore_cost_s
        return save, restore


@dataclass(frozen=True, slots=True)
class ReplayConfig:
    policy: Policy = DEFAULT_POLICY
    nodes: int = 64
    gpus_per_node: int = 8
    strategy: Mode | None = None  # None: the policy's own mode
    preemption: bool = True  # False: no job is ever preempted (plain priority/FIFO with backfill)
    checkpoint: CheckpointModel = CheckpointModel()
    seed: int = 0
    event_log: bool = False  # keep a per-job event log (`ReplayResult.log`)
    #: the job classes (None: the simulator's `DEFAULT_CLASSES`); a trace class not among them
    #: replays with the "normal" class's parameters under its own name
    classes: tuple[JobClass, ...] | None = None


@dataclass(frozen=True, slots=True)
class WaitStats:
    """Queue waits in seconds; percentiles are nearest-rank (policy-model.md, SLA)."""

    count: int = 0
    mean_s: float = 0.0
    p50_s: float = 0.0
    p95_s: float = 0.0
    p99_s: float = 0.0
    max_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"mean_s": self.mean_s, "p50_s": self.p50_s, "p95_s": self.p95_s, "p99_s": self.p99_s,
                "max_s": self.max_s, "count": self.count}  # fmt: skip

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> WaitStats:
        return cls(int(raw["count"]), float(raw["mean_s"]), float(raw["p50_s"]), float(raw["p95_s"]),
                   float(raw["p99_s"]), float(raw["max_s"]))  # fmt: skip


@dataclass(frozen=True, slots=True)
class ClassStats:
    wait: WaitStats
    jobs: int
    sla_breaches: int  # jobs whose wait exceeded the class's target_p95
    target_p95_s: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """The wait keys, then `sla_breaches`, `jobs` and `target_p95_s` (one flat object)."""
        return {**self.wait.to_dict(), "sla_breaches": self.sla_breaches, "jobs": self.jobs,
                "target_p95_s": self.target_p95_s}  # fmt: skip

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> ClassStats:
        target = raw.get("target_p95_s")
        return cls(WaitStats.from_dict(raw), int(raw["jobs"]), int(raw["sla_breaches"]),
                   None if target is None else float(target))  # fmt: skip


#: one step of the event log (`ReplayResult.log`): time, event, job id, other job, GPU-seconds lost
LogEntry = tuple[float, str, str, str | None, float]


def _log_entry(raw: Any) -> LogEntry:
    """A log entry back from `to_dict`; a result written before the loss was logged has four
    fields (its steps read as losing nothing)."""
    t, kind, job, other, *rest = raw
    return (float(t), str(kind), str(job), None if other is None else str(other), float(rest[0]) if rest else 0.0)


@dataclass(frozen=True, slots=True)
class ReplayResult:
    strategy: str
    jobs: int
    gpu_hours: float  # GPU-hours the trace's jobs needed (conserved through replay)
    utilisation: float  # busy GPU-time / (capacity × makespan)
    useful_utilisation: float  # the same without lost work and checkpoint overhead
    wait: WaitStats
    classes: Mapping[str, ClassStats]
    preemptions: int
    preemptions_per_job: float
    preemptions_per_gpu_hour: float
    max_preemptions_per_job_day: int
    lost_gpu_hours: float
    checkpoint_overhead_gpu_hours: float
    makespan_s: float
    events: int
    sim_wall_s: float
    #: Young/Daly: sqrt(2 × save cost × mean time between preemptions); None without either
    suggested_checkpoint_interval_s: float | None = None
    #: (time, event, job id, other job, GPU-seconds of work the step lost: a preemption, a
    #: cancel, a drain whose restore was cut short; 0.0 for the other steps)
    log: tuple[LogEntry, ...] = ()
    #: busy fraction of capacity per time bucket: ((seconds since the first submit, fraction), ...)
    utilisation_series: tuple[tuple[float, float], ...] = ()
    #: per class, and "all": the wait at each percentile 0, 1, …, 100 (101 values), for CDF charts
    wait_percentiles: Mapping[str, tuple[float, ...]] = field(default_factory=lambda: MappingProxyType({}))
    #: jobs a cancelling preemption killed (they never completed; their work counts as lost)
    cancelled: int = 0
    #: jobs still queued or running when the replay stopped at its horizon (`run.horizon`)
    unfinished: int = 0
    #: trace jobs that asked for no GPU, left out of the replay (not counted in `jobs`)
    skipped: int = 0
    #: trace jobs that never started and recorded no run time, left out (not counted in `jobs`)
    never_started: int = 0
    #: POSIX time of the trace's first submit: time 0 of the series and the event log
    origin_s: float = 0.0
    nodes: int = 0
    gpus_per_node: int = 0
    #: GPU-hours held by jobs (lost work and checkpoint overhead included) and left idle, over
    #: the makespan: together, the cluster's GPUs × makespan
    busy_gpu_hours: float = 0.0
    idle_gpu_hours: float = 0.0
    #: the thrash guard over the replay's preemptions (`gpuq.policy.thrash`); None: not judged
    thrash: Thrash | None = None

    def to_dict(self) -> dict[str, Any]:
        """The `gpuq replay -o json` document: the issue's keys first, then the model's others."""
        return {
            "jobs": self.jobs,
            "gpu_hours": self.gpu_hours,
            "utilisation": self.utilisation,
            "useful_utilisation": self.useful_utilisation,
            "wait": self.wait.to_dict(),
            "classes": {name: stats.to_dict() for name, stats in self.classes.items()},
            "preemptions": self.preemptions,
            "max_preemptions_per_job_day": self.max_preemptions_per_job_day,
            "lost_gpu_hours": self.lost_gpu_hours,
            "checkpoint_overhead_gpu_hours": self.checkpoint_overhead_gpu_hours,
            "makespan_s": self.makespan_s,
            "events": self.events,
            "sim_wall_s": self.sim_wall_s,
            "strategy": self.strategy,
            "preemptions_per_job": self.preemptions_per_job,
            "preemptions_per_gpu_hour": self.preemptions_per_gpu_hour,
            "suggested_checkpoint_interval_s": self.suggested_checkpoint_interval_s,
            "cancelled": self.cancelled,
            "unfinished": self.unfinished,
            "skipped": self.skipped,
            "never_started": self.never_started,
            "origin_s": self.origin_s,
            "nodes": self.nodes,
            "gpus_per_node": self.gpus_per_node,
            "busy_gpu_hours": self.busy_gpu_hours,
            "idle_gpu_hours": self.idle_gpu_hours,
            "thrash": None if self.thrash is None else self.thrash.to_dict(),
            "utilisation_series": [[t, u] for t, u in self.utilisation_series],
            "wait_percentiles": {name: list(values) for name, values in self.wait_percentiles.items()},
            "log": [list(entry) for entry in self.log],
        }

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> ReplayResult:
        """Back from `to_dict` (through JSON too): equal to the result it was made from."""
        suggested = raw.get("suggested_checkpoint_interval_s")
        return cls(
            strategy=str(raw["strategy"]),
            jobs=int(raw["jobs"]),
            gpu_hours=float(raw["gpu_hours"]),
            utilisation=float(raw["utilisation"]),
            useful_utilisation=float(raw["useful_utilisation"]),
            wait=WaitStats.from_dict(raw["wait"]),
            classes=MappingProxyType({str(n): ClassStats.from_dict(c) for n, c in raw["classes"].items()}),
            preemptions=int(raw["preemptions"]),
            preemptions_per_job=float(raw["preemptions_per_job"]),
            preemptions_per_gpu_hour=float(raw["preemptions_per_gpu_hour"]),
            max_preemptions_per_job_day=int(raw["max_preemptions_per_job_day"]),
            lost_gpu_hours=float(raw["lost_gpu_hours"]),
            checkpoint_overhead_gpu_hours=float(raw["checkpoint_overhead_gpu_hours"]),
            makespan_s=float(raw["makespan_s"]),
            events=int(raw["events"]),
            sim_wall_s=float(raw["sim_wall_s"]),
            suggested_checkpoint_interval_s=None if suggested is None else float(suggested),
            log=tuple(_log_entry(entry) for entry in raw.get("log", ())),
            utilisation_series=tuple((float(t), float(u)) for t, u in raw.get("utilisation_series", ())),
            wait_percentiles=MappingProxyType(
                {str(n): tuple(float(v) for v in values) for n, values in raw.get("wait_percentiles", {}).items()}
            ),
            cancelled=int(raw.get("cancelled", 0)),
            unfinished=int(raw.get("unfinished", 0)),
            skipped=int(raw.get("skipped", 0)),
            never_started=int(raw.get("never_started", 0)),
            origin_s=float(raw.get("origin_s", 0.0)),
            nodes=int(raw.get("nodes", 0)),
            gpus_per_node=int(raw.get("gpus_per_node", 0)),
            busy_gpu_hours=float(raw.get("busy_gpu_hours", 0.0)),
            idle_gpu_hours=float(raw.get("idle_gpu_hours", 0.0)),
            thrash=Thrash.from_dict(raw["thrash"]) if raw.get("thrash") is not None else None,
        )
