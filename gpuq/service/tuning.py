"""`gpuq tune` for front ends: a grid replayed over one trace, here (a process pool) or as a Slurm
job array, ranked the same way either way; the best point's policy written as TOML; charts.

A Slurm run works in one directory on a file system the cluster's nodes share (`work_dir`):
``points.json`` (the grid, `gpuq.tune.files`), ``policy.toml`` (the base policy, so every task
starts from exactly the policy this process resolved), ``task.sh`` (the batch script: the same
Python and gpuq as this process, ``python -m gpuq tune TRACE --points … --task-index
$SLURM_ARRAY_TASK_ID --out …`` with the trace options and the replay's shape, strategy and
seed), ``task-N.log`` and ``result-N.json`` per task. The directory is kept: its logs are what
an operator reads when a task fails.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gpuq.config import Config, load_policy_file
from gpuq.errors import BadInput, NotFound, Refused
from gpuq.policy.config import Mode, Policy
from gpuq.replay.model import ReplayConfig, ReplayResult
from gpuq.textsafe import visible
from gpuq.trace.record import TraceJob
from gpuq.tune import files
from gpuq.tune.grid import KEYS, Grid, apply_point, parse_grid
from gpuq.tune.policyfile import policy_toml
from gpuq.tune.pool import Progress, Replayer, default_replayer, default_workers, replay_point, run_points
from gpuq.tune.score import Ranking, parse_weights, rank

__all__ = [
    "GRID_KEYS",
    "ArrayOptions",
    "TuneReport",
    "TuneRequest",
    "cluster_shape",
    "parse_shape",
    "parse_strategy",
    "resolve_policy",
    "run_task",
    "tune",
    "write_best_policy",
    "write_charts",
]

#: the `--grid` keys with what each sets (for help texts and errors)
GRID_KEYS: Mapping[str, str] = {key: spec.help for key, spec in KEYS.items()}

_SHAPE_RE = re.compile(r"^\s*(\d+)\s*[xX×]\s*(\d+)\s*$")
_MAX_NODES, _MAX_GPUS_PER_NODE = 1_000_000, 1024


def parse_shape(text: str | None) -> tuple[int, int]:
    """``64x8`` -> (nodes, GPUs per node); None: `ReplayConfig`'s default shape."""
    if text is None:
        default = ReplayConfig()
        return default.nodes, default.gpus_per_node
    match = _SHAPE_RE.match(text)
    if not match:
        raise BadInput(f"--cluster-shape '{visible(text)}': expected NODESxGPUS, e.g. 64x8")
    nodes, gpus = int(match.group(1)), int(match.group(2))
    if not (1 <= nodes <= _MAX_NODES and 1 <= gpus <= _MAX_GPUS_PER_NODE):
        raise BadInput(f"--cluster-shape {visible(text)}: 1 to {_MAX_NODES:,} nodes of 1 to {_MAX_GPUS_PER_NODE} GPUs")
    return nodes, gpus


#: where a replay's cluster shape came from (`cluster_shape`)
SHAPE_GIVEN, SHAPE_FROM_HEADER, SHAPE_DEFAULT = "--cluster-shape", "the trace's header", "the default"


def cluster_shape(trace: str, trace_options: Mapping[str, Any], given: str | None) -> tuple[int, int, str]:
    """The replayed cluster (nodes, GPUs per node) and where it came from: `--cluster-shape`
    when given, else the shape a trace `gpuq trace export` wrote records in its header, else
    `ReplayConfig`'s default. A bad shape in a header is the trace's error, not an option's."""
    if given is not None:
        return (*parse_shape(given), SHAPE_GIVEN)
    from gpuq.service.tracing import trace_format, trace_shape

    recorded = None
    if os.path.exists(trace):  # (a missing trace is reported where it is opened)
        fmt = trace_format(trace, preset=trace_options.get("preset"), columns=trace_options.get("columns"))
        recorded = trace_shape(trace, fmt)
    if recorded is None:
        return (*parse_shape(None), SHAPE_DEFAULT)
    try:
        return (*parse_shape(recorded), SHAPE_FROM_HEADER)
    except BadInput:
        raise BadInput(f"{visible(trace)}: header cluster_shape {visible(recorded)!r} is not NODESxGPUS "
                       "(give --cluster-shape)") from None  # fmt: skip


def parse_strategy(text: str | None) -> Mode | None:
    """``--strategy``: a preemption mode; None: the policy's own."""
    if text is None:
        return None
    if text not in {m.value for m in Mode}:
        raise BadInput(f"--strategy '{visible(text)}': one of {', '.join(m.value for m in Mode)}")
    return Mode(text)


@dataclass(frozen=True, slots=True)
class TuneRequest:
    """What to tune: the trace (path and `open_trace` options), the grid (`--grid` texts), the
    weights (`--weights` text), and the replay every point starts from."""

    trace: str
    grid: tuple[str, ...]
    trace_options: Mapping[str, Any] = field(default_factory=dict)
    weights: str | None = None
    policy_file: str | None = None
    config: Config | None = None
    cluster: str | None = None
    shape: str | None = None
    strategy: str | None = None
    seed: int = 0


