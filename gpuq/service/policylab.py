"""The policy lab for front ends: one trace (or the built-in workload) replayed under the three
preemption strategies side by side, re-run whenever the operator moves one of the lab's settings.

- **Settings** (`LabSettings`): Δ, the grace period, the checkpoint interval and the SLA limit
  (the four the operator moves with keys, each through a fixed list of stops: `STOPS`), the
  checkpoint costs and the cluster's shape. The SLA limit is a *factor* on every class's
  `target_p95` (what SLA breaches are counted against) and `max_wait` (when aging starts): ×1 is
  the policy as configured, ×2 promises twice as long a wait and ages twice as late.
  The checkpoint interval is every job's (the trace's own intervals are overridden so that the
  setting means one thing); 0 means the jobs save nothing.
- **Policy**: the cluster's own (`Cluster.policy`) or gpuq's defaults, with the four settings put
  in; everything else of it (minimum runtime, daily cap, aging rates, victim weights) as it is.
- **Workload** (`builtin_trace`): a seeded stream from the demo's workload generator
  (`gpuq.sim.workload`), sized so that the three strategies re-simulate in a fraction of a second
  (benchmarks/bench_lab.py) with preemptions happening; or a trace (`load_trace`), of which the
  lab keeps at most `MAX_LAB_JOBS` jobs (the rest is for `gpuq replay`).
- **Running** (`run_lab`): `gpuq.replay.run.compare` with the event log on; `Lab` keeps the
  results by settings, so going back to a setting already seen shows at once.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import islice
from types import MappingProxyType
from typing import TYPE_CHECKING, Final

from gpuq.errors import BadInput
from gpuq.model import JobClass
from gpuq.policy.config import DEFAULT_POLICY, ClassPolicy, Mode, Policy
from gpuq.service.tracing import TraceJob, open_trace
from gpuq.textsafe import visible

if TYPE_CHECKING:  # (the replay and the simulator are loaded when the lab first runs, not with the console)
    from gpuq.replay.model import ReplayConfig, ReplayResult

__all__ = [
    "BUILTIN_JOBS",
    "BUILTIN_SEED",
    "DEFAULT_GPUS_PER_NODE",
    "DEFAULT_NODES",
    "KNOBS",
    "MAX_LAB_JOBS",
    "STOPS",
    "STRATEGIES",
    "Lab",
    "LabResult",
    "LabSettings",
    "LabTrace",
    "TraceRequest",
    "builtin_trace",
    "lab_classes",
    "lab_config",
    "load_trace",
    "parse_lab_command",
    "parse_shape",
    "run_lab",
]

#: the strategies the lab compares, in its columns' order
STRATEGIES: Final = ("cancel", "requeue", "graceful")
#: the settings the operator moves with keys
KNOBS: Final = ("delta", "grace", "checkpoint", "sla")
#: each knob's stops, low to high (a value between two stops moves to the next one)
STOPS: Final[Mapping[str, tuple[float, ...]]] = MappingProxyType({
    "delta": (0.0, 10.0, 25.0, 50.0, 100.0, 200.0, 300.0, 500.0, 1000.0),
    "grace": (0.0, 30.0, 60.0, 120.0, 300.0, 600.0, 900.0, 1800.0),
    "checkpoint": (0.0, 300.0, 600.0, 900.0, 1200.0, 1800.0, 2700.0, 3600.0, 7200.0),
    "sla": (0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0),
})  # fmt: skip
#: the built-in workload: the demo's stream, this seed, this many jobs, on the default shape
BUILTIN_SEED: Final = 12
BUILTIN_JOBS: Final = 2_000
_BUILTIN_LOAD, _BUILTIN_SWING = 0.9, 0.4
#: the lab's cluster unless told otherwise
DEFAULT_NODES: Final = 16
DEFAULT_GPUS_PER_NODE: Final = 8
#: the most jobs of a trace the lab reads (its first, in file order)
MAX_LAB_JOBS: Final = 20_000
#: settings whose results a `Lab` keeps
_CACHED: Final = 64


@dataclass(frozen=True, slots=True)
class LabSettings:
    """What the lab replays under (see the module docstring); hashable: the cache's key."""

    delta: float = 100.0
    grace_period_s: float = 300.0
    checkpoint_interval_s: float = 1800.0  # every job's; 0: nothing is saved
    sla_factor: float = 1.0  # × every class's target_p95 and max_wait
    nodes: int = DEFAULT_NODES
    gpus_per_node: int = DEFAULT_GPUS_PER_NODE
    checkpoint_cost_s: float = 60.0  # a save's time, overhead on every job that saves
    restore_cost_s: float = 120.0  # a restart's restore from saved progress

    def value(self, knob: str) -> float:
        return {"delta": self.delta, "grace": self.grace_period_s, "checkpoint": self.checkpoint_interval_s,
                "sla": self.sla_factor}[knob]  # fmt: skip

    def with_value(self, knob: str, value: float) -> LabSettings:
        if knob == "delta":
            return replace(self, delta=value)
        if knob == "grace":
            return replace(self, grace_period_s=value)
        if knob == "checkpoint":
            return replace(self, checkpoint_interval_s=value)
        if knob == "sla":
            return replace(self, sla_factor=value)
        raise KeyError(knob)

    def stepped(self, knob: str, steps: int) -> LabSettings:
        """The setting moved `steps` stops up (negative: down), held at the first and last stop."""
        stops = STOPS[knob]
        current = self.value(knob)
        if steps > 0:
            higher = [s for s in stops if s > current]
            target = higher[min(steps, len(higher)) - 1] if higher else current
        elif steps < 0:
            lower = [s for s in stops if s < current]
            target = lower[max(steps, -len(lower))] if lower else current
        else:
            target = current
        return self.with_value(knob, target)


