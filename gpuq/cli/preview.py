"""`gpuq preview`: dry-run victim choice for a pending job or a what-if request.

`-o json` → `{"would_preempt", "fits_without_preemption", "feasible", "request": {...}, "nodes",
"victims": [{"id", "nodes", "gpus", "gpu_seconds_lost", "cost", "effective_priority", "reason":
"chosen", "detail"}], "spared": [{"id", "reason", "detail"}], "freed_gpus", "total_cost",
"blocked", "notes"}` plus `"native": {"would_preempt", "nodes", "victims": [{"id", "nodes", "gpus",
"priority", "reason", …}], "notes"}` when the backend can predict its own scheduler (with
`"scheduler": "Kueue"` where Kueue decides: a workload waiting in a ClusterQueue), and `"unread":
[{"resource", "reason", "effect", "note"}]` (what the backend could not read, `[]` when nothing;
the table says it in `note:` lines at its end). Exit 0
whether or not it would preempt; 1 only when the request can never be met.
"""

from __future__ import annotations

import click

from gpuq.cli.options import App, complete_class, complete_tenant, global_options, job_argument, pass_app
from gpuq.cli.render import emit_csv, emit_json, print_table, say, say_unread, warn
from gpuq.model import Snapshot
from gpuq.textsafe import visible
from gpuq.views.columns import PREVIEW_SPARED, PREVIEW_VICTIMS
from gpuq.views.preview import (
    PreviewView,
    from_preview,
    native_heading,
    native_summary,
    spared_rows,
    verdict,
    victim_rows,
)
from gpuq.views.unread import unread_document

__all__ = ["preview", "show_preview"]

_VERDICT_STYLES = {"never": "bold red", "fits": "green", "preempts": "yellow", "blocked": "yellow"}


def show_preview(app: App, view: PreviewView, *, heading: str | None = None, snapshot: Snapshot | None = None) -> None:
    """Render a preview in the chosen format (shared with `gpuq bump`); `snapshot`, where given,
    is the one it was planned on, for what it lacks (`unread`)."""
    result = view.preview
    plan = result.plan
    if app.output == "json":
        emit_json({**result.to_dict(), "unread": [] if snapshot is None else unread_document(snapshot)})
        return
    if app.output == "csv":
        emit_csv(
            ("id", "decision", "reason", "nodes", "gpus", "gpu_seconds_lost", "cost", "detail"),
            [
                *([v.job_id, "preempt", v.reason.value, " ".join(v.nodes), v.gpus, round(v.gpu_seconds_lost, 3),
                   round(v.cost, 3), v.detail] for v in plan.victims),
                *([s.job_id, "spare", s.reason.value, " ".join(s.nodes), s.gpus, None, None, s.detail]
                  for s in plan.spared),
            ],
        )  # fmt: skip
        return
    if heading:
        say(app, heading)
    if plan.request.priority_note:  # (before the verdict: it is what the verdict stands on)
        say(app, f"note: {plan.request.priority_note}")
    answer = verdict(view)
    say(app, (answer.head, _VERDICT_STYLES[answer.kind]), answer.text)
    if plan.victims:
        say(app, "")
        print_table(app, PREVIEW_VICTIMS, victim_rows(view), title="victims")
    if plan.spared:
        say(app, "")
        print_table(app, PREVIEW_SPARED, spared_rows(view), title="spared")
    for note in plan.notes:
        say(app, f"note: {note}")
    if result.native_error is not None:
        say(app, f"native scheduler: {result.native_error}")
    if result.native is not None:
        native = result.native
        say(app, f"{native_heading(native)}: {native_summary(native)}")
        for victim in native.victims:
            say(app, f"  {victim.id}: {victim.reason}")
        for note in native.notes:
            say(app, f"  {note}")
        if view.differs:
            say(app, f"  where they differ: {view.differs}")
    if snapshot is not None:
        say_unread(app, snapshot)


@click.command("preview")
@job_argument(required=False)
@click.option("--gpus", type=click.IntRange(min=1), help="What-if: GPUs requested.")
@click.option("--priority", type=int, help="What-if priority (with JOB: preview the job at this priority).")
@click.option("--class", "job_class", metavar="CLASS", shell_complete=complete_class,
              help="What-if: the request's class (default priority).")  # fmt: skip
@click.option("--tenant", metavar="TENANT", shell_complete=complete_tenant,
              help="What-if: the request's tenant (urgent quota).")  # fmt: skip
@click.option("--qos", metavar="QOS", help="What-if on Slurm: the QOS the job would be submitted with.")
@click.option("--partition", metavar="PARTITION", help="What-if on Slurm: the partition it would be submitted to.")
@click.option("--queue", "local_queue", metavar="LOCALQUEUE",
              help="What-if on Kubernetes with Kueue: the LocalQueue (namespace/name) it would be submitted to.")
@click.option("--urgent", is_flag=True, help="Preview at manual-urgent priority.")
@global_options
@pass_app
def preview(
    app: App,
    job_id: str | None,
    gpus: int | None,
    priority: int | None,
    job_class: str | None,
    tenant: str | None,
    qos: str | None,
    partition: str | None,
    local_queue: str | None,
    urgent: bool,
) -> None:
    """Which running jobs JOB (or a what-if request) would preempt now, and why others are spared.

    \b
    gpuq preview 1234                       a pending job as it stands
    gpuq preview 1234 --priority 900        the same job after a bump
    gpuq preview --gpus 8 --priority 500 [--class C --tenant T]
    gpuq preview --gpus 4 --qos urgent [--partition gpu]     (Slurm)
    gpuq preview --gpus 8 --priority 1000 --queue ns/team-queue     (Kueue)
    """
    cluster = app.cluster
    snapshot = app.snapshot()
    hints = {key: value for key, value in (("qos", qos), ("partition", partition), ("queue", local_queue)) if value}
    if job_id is not None:
        if gpus is not None or job_class is not None or tenant is not None or hints:
            raise click.UsageError("give either JOB or --gpus/--class/--tenant/--qos/--partition/--queue, not both")
        job = cluster.job(job_id, snapshot)
        if not job.is_pending:
            warn(f"job {job.id} is {job.state.value}, not pending: showing what it would preempt if queued now")
        request = cluster.job_request(job.id, snapshot, priority=priority, urgent=urgent)
    else:
        if gpus is None:
            raise click.UsageError("give a JOB or --gpus N (with --priority P, --class C or --urgent)")
        if priority is None and job_class is None and not urgent and not hints:
            raise click.UsageError(
                "a what-if request needs --priority P, --class C (its default priority), --qos Q or --urgent"
            )
        request = cluster.what_if_request(snapshot, gpus=gpus, priority=priority, job_class=job_class, tenant=tenant,
                                          urgent=urgent, hints=hints)  # fmt: skip
    view = from_preview(cluster.preview(request, snapshot))
    show_preview(app, view, snapshot=snapshot)
    if not view.preview.plan.feasible:
        if app.output != "table":
            blocked = view.preview.plan.blocked or "the cluster cannot place this request"
            click.echo(f"gpuq: never feasible: {visible(blocked)}", err=True)
        raise click.exceptions.Exit(1)
