"""`gpuq job ID`: everything about one job, and why it is pending, in plain words.

`-o json` → `{"cluster", "taken_at", "job": {snapshot job fields + wait_s, effective_priority,
preemptions, preemptions_24h}, "class": {"name", "priority", "preemptible", "target_p95_s",
"max_wait_s", "may_preempt" (the classes it may preempt, only where the cluster says)},
"explanation": [sentences], "protection": {"reason", "detail"} | null,
"gpu_seconds_lost_if_preempted": x | null, "unread": [{"resource", "reason", "effect", "note"}]}`.
`protection` is what would stop even an urgent job from preempting this one (running jobs only);
`unread` what the backend could not read (`[]`: nothing), said in `note:` lines under the table.
"""

from __future__ import annotations

from typing import Any

import click

from gpuq.cli.options import App, global_options, job_argument, pass_app
from gpuq.cli.render import emit_csv, emit_json, print_table, say, say_unread
from gpuq.model import QUEUED_STATES
from gpuq.model.codec import job_document
from gpuq.timefmt import format_time
from gpuq.views.columns import JOB
from gpuq.views.job import JobView, job_view
from gpuq.views.jobcells import job_fields
from gpuq.views.unread import unread_document

__all__ = ["job"]


def _document(view: JobView) -> dict[str, Any]:
    return {
        **job_document(view.job),
        "wait_s": None if view.wait_s is None else round(view.wait_s, 3),
        "effective_priority": view.effective_priority,
        "preemptions": view.preemptions,
        "preemptions_24h": view.preemptions_24h,
    }


@click.command("job")
@job_argument()
@global_options
@pass_app
def job(app: App, job_id: str) -> None:
    """Everything about one job, and why it is pending."""
    cluster = app.cluster
    snapshot = app.snapshot(ledger=False)  # a queued job needs no ledger; a finished one is read with it
    if (seen := snapshot.job(job_id)) is None or seen.state not in QUEUED_STATES:
        snapshot = cluster.refresh()
    view = job_view(cluster, snapshot, job_id)
    cls = view.job_class
    if app.output == "json":
        emit_json(
            {
                "cluster": view.cluster,
                "taken_at": format_time(view.taken_at),
                "job": _document(view),
                "class": {"name": cls.name, "priority": cls.priority, "preemptible": cls.preemptible,
                          "target_p95_s": cls.target_p95_s, "max_wait_s": cls.max_wait_s,
                          **({"may_preempt": list(cls.may_preempt)} if isinstance(cls.may_preempt, tuple) else {})},
                # fmt: skip
                "explanation": list(view.explanation),
                "protection": None if view.protection is None
                else {"reason": view.protection[0].value, "detail": view.protection[1]},
                "gpu_seconds_lost_if_preempted": view.gpu_seconds_lost_if_preempted,
                "unread": unread_document(snapshot),
            }
        )
        return
    if app.output == "csv":
        doc = _document(view)
        emit_csv(("field", "value"), ((k, " ".join(map(str, v)) if isinstance(v, list) else v) for k, v in doc.items()))
        return
    print_table(app, JOB, job_fields(view))
    say(app, "")
    say(app, ("why pending" if view.job.is_pending else "status", "bold"))
    for line in view.explanation:
        say(app, f"  - {line}")
    say_unread(app, snapshot)
