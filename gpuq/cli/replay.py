"""`gpuq replay TRACE`: the trace's jobs run through the policy on a simulated cluster, measured.

`-o json` → the replay's document (`gpuq.views.replay.replay_json`): ``{"jobs", "gpu_hours",
"utilisation", "useful_utilisation", "wait": {"mean_s", "p50_s", "p95_s", "p99_s", "max_s",
"count"}, "classes": {"<name>": {...the wait keys, "sla_breaches", "jobs", "target_p95_s"}},
"preemptions", "max_preemptions_per_job_day", "lost_gpu_hours", "checkpoint_overhead_gpu_hours",
"makespan_s", "events", "sim_wall_s", …}``; with `--compare`, ``{"strategies": {"<strategy>":
{…}}}``. `-o csv`: per strategy an ``all`` row and one row per class.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from gpuq.cli.options import App, global_options, pass_app
from gpuq.cli.render import emit_csv, emit_json, print_table, say, warn
from gpuq.cli.traceopts import trace_args, trace_options
from gpuq.service import Mode
from gpuq.service.replay import ReplayRequest, replay_trace
from gpuq.timefmt import parse_duration
from gpuq.views.replay import (
    REPLAY_CLASSES,
    REPLAY_COMPARE,
    REPLAY_SUMMARY,
    replay_csv,
    replay_json,
    replay_view,
    replay_warnings,
)

__all__ = ["replay"]

F = TypeVar("F", bound=Callable[..., Any])

#: the longest checkpoint cost or interval a replay takes
_LONGEST_S = 30 * 86400.0


def _duration(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return parse_duration(value, maximum=_LONGEST_S)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _duration_option(name: str, text: str) -> Callable[[F], F]:
    return click.option(name, metavar="DURATION", callback=_duration, help=text)


@click.command("replay")
@click.argument("trace")
@click.option("--cluster-shape", metavar="NODESxGPUS", help="The replayed cluster, e.g. 64x8 (default 64x8).")
@click.option(
    "--strategy",
    type=click.Choice([m.value for m in Mode]),
    help="How victims are preempted (default: the policy's mode).",
)
@click.option("--compare", is_flag=True, help="Replay every strategy, and no preemption, side by side.")
@click.option("--no-preemption", is_flag=True, help="Never preempt: plain priority order with backfill.")
@_duration_option("--checkpoint-cost", "What one checkpoint save costs a job, e.g. 30s (default: the policy's).")
@_duration_option("--restore-cost", "What a restarted job's restore costs, e.g. 60s (default: the policy's).")
@_duration_option(
    "--checkpoint-interval",
    "The interval every job saves at, e.g. 20m (default: the job's own, else the policy's default).",
)
@click.option("--events", "events_path", metavar="FILE", help="Write the per-job event log here (JSON lines).")
@trace_options
@global_options
@pass_app
def replay(
    app: App,
    trace: str,
    cluster_shape: str | None,
    strategy: str | None,
    compare: bool,
    no_preemption: bool,
    checkpoint_cost: float | None,
    restore_cost: float | None,
    checkpoint_interval: float | None,
    events_path: str | None,
    **trace_opts: Any,
) -> None:
    """Replay TRACE through the policy on a simulated cluster and report waits, utilisation,
    preemptions, lost work and checkpoint overhead.

    \b
    Example: gpuq replay jobs.jsonl --policy site.toml --cluster-shape 64x8 --strategy requeue \\
                 --checkpoint-cost 30s --restore-cost 60s --checkpoint-interval 20m

    Deterministic: the same trace, policy and options give the same figures (the seed only
    seeds the class rules of a trace without classes).
    """
    options = trace_args(**trace_opts)
    request = ReplayRequest(
        trace=trace, trace_options=options, policy_file=app.options.policy, config=app.config,
        cluster=app.options.cluster, shape=cluster_shape, strategy=strategy, compare=compare,
        preemption=not no_preemption, checkpoint_cost_s=checkpoint_cost, restore_cost_s=restore_cost,
        checkpoint_interval_s=checkpoint_interval, seed=int(options["seed"]),
    )  # fmt: skip
    report = replay_trace(request, events_path=events_path)
    for line in replay_warnings(report):
        warn(line)
    if app.output == "json":
        emit_json(replay_json(report))
        return
    if app.output == "csv":
        header, rows = replay_csv(report.results)
        emit_csv(header, rows)
        return
    view = replay_view(report)
    if view.compare:
        print_table(app, REPLAY_COMPARE, view.compare, title=view.title)
        return
    print_table(app, REPLAY_SUMMARY, view.summary, title=view.title)
    if not app.no_headers:
        say(app, "")
    print_table(app, REPLAY_CLASSES, view.classes, title="Queue waits per class")
