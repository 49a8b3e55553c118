"""Snapshot tests of the Policy lab at 80×24 and 160×48 (pytest-textual-snapshot), built as
tests/tui/test_snapshots.py builds every view: the fixture snapshot on the fixed clock, the
built-in workload (seeded) under the fixture cluster's policy, nothing on screen that moves."""

from __future__ import annotations

from typing import Any

from textual.pilot import Pilot

from gpuq.service import Cluster
from gpuq.tui.panes.lab import LabPane
from tests.tui.conftest import ConsoleFactory, wait_for
from tests.tui.test_snapshots import SIZES, SnapCompare, host_gpus, settled, shot, steps, still_cursor

__all__ = ["host_gpus", "still_cursor"]  # (autouse fixtures, shared with the other snapshots)


def lab_steps(*keys: str) -> Any:
    """Open the lab, wait for its first replay, press `keys` (each key's replay done before the next)."""
    opened = steps("8")

    async def run(pilot: Pilot[Any]) -> None:
        await opened(pilot)
        pane = pilot.app.query_one(LabPane)
        await wait_for(pilot, lambda: pane._model is not None and not pane._busy())
        for key in keys:
            await pilot.press(key)
            await settled(pilot)
            await wait_for(pilot, lambda: not pane._busy())

    return run


class TestLab:
    @SIZES
    def test_lab(self, snap_compare: SnapCompare, small_cluster: Cluster, console: ConsoleFactory,
                 size: tuple[int, int]) -> None:  # fmt: skip
        assert shot(snap_compare, console([small_cluster]), size, lab_steps())

    @SIZES
    def test_lab_moved(self, snap_compare: SnapCompare, small_cluster: Cluster, console: ConsoleFactory,
                       size: tuple[int, int]) -> None:  # fmt: skip
        """Δ down to 0 and the timeline on the second job."""
        assert shot(snap_compare, console([small_cluster]), size, lab_steps("d", "d", "d", "d", "n"))
