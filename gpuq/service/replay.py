"""`gpuq replay` for front ends: a trace replayed through the policy on a simulated cluster of a
given shape, under one strategy or (`compare`) each strategy and no preemption at all, with an
optional per-job event log written as JSON lines.

The trace is opened with `gpuq.service.tracing.open_trace` and converted once
(`gpuq.replay.prepare`); every strategy of a comparison replays the same converted jobs.
The policy is resolved as `gpuq tune` resolves it: ``--policy FILE``, else the config's policy
for the cluster, else gpuq's defaults.

Event log lines: ``{"strategy", "time" (POSIX seconds), "t" (seconds since the first submit),
"event" (submit, start, preempt, drain, finish, cancel), "job", "by" (the job a preemption was
for, else null), "gpus", "allocation" (starts: {node: [GPU indexes]})}``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import IO, Any, Final

import msgspec

from gpuq.config import Config
from gpuq.errors import BadInput, Refused
from gpuq.policy.config import Mode, Policy
from gpuq.replay.model import CheckpointModel, ClassStats, ReplayConfig, ReplayResult, WaitStats
from gpuq.replay.prepare import Prepared, prepare
from gpuq.replay.run import NO_PREEMPTION, ReplayEvent, replay_prepared
from gpuq.service.tracing import open_trace
from gpuq.service.tuning import SHAPE_DEFAULT, cluster_shape, parse_strategy, resolve_policy
from gpuq.textsafe import json_safe, visible

__all__ = [
    "COMPARED",
    "NO_PREEMPTION",
    "ClassStats",
    "ReplayReport",
    "ReplayRequest",
    "ReplayResult",
    "WaitStats",
    "replay_trace",
]

#: what `--compare` replays, in this order: each strategy, then no preemption at all
COMPARED: Final[tuple[Mode | None, ...]] = (Mode.CANCEL, Mode.REQUEUE, Mode.GRACEFUL, Mode.SUSPEND, None)


@dataclass(frozen=True, slots=True)
class ReplayRequest:
    """What to replay: the trace (path and `open_trace` options) and how."""

    trace: str
    trace_options: Mapping[str, Any] = field(default_factory=dict)
    policy_file: str | None = None
    config: Config | None = None
    cluster: str | None = None
    shape: str | None = None  # NODESxGPUS; None: `ReplayConfig`'s default
    strategy: str | None = None  # a `Mode` value; None: the policy's own mode
    compare: bool = False
    preemption: bool = True
    checkpoint_cost_s: float | None = None  # None: the policy's
    restore_cost_s: float | None = None
    checkpoint_interval_s: float | None = None
    seed: int = 0


@dataclass(frozen=True, slots=True)
class ReplayReport:
    trace: str
    #: one result; with `compare`, one per entry of `COMPARED`
    results: tuple[ReplayResult, ...]
    base: ReplayConfig
    policy_source: str
    compare: bool = False
    #: where the cluster's shape came from (`cluster_shape`)
    shape_source: str = SHAPE_DEFAULT


def _policy(request: ReplayRequest) -> tuple[Policy, str]:
    return resolve_policy(request.policy_file, request.config, request.cluster)


def _base(request: ReplayRequest) -> tuple[ReplayConfig, str, str]:
    if request.compare and request.strategy is not None:
        raise BadInput("give --strategy or --compare, not both (--compare replays every strategy)")
    if request.compare and not request.preemption:
        raise BadInput("give --no-preemption or --compare, not both (--compare includes a replay without preemption)")
    policy, source = _policy(request)
    nodes, gpus, shape_source = cluster_shape(request.trace, request.trace_options, request.shape)
    strategy = parse_strategy(request.strategy)
    checkpoint = CheckpointModel(save_cost_s=request.checkpoint_cost_s, restore_cost_s=request.restore_cost_s,
                                 interval_s=request.checkpoint_interval_s)  # fmt: skip
    config = ReplayConfig(policy=policy, nodes=nodes, gpus_per_node=gpus, strategy=strategy,
                          preemption=request.preemption, checkpoint=checkpoint, seed=request.seed)  # fmt: skip
    return config, source, shape_source


_encoder = msgspec.json.Encoder()
#: the steps that may lose work: their lines say how much (`ReplayEvent.lost_gpu_s`)
_LOSING = frozenset({"preempt", "drain", "cancel"})


def _writer(out: IO[str], strategy: str, origin: float) -> Callable[[ReplayEvent], None]:
    def write(event: ReplayEvent) -> None:
        line: dict[str, Any] = {
            "strategy": strategy, "time": origin + event.time_s, "t": event.time_s, "event": event.event,
            "job": event.job, "by": event.other, "gpus": event.gpus,
        }  # fmt: skip
        if event.allocation:
            line["allocation"] = {node: list(idx) for node, idx in event.allocation}
        if event.event in _LOSING:
            line["lost_gpu_s"] = event.lost_gpu_s
        out.write(json_safe(_encoder.encode(line)).decode())  # (names as data: `textsafe.json_safe`)
        out.write("\n")

    return write


def _configs(base: ReplayConfig, compare: bool) -> Iterable[ReplayConfig]:
    if not compare:
        return [base]
    return [replace(base, strategy=m) if m is not None else replace(base, preemption=False) for m in COMPARED]


def _run(prepared: Prepared, configs: Sequence[ReplayConfig], events: IO[str] | None) -> tuple[ReplayResult, ...]:
    results = []
    for config in configs:
        sink = None
        if events is not None:
            name = NO_PREEMPTION if not config.preemption else (config.strategy or config.policy.mode).value
            sink = _writer(events, name, prepared.origin)
        results.append(replay_prepared(prepared, config, on_event=sink))
    return tuple(results)


def replay_trace(request: ReplayRequest, *, events_path: str | None = None) -> ReplayReport:
    """Replay the trace as asked. NotFound (a missing trace), BadInput (bad options, a malformed
    trace, jobs that never fit the cluster), Refused (the event log cannot be written)."""
    base, source, shape_source = _base(request)
    jobs = open_trace(request.trace, **dict(request.trace_options))
    prepared = prepare(jobs, base)
    configs = list(_configs(base, request.compare))
    if events_path is None:
        results = _run(prepared, configs, None)
    else:
        try:
            with open(events_path, "w", encoding="utf-8") as out:
                results = _run(prepared, configs, out)
        except OSError as exc:
            raise Refused(f"--events {visible(events_path)}: cannot write it ({exc.strerror or exc})") from None
    return ReplayReport(request.trace, results, base, source, request.compare, shape_source)
