"""Seeded workloads for the simulated cluster: cluster shape, job classes and job streams.

Everything here is pure and deterministic for a seed (`random.Random(seed)`), and the endless
stream keeps its whole state in a JSON-able dict so the demo backend can persist it.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpuq.model import JobClass

__all__ = [
    "DEFAULT_CLASSES",
    "ClusterSpec",
    "JobSpec",
    "WorkloadStream",
    "generate_jobs",
    "one_gpu_jobs",
]

#: Five classes, one of them non-preemptible; SLA promises grow with the class's patience.
DEFAULT_CLASSES: tuple[JobClass, ...] = (
    JobClass("urgent", priority=1000, preemptible=False, target_p95_s=600.0, max_wait_s=1800.0),
    JobClass("high", priority=500, preemptible=True, target_p95_s=1800.0, max_wait_s=3600.0),
    JobClass("normal", priority=100, preemptible=True, target_p95_s=7200.0, max_wait_s=14400.0),
    JobClass("low", priority=10, preemptible=True, target_p95_s=28800.0, max_wait_s=43200.0),
    JobClass("batch", priority=1, preemptible=True, target_p95_s=86400.0, max_wait_s=86400.0),
)

_CLASS_WEIGHTS = {"urgent": 3, "high": 12, "normal": 45, "low": 25, "batch": 15}
_SIZES = (1, 2, 4, 8, 16)
_SIZE_WEIGHTS = (30, 20, 22, 22, 6)
_TENANTS: Mapping[str, tuple[str, ...]] = {
    "nlp": ("alice", "bob", "chen"),
    "vision": ("dana", "erik"),
    "speech": ("fatima", "gao"),
    "research": ("hana", "ivan", "jun"),
    "infra": ("kofi",),
}
_NAMES = ("train-llm", "finetune", "eval", "sweep", "pretrain", "distill", "embed", "rl-policy", "asr", "seg")
_CHECKPOINT_INTERVALS = (300.0, 600.0, 900.0, 1800.0)


@dataclass(frozen=True, slots=True)
class ClusterSpec:
    """Homogeneous nodes `gpu-001` … named with a zero-padded index."""

    nodes: int = 16
    gpus_per_node: int = 8
    gpu_model: str = "H100"
    prefix: str = "gpu-"

    def node_names(self) -> list[str]:
        width = max(3, len(str(self.nodes)))
        return [f"{self.prefix}{i:0{width}d}" for i in range(1, self.nodes + 1)]

    @property
    def total_gpus(self) -> int:
        return self.nodes * self.gpus_per_node

    def to_dict(self) -> dict[str, Any]:
        return {"nodes": self.nodes, "gpus_per_node": self.gpus_per_node, "gpu_model": self.gpu_model,
                "prefix": self.prefix}

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> ClusterSpec:
        return cls(int(raw["nodes"]), int(raw["gpus_per_node"]), str(raw["gpu_model"]), str(raw["prefix"]))


@dataclass(frozen=True, slots=True)
class JobSpec:
    """A job as submitted. `checkpoint_interval_s` set means the job reports its checkpoints."""

    id: str
    submit_time: float
    duration_s: float
    gpus: int = 1
    priority: int = 0
    job_class: str = "normal"
    name: str = "job"
    user: str = "user"
    tenant: str = "default"
    checkpoint_interval_s: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "submit_time": self.submit_time, "duration_s": self.duration_s, "gpus": self.gpus,
                "priority": self.priority, "job_class": self.job_class, "name": self.name, "user": self.user,
                "tenant": self.tenant, "checkpoint_interval_s": self.checkpoint_interval_s}

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> JobSpec:
        ckpt = raw.get("checkpoint_interval_s")
        return cls(
            id=str(raw["id"]), submit_time=float(raw["submit_time"]), duration_s=float(raw["duration_s"]),
            gpus=int(raw["gpus"]), priority=int(raw["priority"]), job_class=str(raw["job_class"]),
            name=str(raw["name"]), user=str(raw["user"]), tenant=str(raw["tenant"]),
            checkpoint_interval_s=None if ckpt is None else float(ckpt),
        )


def _pick(rng: random.Random, options: Sequence[Any], weights: Sequence[float]) -> Any:
    return rng.choices(options, weights=weights, k=1)[0]


def _class_priority(classes: Sequence[JobClass], name: str) -> int:
    for cls in classes:
        if cls.name == name:
            return cls.priority
    return 0


class WorkloadStream:
    """An endless multi-tenant job stream: Poisson arrivals, some arriving as sweeps of similar jobs.

    The mean offered load is `load` × the cluster's GPU capacity, so queues form in bursts and
    drain again. `next_batch(after)` draws the next arrival time and the jobs submitted then.
    """

    def __init__(
        self,
        seed: int,
        cluster: ClusterSpec,
        classes: Sequence[JobClass] = DEFAULT_CLASSES,
        *,
        load: float = 1.0,
        median_duration_s: float = 2400.0,
        next_id: int = 1000,
        daily_swing: float = 0.4,
        day_origin: float = 0.0,
    ) -> None:
        self.seed = seed
        self.daily_swing = daily_swing
        #: the moment the stream's day starts (its 00:00); 0.0 follows UTC's day
        self.day_origin = day_origin
        self.cluster = cluster
        self.classes = tuple(classes)
        self.load = load
        self.median_duration_s = median_duration_s
        self.next_id = next_id
        self.rng = random.Random(seed)
        names = [c.name for c in self.classes]
        self._class_names = names
        self._class_weights = [_CLASS_WEIGHTS.get(n, 10) for n in names]
        self._tenants = sorted(_TENANTS)
        # Mean GPU-seconds per submission decides the arrival rate for the asked load.
        # Sizes the cluster can ever run; 16 is a two-node job on the default 8-GPU nodes.
        fitting = [(s, w) for s, w in zip(_SIZES, _SIZE_WEIGHTS, strict=True) if s <= cluster.total_gpus]
        self._sizes = [s for s, _ in fitting]
        self._size_weights = [w for _, w in fitting]
        # Sweeps of 3..10 similar jobs (mean 6.5) come with 15% of the arrivals of jobs of <= 4 GPUs.
        per_arrival = sum(w * g * (1.0 + 0.15 * 5.5 * (g <= 4)) for g, w in fitting) / sum(self._size_weights)
        mean_duration = median_duration_s * math.exp(0.5)  # lognormal, sigma 1
        self._rate = load * cluster.total_gpus / (per_arrival * mean_duration)

    def _job(self, when: float, cls: str, user: str, tenant: str, name: str, gpus: int) -> JobSpec:
        rng = self.rng
        duration = min(8 * 3600.0, max(120.0, round(rng.lognormvariate(math.log(self.median_duration_s), 1.0))))
        ckpt = rng.choice(_CHECKPOINT_INTERVALS) if rng.random() < 0.6 else None
        priority = _class_priority(self.classes, cls) + rng.randrange(0, 20)
        job_id = str(self.next_id)
        self.next_id += 1
        return JobSpec(job_id, when, duration, gpus, priority, cls, name, user, tenant, ckpt)

    def _busy_factor(self, when: float) -> float:
        """Daily rhythm of submissions: from 1 − a at the day's 03:00 to 1 + a at its 15:00."""
        return 1.0 + self.daily_swing * math.sin(2 * math.pi * (((when - self.day_origin) % 86400.0) / 86400.0 - 0.375))

    def next_batch(self, after: float) -> tuple[float, list[JobSpec]]:
        """The next submission time (> `after`, whole seconds) and the jobs submitted then.

        Arrivals follow the daily rhythm (thinning a Poisson stream at the peak rate), so queues
        build up in the afternoon and drain at night.
        """
        rng = self.rng
        peak = self._rate * (1.0 + self.daily_swing)
        when = after
        while True:
            when += rng.expovariate(peak)
            if rng.random() * (1.0 + self.daily_swing) <= self._busy_factor(when):
                break
        when = float(math.floor(when) + 1)
        cls = _pick(rng, self._class_names, self._class_weights)
        tenant = rng.choice(self._tenants)
        user = rng.choice(_TENANTS[tenant])
        name = rng.choice(_NAMES)
        gpus = _pick(rng, self._sizes, self._size_weights)
        count = rng.randint(3, 10) if rng.random() < 0.15 and gpus <= 4 else 1
        return when, [self._job(when, cls, user, tenant, f"{name}-{k}" if count > 1 else name, gpus)
                      for k in range(count)]

    def to_dict(self) -> dict[str, Any]:
        version, internal, gauss = self.rng.getstate()
        return {"seed": self.seed, "load": self.load, "median_duration_s": self.median_duration_s,
                "daily_swing": self.daily_swing, "day_origin": self.day_origin, "next_id": self.next_id,
                "rng": [version, list(internal), gauss]}

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any], cluster: ClusterSpec, classes: Sequence[JobClass]) -> WorkloadStream:
        stream = cls(int(raw["seed"]), cluster, classes, load=float(raw["load"]),
                     median_duration_s=float(raw["median_duration_s"]), next_id=int(raw["next_id"]),
                     daily_swing=float(raw["daily_swing"]), day_origin=float(raw.get("day_origin", 0.0)))
        version, internal, gauss = raw["rng"]
        stream.rng.setstate((version, tuple(internal), gauss))
        return stream


