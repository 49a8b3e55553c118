"""`gpuq overview` (also plain `gpuq`): the 3 a.m. screen in one command.

Capacity, the SLA per class (counting jobs still waiting), the pending jobs that rank highest with
what each would preempt, and the latest preemptions.

`-o json` → `{"cluster", "backend", "taken_at", "gpus": {"total", "busy", "free", "unavailable"},
"jobs": {"<state>": count}, "sla": {"<class>": {"p95_incl_pending_s", "target_p95_s", "breach"}},
"top_pending": [{"id", "gpus", "class", "effective_priority", "wait_s", "fits_now",
"would_preempt", "victims"}], "recent_preemptions": [{"time", "victim", "preemptor", "gpus",
"gpu_seconds_lost", "mode", "reason"}]}`.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import click

from gpuq.cli.options import App, global_options, pass_app
from gpuq.cli.preemptions import preemption_events
from gpuq.cli.render import emit_csv, emit_json, fmt_duration, fmt_time, make_console, make_table
from gpuq.model import JobState, Snapshot
from gpuq.timefmt import format_time

__all__ = ["overview", "overview_document"]


def overview_document(app: App, snapshot: Snapshot, top: int) -> dict[str, Any]:
    """The overview as data; tables and JSON both render this."""
    from gpuq.policy.engine import free_gpus, plan_preemption, request_for_job
    from gpuq.policy.explain import pending_order

    cluster = app.cluster
    now = cluster.now(snapshot)
    usable = {n.name for n in snapshot.nodes if n.state.takes_work}
    total = sum(n.gpus for n in snapshot.nodes)
    free = sum(free_gpus(snapshot).values())
    unavailable = sum(n.gpus for n in snapshot.nodes if n.name not in usable)
    states = Counter(job.state.value for job in snapshot.jobs)
    sla = cluster.sla(snapshot, None)
    pending = [j for j in snapshot.jobs if j.state is JobState.PENDING]
    ranked = sorted(pending, key=pending_order(snapshot, cluster.policy, now))[:top]
    top_pending = []
    for job in ranked:
        # gpuq's own plan only: asking the native scheduler five times would make this screen slow.
        plan = plan_preemption(snapshot, cluster.policy, request_for_job(job), now)
        top_pending.append(
            {
                "id": job.id,
                "gpus": job.gpus,
                "class": job.job_class,
                "tenant": job.tenant,
                "effective_priority": cluster.effective_priority(snapshot, job),
                "wait_s": job.wait_s(now),
                "fits_now": plan.fits_without_preemption,
                "would_preempt": plan.would_preempt,
                "victims": [v.job_id for v in plan.victims],
                "blocked": plan.blocked,
            }
        )
    return {
        "cluster": snapshot.cluster,
        "backend": snapshot.backend,
        "taken_at": format_time(snapshot.taken_at),
        "gpus": {"total": total, "busy": total - unavailable - free, "free": free, "unavailable": unavailable},
        "jobs": dict(sorted(states.items())),
        "sla": {
            name: {
                "p95_incl_pending_s": stats.p95_incl_pending_s,
                "target_p95_s": stats.target_p95_s,
                "breach": stats.breach,
                "pending": stats.pending,
            }
            for name, stats in sorted(sla.classes.items())
        },
        "top_pending": top_pending,
        "recent_preemptions": [
            {**e, "time": format_time(float(e["time"]))} for e in preemption_events(snapshot)[:top]
        ],
    }


@click.command("overview")
@click.option("--top", type=click.IntRange(min=1, max=50), default=5, show_default=True,
              help="Pending jobs and preemptions to list.")
@global_options
@pass_app
def overview(app: App, top: int) -> None:
    """Capacity, SLA per class, the most urgent pending jobs and the latest preemptions."""
    snapshot = app.cluster.snapshot()
    doc = overview_document(app, snapshot, top)
    if app.output == "json":
        emit_json(doc)
        return
    if app.output == "csv":
        # One flat table is what a spreadsheet wants: the per-class SLA lines.
        emit_csv(
            ("class", "pending", "p95_incl_pending_s", "target_p95_s", "breach"),
            ([name, s["pending"], s["p95_incl_pending_s"], s["target_p95_s"], s["breach"]]
             for name, s in doc["sla"].items()),
        )
        return
    console = make_console(app)
    gpus = doc["gpus"]
    busy_pct = 100.0 * gpus["busy"] / max(1, gpus["total"] - gpus["unavailable"])
    jobs = ", ".join(f"{count} {state}" for state, count in doc["jobs"].items())
    console.print(
        f"[bold]{doc['cluster']}[/] ({doc['backend']}) at {doc['taken_at']}: "
        f"{gpus['busy']}/{gpus['total']} GPUs busy ({busy_pct:.0f}%), {gpus['free']} free, "
        f"{gpus['unavailable']} down or draining; jobs: {jobs or 'none'}"
    )
    sla = make_table("SLA (P95 including pending jobs)", ["CLASS", "PENDING", "P95", "TARGET", "SLA"],
                     right=("PENDING", "P95", "TARGET"))
    for name, s in doc["sla"].items():
        verdict = "" if s["target_p95_s"] is None else ("[bold red]BREACH[/]" if s["breach"] else "[green]ok[/]")
        sla.add_row(name, str(s["pending"]), fmt_duration(s["p95_incl_pending_s"]),
                    fmt_duration(s["target_p95_s"]), verdict)
    console.print(sla)
    top_table = make_table("Most urgent pending jobs", ["JOB", "CLASS", "GPUS", "EFF", "WAIT", "NEXT"],
                           right=("GPUS", "EFF", "WAIT"))
    for row in doc["top_pending"]:
        if row["fits_now"]:
            nxt = "fits on free GPUs"
        elif row["would_preempt"]:
            nxt = "would preempt " + ", ".join(row["victims"])
        else:
            nxt = f"blocked: {row['blocked']}" if row["blocked"] else "waiting"
        top_table.add_row(row["id"], row["class"], str(row["gpus"]), f"{row['effective_priority']:g}",
                          fmt_duration(row["wait_s"]), nxt)
    console.print(top_table)
    events = make_table("Recent preemptions", ["TIME", "VICTIM", "BY", "GPUS", "GPU-H LOST", "MODE"],
                        right=("GPUS", "GPU-H LOST"))
    for e in doc["recent_preemptions"]:
        lost = e["gpu_seconds_lost"]
        events.add_row(fmt_time(None) if e["time"] is None else e["time"], str(e["victim"]),
                       str(e["preemptor"] or "-"), str(e["gpus"]),
                       "-" if lost is None else f"{lost / 3600:.1f}", str(e["mode"] or "-"))
    console.print(events)
