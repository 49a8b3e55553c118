"""`gpuq tune TRACE --grid KEY=V1,V2,…`: replay a grid of policy parameters over a trace, rank the
points by ``α·U − β·T_wait − γ·f_preempt``, mark the Pareto front, write the best policy.

`-o json` → `gpuq.views.tune.tune_json` (every point with its replay's own `-o json` document);
`-o csv` → one row per point, best first. A progress bar is drawn on stderr when it is a
terminal; elsewhere a single line says what ran, once it has. `--on slurm` runs the points as a
Slurm job array; each of its tasks runs this command with `--points`, `--task-index` and
`--out` (a task's own options, not meant to be typed).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

from gpuq.cli.options import App, global_options, pass_app
from gpuq.cli.render import emit_csv, emit_json, print_table, say, warn
from gpuq.cli.table import terminal_width, write_lines
from gpuq.cli.traceopts import trace_args, trace_options
from gpuq.errors import BadInput
from gpuq.service import Mode
from gpuq.service.tuning import GRID_KEYS, ArrayOptions, TuneReport, TuneRequest, run_task, tune, write_best_policy
from gpuq.service.tuning import write_charts as write_chart_files
from gpuq.views.tune import (
    percentile_lines,
    scatter_lines,
    tune_csv,
    tune_json,
    tune_view,
    tune_warnings,
    utilisation_line,
)

__all__ = ["tune_command"]

_GRID_HELP = "One axis of the grid (repeatable): a key and its values. Keys: " + ", ".join(GRID_KEYS) + "."


@contextmanager
def _progress(total_hint: str) -> Iterator[Any]:
    """A progress callback: a bar on a terminal's stderr, nothing elsewhere."""
    if not sys.stderr.isatty():
        yield None
        return
    bar: Any = None

    def update(done: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            bar = click.progressbar(length=total, label=f"replaying {total} {total_hint}", file=sys.stderr,
                                    show_pos=True, show_eta=True)  # fmt: skip
            bar.__enter__()
        bar.update(done - bar.pos)

    try:
        yield update
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)


def _request(app: App, trace: str, grid: tuple[str, ...], options: dict[str, Any], **fields: Any) -> TuneRequest:
    seed = app.options.seed
    return TuneRequest(
        trace=trace, grid=grid, trace_options=trace_args(**options), policy_file=app.options.policy,
        config=app.config, cluster=app.options.cluster, seed=0 if seed is None else seed, **fields,
    )  # fmt: skip


