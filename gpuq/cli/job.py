"""`gpuq job ID`: everything about one job, and why it is pending, in plain words.

`-o json` → `{"cluster", "taken_at", "job": {snapshot job fields + wait_s, effective_priority,
preemptions, preemptions_24h}, "class": {"name", "priority", "preemptible", "target_p95_s",
"max_wait_s"}, "explanation": [sentences], "protection": {"reason", "detail"} | null,
"gpu_seconds_lost_if_preempted": x | null}`. `protection` is what would stop even an urgent job
from preempting this one (running jobs only).
"""

from __future__ import annotations

from typing import Any

import click

from gpuq.cli.options import App, global_options, job_argument, pass_app
from gpuq.cli.render import emit_csv, emit_json, fmt_duration, fmt_time, print_table, say
from gpuq.model import QUEUED_STATES
from gpuq.model.codec import job_document
from gpuq.timefmt import format_time
from gpuq.views.changes import format_priority
from gpuq.views.columns import JOB
from gpuq.views.job import JobView, job_view

__all__ = ["job"]


def _document(view: JobView) -> dict[str, Any]:
    return {
        **job_document(view.job),
        "wait_s": None if view.wait_s is None else round(view.wait_s, 3),
        "effective_priority": view.effective_priority,
        "preemptions": view.preemptions,
        "preemptions_24h": view.preemptions_24h,
    }


def _rows(view: JobView) -> list[tuple[str, str]]:
    j, cls, eff = view.job, view.job_class, view.effective_priority
    alloc = "; ".join(
        f"{node}: {','.join('?' if i is None else str(i) for i in idx)}" for node, idx in j.allocation.items()
    )
    exempt = view.job.exempt_until is not None and view.job.exempt_at(view.taken_at.timestamp())
    rows = [
        ("job", f"{j.id}  {j.name}"),
        ("owner", f"{j.user} (tenant {j.tenant}" + (f", account {j.account}" if j.account else "") + ")"),
        (
            "class",
            f"{cls.name}: default priority {cls.priority}, "
            + ("preemptible" if cls.preemptible else "not preemptible")
            + (f", target P95 {fmt_duration(cls.target_p95_s)}" if cls.target_p95_s is not None else "")
            + (f", max wait {fmt_duration(cls.max_wait_s)}" if cls.max_wait_s is not None else ""),
        ),
        ("state", j.state.value + (f" ({j.reason})" if j.reason else "")),
        ("priority", f"{j.priority} base, {format_priority(eff)} effective" + (" (urgent)" if j.urgent else "")),
        ("gpus", f"{j.gpus}" + (f" on {alloc}" if alloc else "")),
        ("submitted", fmt_time(j.submit_time)),
        ("eligible", fmt_time(j.eligible_time)),
        ("started", fmt_time(j.start_time)),
        ("ended", fmt_time(j.end_time)),
        ("wait", fmt_duration(view.wait_s) + (" (still pending)" if j.is_pending else "")),
        ("preempted", f"{view.preemptions}x total, {view.preemptions_24h}x in the last 24h"),
        ("checkpoint", fmt_time(j.last_checkpoint_time)),
        ("exempt", f"until {fmt_time(j.exempt_until)}" if exempt else "no"),
    ]
    if view.gpu_seconds_lost_if_preempted is not None:
        rows.append(("if preempted now", f"loses {view.gpu_seconds_lost_if_preempted / 3600:.2f} GPU-hours"))
    if view.protection is not None:
        rows.append(("protected", view.protection[1]))
    if j.comment:
        rows.append(("comment", j.comment))
    rows.append(("policy", view.policy_source))
    return rows


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
                          "target_p95_s": cls.target_p95_s, "max_wait_s": cls.max_wait_s},  # fmt: skip
                "explanation": list(view.explanation),
                "protection": None if view.protection is None
                else {"reason": view.protection[0].value, "detail": view.protection[1]},
                "gpu_seconds_lost_if_preempted": view.gpu_seconds_lost_if_preempted,
            }
        )
        return
    if app.output == "csv":
        doc = _document(view)
        emit_csv(("field", "value"), ((k, " ".join(map(str, v)) if isinstance(v, list) else v) for k, v in doc.items()))
        return
    print_table(app, JOB, _rows(view))
    say(app, "")
    say(app, ("why pending" if view.job.is_pending else "status", "bold"))
    for line in view.explanation:
        say(app, f"  - {line}")