@dataclass(frozen=True, slots=True)
class ArrayOptions:
    """`--on slurm`: where the tasks run and how long to wait for them."""

    partition: str | None = None
    work_dir: str | None = None
    tasks: int | None = None  # default: one task per point
    timeout_s: float = 86400.0
    poll_s: float = 2.0
    #: the command that runs gpuq on a node (default: this Python, ``-m gpuq``)
    executable: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class TuneReport:
    trace: str
    grid: Grid
    base: ReplayConfig
    ranking: Ranking
    wall_s: float
    #: where the points ran: ``4 local processes``, ``Slurm job array 123 (48 tasks)``
    ran_on: str
    policy_source: str
    work_dir: str | None = None
    #: where the cluster's shape came from (`cluster_shape`)
    shape_source: str = SHAPE_DEFAULT

    @property
    def best_policy(self) -> Policy:
        return apply_point(self.base, self.ranking.best.point).policy


def resolve_policy(policy_file: str | None, config: Config | None, cluster: str | None) -> tuple[Policy, str]:
    """The policy a replay starts from, and where it came from: `--policy FILE`, else the
    config's (for `cluster`, else the config's default cluster), else gpuq's defaults."""
    if policy_file is not None:
        source = load_policy_file(policy_file)
        return source.policy, source.source
    if config is not None:
        source = config.policy_for(cluster or config.cluster)
        return source.policy, source.source
    return Policy(), "defaults"


def _policy(request: TuneRequest) -> tuple[Policy, str]:
    return resolve_policy(request.policy_file, request.config, request.cluster)


def _base(request: TuneRequest) -> tuple[ReplayConfig, str, str]:
    """The replay every point starts from, where its policy came from and where its shape did."""
    policy, source = _policy(request)
    nodes, gpus, shape_source = cluster_shape(request.trace, request.trace_options, request.shape)
    strategy = parse_strategy(request.strategy)
    if strategy is not None:
        policy = replace(policy, mode=strategy)
    config = ReplayConfig(policy=policy, nodes=nodes, gpus_per_node=gpus, strategy=strategy, seed=request.seed)
    return config, source, shape_source


def _open(path: str, options: Mapping[str, Any]) -> Any:
    from gpuq.service.tracing import open_trace

    return open_trace(path, **dict(options))


def load_trace(path: str, options: Mapping[str, Any]) -> tuple[TraceJob, ...]:
    """The whole trace (what each worker process holds once)."""
    return tuple(_open(path, options))


def _check_trace(request: TuneRequest) -> None:
    """Fail at once, here, on a missing trace or bad trace options (not in every worker)."""
    if not os.path.exists(request.trace):
        raise NotFound(f"{visible(request.trace)}: no such trace file")
    jobs = _open(request.trace, request.trace_options)
    close = getattr(jobs, "close", None)
    if close is not None:
        close()


