"""The console's GPUs and SLA views on a large snapshot: what each costs off and on the UI thread.

Usage: python benchmarks/bench_console_views.py benchmarks/out/big.json [runs]
(make big.json with benchmarks/gen_big_snapshot.py: 10,000 nodes x 8 GPUs, 200,000 jobs)

Prints, median of `runs`: each pane's `compute` (the worker thread's share: grid rows, occupancy,
legend; SLA view, per-class waits and histograms), and on the UI thread the grid's `set_data`
(its layout over every node) with the lines of an 80x24 and a 200x60 screen drawn, and the SLA
pane's `show` with the table's and the detail's lines drawn. This host's NVML read is left out
(a stand-in reader without a driver): `benchmarks/device_nvml.sh` measures that.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from console_harness import PaneApp, median

from gpuq.service import HostGpuReport, NvmlReader, open_cluster
from gpuq.service.hostgpus import set_default_reader
from gpuq.tui.panes.base import ClusterItem, PaneContext
from gpuq.tui.panes.gpus import GpusModel, GpusPane
from gpuq.tui.panes.sla import SlaDetail, SlaModel, SlaPane
from gpuq.tui.widgets.gpugrid import GpuGridView


class _NoDriver(NvmlReader):
    def read(self) -> HostGpuReport:
        return HostGpuReport("bench", False, "a benchmark", (), 0.0)


async def _on_screen(pane: Any, model: Any, size: tuple[int, int], runs: int) -> float:
    app = PaneApp(pane)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        widgets = [*pane.query(GpuGridView), *pane.query("#sla-table"), *pane.query(SlaDetail)]

        def show() -> None:
            pane.show(model)
            for w in widgets:
                if hasattr(w, "render_line") and not isinstance(w, SlaDetail):
                    for y in range(w.size.height):
                        w.render_line(y)
                else:
                    w.render()

        return median(show, runs)[0]


def main() -> None:
    path = sys.argv[1]
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    set_default_reader(_NoDriver())
    cluster = open_cluster(snapshot=path)
    snap = cluster.snapshot()
    ctx = PaneContext((ClusterItem(0, cluster, snap),), None, "", False)
    print(f"{path}: {len(snap.nodes)} nodes, {snap.total_gpus} GPUs, {len(snap.jobs)} jobs")
    gpus, sla = GpusPane(), SlaPane()
    t, gpus_model = median(lambda: gpus.compute(ctx, None), runs)
    assert isinstance(gpus_model, GpusModel)
    print(f"GPUs compute (worker): {t * 1000:.0f} ms")
    t, sla_model = median(lambda: sla.compute(ctx, None), runs)
    assert isinstance(sla_model, SlaModel)
    print(f"SLA compute (worker): {t * 1000:.0f} ms")
    for size in ((80, 24), (200, 60)):
        t = asyncio.run(_on_screen(GpusPane(), gpus_model, size, runs))
        print(f"GPUs show + draw {size[0]}x{size[1]} (UI thread): {t * 1000:.1f} ms")
        t = asyncio.run(_on_screen(SlaPane(), sla_model, size, runs))
        print(f"SLA show + draw {size[0]}x{size[1]} (UI thread): {t * 1000:.1f} ms")


if __name__ == "__main__":
    main()