def generate_jobs(
    seed: int,
    count: int,
    *,
    cluster: ClusterSpec | None = None,
    classes: Sequence[JobClass] = DEFAULT_CLASSES,
    start: float = 0.0,
    load: float = 1.0,
    median_duration_s: float = 2400.0,
    daily_swing: float = 0.0,
) -> list[JobSpec]:
    """A finite list of `count` jobs from the same stream the demo cluster uses."""
    stream = WorkloadStream(seed, cluster or ClusterSpec(), classes, load=load, median_duration_s=median_duration_s,
                            daily_swing=daily_swing)
    jobs: list[JobSpec] = []
    when = start
    while len(jobs) < count:
        when, batch = stream.next_batch(when)
        jobs.extend(batch)
    return jobs[:count]


def one_gpu_jobs(
    seed: int, count: int, *, submit_span_s: float, min_duration_s: int = 60, max_duration_s: int = 3600
) -> list[JobSpec]:
    """Single-GPU jobs with whole-second submit times and durations and priorities 0–100.

    The workload of the speed comparison with the seed's time-stepped demo.
    """
    rng = random.Random(seed)
    jobs = [
        JobSpec(
            id=str(i),
            submit_time=float(rng.randrange(0, int(submit_span_s))),
            duration_s=float(rng.randint(min_duration_s, max_duration_s)),
            priority=rng.randint(0, 100),
            job_class="batch",
        )
        for i in range(count)
    ]
    jobs.sort(key=lambda j: (j.submit_time, int(j.id)))
    return jobs