def tune(
    request: TuneRequest,
    *,
    workers: int | None = None,
    on_slurm: ArrayOptions | None = None,
    progress: Progress | None = None,
    replayer: Replayer | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> TuneReport:
    """Replay every point of the grid and rank them: across `workers` local processes (default:
    the cores), or as a Slurm job array with `on_slurm`. BadInput for a bad grid, weights, shape
    or strategy, before anything runs."""
    grid = parse_grid(request.grid)
    weights = parse_weights(request.weights)
    base, source, shape_source = _base(request)
    _check_trace(request)
    points = grid.points()
    started = clock()
    if on_slurm is not None:
        results, ran_on, work_dir = _on_slurm(request, base, grid, on_slurm, progress)
    else:
        loader = functools.partial(load_trace, request.trace, dict(request.trace_options))
        count = min(workers or default_workers(), len(points))
        results = run_points(loader, base, points, workers=count, replayer=replayer, progress=progress)
        ran_on, work_dir = f"{count} local process{'es' if count != 1 else ''}", None
    ranking = rank(points, results, weights)
    return TuneReport(request.trace, grid, base, ranking, clock() - started, ran_on, source, work_dir, shape_source)


# -- a Slurm job array


def _trace_argv(options: Mapping[str, Any]) -> list[str]:
    argv: list[str] = []
    if options.get("preset"):
        argv += ["--preset", str(options["preset"])]
    columns = options.get("columns")
    if columns:
        argv += ["--columns", ",".join(f"{k}={v}" for k, v in columns.items())]
    if options.get("class_from"):
        argv += ["--class-from", str(options["class_from"])]
    return argv


def _task_argv(request: TuneRequest, base: ReplayConfig, work: Path, executable: Sequence[str]) -> list[str]:
    argv = [*executable, "tune", os.path.abspath(request.trace), *_trace_argv(request.trace_options)]
    argv += ["--policy", str(work / "policy.toml"), "--cluster-shape", f"{base.nodes}x{base.gpus_per_node}"]
    if base.strategy is not None:
        argv += ["--strategy", base.strategy.value]
    argv += ["--seed", str(request.seed), "--points", str(work / "points.json"), "--out", str(work)]
    return argv


def _script(argv: Sequence[str]) -> str:
    # Every argument quoted; only the task index is the shell's to expand.
    command = " ".join(shlex.quote(a) for a in argv)
    return f'#!/bin/sh\n# written by gpuq tune --on slurm\nexec {command} --task-index "$SLURM_ARRAY_TASK_ID"\n'


def _work_dir(options: ArrayOptions) -> Path:
    if options.work_dir is not None:
        work = Path(options.work_dir).resolve()
        try:
            work.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise Refused(f"--work-dir {visible(str(work))}: cannot create it ({exc.strerror or exc})") from None
        return work
    return Path(tempfile.mkdtemp(prefix="gpuq-tune-", dir=os.getcwd())).resolve()


def _on_slurm(
    request: TuneRequest, base: ReplayConfig, grid: Grid, options: ArrayOptions, progress: Progress | None
) -> tuple[list[ReplayResult], str, str]:
    from gpuq.backends.slurm.array import submit_array, wait_array
    from gpuq.backends.slurm.runner import Runner

    points = grid.points()
    tasks = max(1, min(options.tasks or len(points), len(points)))
    work = _work_dir(options)
    for stale in work.glob("result-*.json"):  # a reused directory: no result from an earlier run counts
        stale.unlink()
    files.write_points_file(work / "points.json", request.grid, tasks)
    (work / "policy.toml").write_text(policy_toml(base.policy, ["the base policy of a gpuq tune job array"]))
    script = work / "task.sh"
    script.write_text(_script(_task_argv(request, base, work, options.executable or (sys.executable, "-m", "gpuq"))))
    script.chmod(0o755)
    runner = Runner()
    job = submit_array(runner, script, tasks=tasks, name="gpuq-tune", log_dir=work, workdir=work,
                       partition=options.partition)  # fmt: skip
    shares = [files.task_share(points, t, tasks) for t in range(tasks)]

    def done(task: int) -> bool:
        return files.result_path(work, task).exists()

    def task_progress(finished: int, _total: int) -> None:
        if progress is not None:
            # (tasks finish in any order; the bar counts the points of those finished so far)
            progress(sum(len(shares[t]) for t in range(tasks) if done(t)) if finished else 0, len(points))

    wait_array(runner, job, done, progress=task_progress, timeout_s=options.timeout_s, poll_s=options.poll_s)
    by_index: dict[int, ReplayResult] = {}
    for task, share in enumerate(shares):
        for point, result in zip(share, files.read_result_file(files.result_path(work, task), share), strict=True):
            by_index[point.index] = result
    return [by_index[p.index] for p in points], f"Slurm job array {job.job_id} ({tasks} tasks)", str(work)


def run_task(
    request: TuneRequest, points_file: str, task: int, out_dir: str, *, replayer: Replayer | None = None
) -> Path:
    """One task of a job array: replay its share of the points file's points, write its result
    file into `out_dir`; the file's path."""
    grid, tasks = files.read_points_file(points_file)
    if not 0 <= task < tasks:
        raise BadInput(f"--task-index {task}: the points file has tasks 0 to {tasks - 1}")
    base, _, _ = _base(request)
    share = files.task_share(grid.points(), task, tasks)
    jobs = load_trace(request.trace, request.trace_options)
    replay = replayer or default_replayer()
    results = [(point, replay_point(jobs, base, point, replay)) for point in share]
    try:
        return files.write_result_file(out_dir, task, results)
    except OSError as exc:
        raise Refused(f"--out {visible(out_dir)}: cannot write the result ({exc.strerror or exc})") from None


# -- what a run leaves behind


def write_best_policy(report: TuneReport, path: str) -> Path:
    """The best point's policy as a policy file (`--policy` reads it back)."""
    best = report.ranking.best
    comments = [
        f"written by gpuq tune: the best of {len(report.ranking.rows)} points, {best.point.id} ({best.point.label})",
        f"score {best.score:.6g} with {report.ranking.weights.as_text()}; trace {report.trace}",
        f"base policy: {report.policy_source}; cluster {report.base.nodes}x{report.base.gpus_per_node}",
    ]
    target = Path(path)
    try:
        target.write_text(policy_toml(report.best_policy, comments), encoding="utf-8")
    except OSError as exc:
        raise Refused(f"--write-policy {visible(path)}: cannot write it ({exc.strerror or exc})") from None
    return target


def write_charts(report: TuneReport, directory: str) -> list[Path]:
    """The wait CDF, utilisation and trade-off charts as PNG files (needs matplotlib)."""
    from gpuq.tune.charts import write_charts as charts

    return charts(report.ranking, directory)