@dataclass(frozen=True, slots=True, eq=False)
class LabTrace:
    """The jobs the lab replays and what to call them; compared by identity (a cache key)."""

    name: str
    jobs: tuple[TraceJob, ...]
    #: the trace had more jobs than the lab reads (`MAX_LAB_JOBS`): only its first are here
    truncated: bool = False
    by_id: Mapping[str, TraceJob] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, name: str, jobs: Iterable[TraceJob], truncated: bool = False) -> LabTrace:
        kept = tuple(jobs)
        return cls(name, kept, truncated, MappingProxyType({j.id: j for j in kept}))


@dataclass(frozen=True, slots=True)
class TraceRequest:
    """A trace to open for the lab: `open_trace`'s arguments (None path: the built-in workload)."""

    path: str | None = None
    preset: str | None = None
    shape: str | None = None  # NODESxGPUS for the lab's cluster; None: as it is


@dataclass(frozen=True, slots=True)
class LabResult:
    trace: LabTrace
    settings: LabSettings
    #: one per strategy, in `STRATEGIES` order, each with its event log
    results: tuple[ReplayResult, ...]
    #: the replays' own wall time (seconds), the trace's conversion included
    wall_s: float

    def result(self, strategy: str) -> ReplayResult:
        return self.results[STRATEGIES.index(strategy)]


def builtin_trace(seed: int = BUILTIN_SEED, count: int = BUILTIN_JOBS, *, nodes: int = DEFAULT_NODES,
                  gpus_per_node: int = DEFAULT_GPUS_PER_NODE) -> LabTrace:  # fmt: skip
    """The demo's workload generator's jobs (its offered load fitted to the cluster's shape) as a
    trace: submit times from 0, the demo's classes, priorities, tenants and users."""
    from gpuq.sim.workload import ClusterSpec, generate_jobs

    specs = generate_jobs(seed, count, cluster=ClusterSpec(nodes, gpus_per_node), load=_BUILTIN_LOAD,
                          daily_swing=_BUILTIN_SWING)  # fmt: skip
    jobs = (TraceJob(id=s.id, submit_time=s.submit_time, duration_s=s.duration_s, gpus=s.gpus, job_class=s.job_class,
                     priority=s.priority, user=s.user, tenant=s.tenant, name=s.name,
                     checkpoint_interval_s=s.checkpoint_interval_s) for s in specs)  # fmt: skip
    return LabTrace.of(f"built-in workload (seed {seed}, {count:,} jobs)", jobs)


def load_trace(path: str, *, preset: str | None = None, seed: int = 0, limit: int = MAX_LAB_JOBS) -> LabTrace:
    """The first `limit` jobs of the trace at `path` (`open_trace`: NotFound, BadInput,
    TraceError name what is wrong in one line)."""
    stream = open_trace(path, preset=preset, seed=seed)
    jobs = list(islice(stream, limit + 1))
    truncated = len(jobs) > limit
    if truncated:
        del jobs[limit:]
    if not jobs:
        raise BadInput(f"{visible(path)}: the trace holds no job")
    more = f", its first {limit:,} jobs" if truncated else f", {len(jobs):,} jobs"
    return LabTrace.of(f"{visible(path)}{more}", jobs, truncated)


def parse_shape(text: str) -> tuple[int, int]:
    """``4x8`` -> (nodes, GPUs per node), as `gpuq replay --cluster-shape` takes it (BadInput)."""
    from gpuq.service.tuning import parse_shape as parse

    return parse(text)


def parse_lab_command(text: str) -> TraceRequest:
    """`:lab [PATH] [--preset P] [--shape NODESxGPUS]` (and `:trace …`): what to load.
    `builtin` (or nothing) is the built-in workload. BadInput for a word it does not know."""
    import shlex

    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise BadInput(f"{visible(text)}: {exc}") from None
    path: str | None = None
    preset: str | None = None
    shape: str | None = None
    i = 0
    while i < len(words):
        word = words[i]
        if word in ("--preset", "--shape"):
            if i + 1 >= len(words):
                raise BadInput(f"{word} needs a value")
            if word == "--preset":
                preset = words[i + 1]
            else:
                parse_shape(words[i + 1])
                shape = words[i + 1]
            i += 2
            continue
        if word.startswith("--"):
            raise BadInput(f"unknown option {visible(word)} (--preset NAME, --shape NODESxGPUS)")
        if path is not None:
            raise BadInput(f"one trace at a time: {visible(path)!r} and {visible(word)!r}")
        path = word
        i += 1
    if path == "builtin":
        path = None
    if path is None and preset is not None:
        raise BadInput("--preset needs a trace path")
    return TraceRequest(path, preset, shape)


