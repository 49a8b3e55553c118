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
from gpuq.cli.render import emit_csv, emit_json, fmt_duration, fmt_time, make_console
from gpuq.model import DAY_S, QUEUED_STATES, JobState
from gpuq.timefmt import format_time

__all__ = ["job"]


@click.command("job")
@job_argument()
@global_options
@pass_app
def job(app: App, job_id: str) -> None:
    """Everything about one job, and why it is pending."""
    from gpuq.policy.rules import gpu_seconds_lost, protection
    from gpuq.snapshot_io import job_to_dict

    cluster = app.cluster
    snapshot = cluster.snapshot(ledger=False)  # a queued job needs no ledger; a finished one is read with it
    if (seen := snapshot.job(job_id)) is None or seen.state not in QUEUED_STATES:
        snapshot = cluster.refresh()
    j = cluster.job(job_id, snapshot)
    now = cluster.now(snapshot)
    policy = cluster.policy
    cls = cluster.resolved_class(snapshot, j.job_class)
    eff = cluster.effective_priority(snapshot, j)
    wait = j.wait_s(now)
    day = j.preemptions_since(now - DAY_S, now)
    explanation = cluster.pending_reasons(snapshot, j)
    guard = None
    lost = None
    if j.state is JobState.RUNNING:
        lost = gpu_seconds_lost(j, policy, now)
        found = protection(j, cls, float(policy.urgent_priority) + policy.delta + 1, policy, now)
        if found is not None:
            guard = {"reason": found[0].value, "detail": found[1]}
    doc: dict[str, Any] = {
        **job_to_dict(j),
        "wait_s": None if wait is None else round(wait, 3),
        "effective_priority": eff,
        "preemptions": len(j.preemption_times),
        "preemptions_24h": day,
    }
    if app.output == "json":
        emit_json(
            {
                "cluster": snapshot.cluster,
                "taken_at": format_time(snapshot.taken_at),
                "job": doc,
                "class": {
                    "name": cls.name,
                    "priority": cls.priority,
                    "preemptible": cls.preemptible,
                    "target_p95_s": cls.target_p95_s,
                    "max_wait_s": cls.max_wait_s,
                },
                "explanation": explanation,
                "protection": guard,
                "gpu_seconds_lost_if_preempted": lost,
            }
        )
        return
    if app.output == "csv":
        emit_csv(("field", "value"), ((k, " ".join(map(str, v)) if isinstance(v, list) else v) for k, v in doc.items()))
        return
    from rich.table import Table

    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column()
    alloc = "; ".join(
        f"{node}: {','.join('?' if i is None else str(i) for i in idx)}" for node, idx in j.allocation.items()
    )
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
        ("priority", f"{j.priority} base, {eff:g} effective" + (" (urgent)" if j.urgent else "")),
        ("gpus", f"{j.gpus}" + (f" on {alloc}" if alloc else "")),
        ("submitted", fmt_time(j.submit_time)),
        ("eligible", fmt_time(j.eligible_time)),
        ("started", fmt_time(j.start_time)),
        ("ended", fmt_time(j.end_time)),
        ("wait", fmt_duration(wait) + (" (still pending)" if j.is_pending else "")),
        ("preempted", f"{len(j.preemption_times)}x total, {day}x in the last 24h"),
        ("checkpoint", fmt_time(j.last_checkpoint_time)),
        ("exempt", f"until {fmt_time(j.exempt_until)}" if j.exempt_at(now) else "no"),
    ]
    if lost is not None:
        rows.append(("if preempted now", f"loses {lost / 3600:.2f} GPU-hours"))
    if guard is not None:
        rows.append(("protected", guard["detail"]))
    if j.comment:
        rows.append(("comment", j.comment))
    rows.append(("policy", cluster.policy_source.source))
    for key, value in rows:
        grid.add_row(key, value)
    console = make_console(app)
    console.print(grid)
    title = "why pending" if j.is_pending else "status"
    console.print(f"\n[bold]{title}[/]")
    for line in explanation:
        console.print(f"  - {line}", markup=False)