@click.command("tune")
@click.argument("trace")
@click.option("--grid", "grid", multiple=True, metavar="KEY=V1,V2,…", help=_GRID_HELP)
@click.option(
    "--weights",
    metavar="alpha=A,beta=B,gamma=C",
    help="Weights of the score α·U − β·T_wait − γ·f_preempt (default alpha=1,beta=0.5,gamma=0.2).",
)
@click.option("--cluster-shape", metavar="NODESxGPUS", help="The replayed cluster, e.g. 64x8 (default 64x8).")
@click.option(
    "--strategy",
    type=click.Choice([m.value for m in Mode]),
    help="How victims are preempted (default: the policy's mode; a strategy axis overrides it).",
)
@click.option(
    "-j",
    "--jobs",
    "workers",
    type=click.IntRange(1, 4096),
    metavar="N",
    help="Local processes replaying points (default: one per core).",
)
@click.option("--write-policy", metavar="FILE", help="Write the best point's policy here, ready for --policy.")
@click.option("--charts", metavar="DIR", help="Write the charts as PNG files here (needs matplotlib).")
@click.option(
    "--on",
    "where",
    type=click.Choice(["local", "slurm"]),
    default="local",
    show_default=True,
    help="Replay here, or as a Slurm job array on the cluster SLURM_CONF names.",
)
@click.option("--partition", metavar="P", help="--on slurm: the partition of the job array.")
@click.option(
    "--work-dir",
    metavar="DIR",
    help="--on slurm: a directory the nodes share, for the points, logs and results "
    "(default: a new gpuq-tune-* directory here).",
)
@click.option(
    "--tasks",
    type=click.IntRange(1, 1000),
    metavar="N",
    help="--on slurm: tasks in the array (default: one per point).",
)
@click.option("--points", "points_file", metavar="FILE", help="(a job array task's) the points file.")
@click.option("--task-index", type=click.IntRange(0, 999), metavar="N", help="(a job array task's) this task's index.")
@click.option("--out", metavar="DIR", help="(a job array task's) where to write the result file.")
@trace_options
@global_options
@pass_app
def tune_command(
    app: App,
    trace: str,
    grid: tuple[str, ...],
    weights: str | None,
    cluster_shape: str | None,
    strategy: str | None,
    workers: int | None,
    write_policy: str | None,
    charts: str | None,
    where: str,
    partition: str | None,
    work_dir: str | None,
    tasks: int | None,
    points_file: str | None,
    task_index: int | None,
    out: str | None,
    **trace_opts: Any,
) -> None:
    """Replay a grid of policy parameters over TRACE and rank them.

    \b
    Example: gpuq tune jobs.jsonl --grid delta=0,50,100 --grid checkpoint_interval=10m,30m \\
                 --grid min_runtime=0,10m --weights alpha=1,beta=0.5,gamma=0.2 --write-policy best.toml

    U is the useful utilisation, T_wait the mean wait over the grid's largest, f_preempt the
    preemptions per job over the grid's largest. The Pareto front (*) maximises U and minimises
    the mean wait and the preemptions per job.
    """
    if points_file is not None or task_index is not None or out is not None:
        if points_file is None or task_index is None or out is None or grid:
            raise BadInput("a job array task takes --points, --task-index and --out together, and no --grid")
        request = _request(app, trace, (), trace_opts, shape=cluster_shape, strategy=strategy)
        path = run_task(request, points_file, task_index, out)
        click.echo(f"gpuq tune: task {task_index} wrote {path}", err=True)
        return
    if where == "local" and (partition or work_dir or tasks):
        raise BadInput("--partition, --work-dir and --tasks are for --on slurm")
    if where == "slurm" and workers is not None:
        raise BadInput("--jobs is for --on local (a job array runs one task per point, or --tasks)")
    request = _request(app, trace, grid, trace_opts, weights=weights, shape=cluster_shape, strategy=strategy)
    on_slurm = ArrayOptions(partition=partition, work_dir=work_dir, tasks=tasks) if where == "slurm" else None
    with _progress("points") as progress:
        report = tune(request, workers=workers, on_slurm=on_slurm, progress=progress)
    if not sys.stderr.isatty():
        click.echo(f"gpuq tune: {len(report.ranking.rows)} points replayed in {report.wall_s:.1f}s on "
                   f"{report.ran_on}", err=True)  # fmt: skip
    written = str(write_best_policy(report, write_policy)) if write_policy else None
    chart_paths = [str(p) for p in write_chart_files(report, charts)] if charts else []
    _show(app, report, written, chart_paths)


def _show(app: App, report: TuneReport, policy_file: str | None, charts: list[str]) -> None:
    for line in tune_warnings(report):
        warn(line)
    if app.output == "json":
        emit_json(tune_json(report, policy_file=policy_file, charts=charts))
        return
    if app.output == "csv":
        header, rows = tune_csv(report)
        emit_csv(header, rows)
        return
    view = tune_view(report)
    print_table(app, view.spec, view.rows, title=view.title)
    if app.no_headers:
        return
    say(app, "")
    say(app, view.summary)
    width = terminal_width()
    chart_width = max(16, min(60, width - 12))
    write_lines(["", "Trade-off:", *scatter_lines(report, width=chart_width)])
    best = report.ranking.best.point.id
    spark = utilisation_line(report, width=chart_width)
    if spark:
        write_lines(["", f"Utilisation over time ({best}, 0–100%): {spark}"])
    waits = percentile_lines(report, width=max(10, min(40, width - 30)))
    if waits:
        write_lines(["", f"Waits by percentile, 0 to 100 ({best}):", *waits])
    if report.work_dir:
        say(app, f"job array files (points, logs, results): {report.work_dir}")
    if policy_file:
        say(app, f"best policy written to {policy_file} (use it with --policy {policy_file})")
    for path in charts:
        say(app, f"chart: {path}")
