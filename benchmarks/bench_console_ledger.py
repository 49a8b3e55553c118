"""The console's Preemptions, Job and Audit views on a large snapshot: worker and UI-thread costs.

Usage: python benchmarks/bench_console_ledger.py benchmarks/out/big.json [runs] [audit_records]
(make big.json with benchmarks/gen_big_snapshot.py: 10,000 nodes x 8 GPUs, 200,000 jobs)

Prints, median of `runs`: the Preemptions pane's `compute` (ledger, cap states, totals, event
keys) and its `show` with both tables' lines drawn at 80x24 and 200x60; the Job pane's `compute`
for a pending and a running job (the views' explanation, plan and audit read included); the Audit
pane's `compute` over a log of `audit_records` actions, the first read and then with the log
unchanged (`audit_view_cached` parses it again only after an append), and its `show` with the
lines drawn. The audit log goes to a temporary XDG_STATE_HOME, never the operator's.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from typing import Any

from console_harness import PaneApp, median

from gpuq.model import JobState
from gpuq.service import open_cluster
from gpuq.tui.panes.audit import AuditPane
from gpuq.tui.panes.base import ClusterItem, PaneContext, Selection
from gpuq.tui.panes.job import JobPane
from gpuq.tui.panes.preemptions import PreemptionsPane, PreemptionsParams
from gpuq.tui.widgets.table import ViewTable


async def _on_screen(pane: Any, model: Any, size: tuple[int, int], runs: int) -> float:
    app = PaneApp(pane)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        tables = list(pane.query(ViewTable))

        def show() -> None:
            pane.show(model)
            for table in tables:
                for y in range(table.size.height):
                    table.render_line(y)

        return median(show, runs)[0]


def _fill_audit(records: int) -> None:
    from gpuq.audit import AuditLog, make_record  # (a benchmark may: it stands in for the CLI)

    log = AuditLog()
    with log.open() as writer:
        for i in range(records):
            before, after = {"priority": 10}, {"priority": 20}
            record = make_record(backend="snapshot", cluster="big", action="bump", target=str(1000 + i % 5000),
                                 result="ok", before=before, after=after, now=1.7e9 + i)  # fmt: skip
            writer.write(record)


def main() -> None:
    path = sys.argv[1]
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    records = int(sys.argv[3]) if len(sys.argv) > 3 else 10_000
    os.environ["XDG_STATE_HOME"] = tempfile.mkdtemp(prefix="gpuq-bench-")
    _fill_audit(records)
    cluster = open_cluster(snapshot=path)
    snap = cluster.snapshot()
    preempted = sum(1 for j in snap.jobs if j.preemption_times)
    print(f"{path}: {len(snap.nodes)} nodes, {len(snap.jobs)} jobs ({preempted} preempted), {records} audit actions")
    ctx = PaneContext((ClusterItem(0, cluster, snap),), None, "", False)

    pre = PreemptionsPane()
    t, pre_model = median(lambda: pre.compute(ctx, PreemptionsParams()), runs)
    print(f"Preemptions compute (worker): {t * 1000:.0f} ms")
    for size in ((80, 24), (200, 60)):
        t = asyncio.run(_on_screen(PreemptionsPane(), pre_model, size, runs))
        print(f"Preemptions show + draw {size[0]}x{size[1]} (UI thread): {t * 1000:.1f} ms")

    job = JobPane()
    for state in (JobState.PENDING, JobState.RUNNING):
        chosen = next(j for j in snap.jobs if j.state is state)
        jctx = PaneContext(ctx.items, Selection(0, chosen.id), "", False)
        t, _ = median(lambda c=jctx: job.compute(c, None), runs)  # type: ignore[misc]
        print(f"Job compute, a {state.value} job (worker): {t * 1000:.0f} ms")

    audit = AuditPane()
    t, _ = median(lambda: audit.compute(ctx, None), 1)
    print(f"Audit compute, {records} actions, first read (worker): {t * 1000:.0f} ms")
    t, audit_model = median(lambda: audit.compute(ctx, None), runs)
    print(f"Audit compute, {records} actions, log unchanged since (worker): {t * 1000:.0f} ms")
    for size in ((80, 24), (200, 60)):
        t = asyncio.run(_on_screen(AuditPane(), audit_model, size, runs))
        print(f"Audit show + draw {size[0]}x{size[1]} (UI thread): {t * 1000:.1f} ms")


if __name__ == "__main__":
    main()