def lab_classes(settings: LabSettings, policy: Policy) -> tuple[tuple[JobClass, ...], Policy]:
    """The classes and the policy the lab replays with: each class's SLA as the policy resolves
    it, times the SLA factor; the policy's own class overrides scaled alike (so the simulator and
    the measurements, which resolve classes through the policy, see the scaled limits too)."""
    from gpuq.sim.workload import DEFAULT_CLASSES

    factor = settings.sla_factor

    def scaled(value: float | None) -> float | None:
        return None if value is None else value * factor

    classes = tuple(
        JobClass(c.name, c.priority, c.preemptible, scaled(c.target_p95_s), scaled(c.max_wait_s))
        for c in (policy.resolve_class(base, base.name) for base in DEFAULT_CLASSES)
    )
    overrides = dict(policy.classes)
    for cls in classes:
        own = overrides.get(cls.name, ClassPolicy())
        overrides[cls.name] = replace(own, target_p95_s=cls.target_p95_s, max_wait_s=cls.max_wait_s)
    for name, own in policy.classes.items():
        if name not in {c.name for c in classes}:
            overrides[name] = replace(own, target_p95_s=scaled(own.target_p95_s), max_wait_s=scaled(own.max_wait_s))
    return classes, replace(policy, classes=MappingProxyType(overrides))


def lab_config(settings: LabSettings, policy: Policy | None = None) -> ReplayConfig:
    """The replay configuration of `settings` over `policy` (None: gpuq's defaults)."""
    from gpuq.replay.model import CheckpointModel, ReplayConfig

    for knob in KNOBS:
        value = settings.value(knob)
        if not (value >= 0 and value < float("inf")):
            raise BadInput(f"lab setting {knob}: {value!r} is not 0 or more")
    if settings.sla_factor <= 0:
        raise BadInput("lab setting sla: the factor must be more than 0")
    classes, base = lab_classes(settings, policy or DEFAULT_POLICY)
    interval = settings.checkpoint_interval_s
    base = replace(base, delta=settings.delta, grace_period_s=settings.grace_period_s,
                   default_checkpoint_interval_s=interval)  # fmt: skip
    model = CheckpointModel(save_cost_s=settings.checkpoint_cost_s, restore_cost_s=settings.restore_cost_s,
                            interval_s=interval)  # fmt: skip
    return ReplayConfig(policy=base, nodes=settings.nodes, gpus_per_node=settings.gpus_per_node, checkpoint=model,
                        event_log=True, classes=classes)  # fmt: skip


def run_lab(jobs: LabTrace | Sequence[TraceJob], settings: LabSettings, *, policy: Policy | None = None) -> LabResult:
    """The three strategies (`STRATEGIES`) replayed on the same jobs under `settings`, each with
    its event log (BadInput: a job the lab's cluster can never fit, a bad setting)."""
    from gpuq.replay.run import compare

    trace = jobs if isinstance(jobs, LabTrace) else LabTrace.of("trace", jobs)
    config = lab_config(settings, policy)
    began = time.perf_counter()
    try:
        results = compare(trace.jobs, config, [Mode(s) for s in STRATEGIES])
    except BadInput as exc:  # (said as the lab takes a shape)
        raise BadInput(str(exc).replace("give a larger --cluster-shape", "load it on a larger cluster: "
                                        ":lab TRACE --shape NODESxGPUS")) from None  # fmt: skip
    return LabResult(trace, settings, tuple(results), time.perf_counter() - began)


class Lab:
    """One trace in the lab, its results kept by settings (the `_CACHED` latest) for one policy
    at a time. Safe to use from several threads (a compute worker and a benchmark alike)."""

    def __init__(self, trace: LabTrace) -> None:
        self.trace = trace
        self._lock = threading.Lock()
        self._policy: Policy | None = None
        self._results: OrderedDict[LabSettings, LabResult] = OrderedDict()

    def _same_policy(self, policy: Policy | None) -> bool:
        return policy is self._policy or policy == self._policy

    def cached(self, settings: LabSettings, policy: Policy | None = None) -> LabResult | None:
        with self._lock:
            if not self._same_policy(policy):
                return None
            found = self._results.get(settings)
            if found is not None:
                self._results.move_to_end(settings)
            return found

    def result(self, settings: LabSettings, policy: Policy | None = None) -> LabResult:
        """The result of `settings` (replayed now unless kept)."""
        found = self.cached(settings, policy)
        if found is not None:
            return found
        computed = run_lab(self.trace, settings, policy=policy)
        with self._lock:
            if not self._same_policy(policy):
                self._policy = policy
                self._results.clear()
            self._results[settings] = computed
            while len(self._results) > _CACHED:
                self._results.popitem(last=False)
        return computed
