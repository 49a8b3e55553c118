"""`o` in the Queue view: the pods of one owner (Job, JobSet, PyTorchJob) under one line for them
all, in the queue's order; an owner's line is no job to act on; `o` again shows the plain queue."""

from __future__ import annotations

from pathlib import Path

from gpuq.model.codec import encode_snapshot
from gpuq.service import open_cluster
from gpuq.tui.widgets.table import ViewTable
from tests.factories import owned_snapshot
from tests.tui.conftest import ConsoleFactory, loaded, wait_for


def _snapshot_file(tmp_path: Path) -> str:
    path = tmp_path / "owned.json"
    path.write_bytes(encode_snapshot(owned_snapshot()))
    return str(path)


def _first_cells(table: ViewTable) -> list[str]:
    return [table.render_line(y).text.split("  ")[0].strip() for y in range(1, 1 + len(table.data.rows))]


async def test_o_groups_an_owners_pods_and_back(tmp_path: Path, console: ConsoleFactory) -> None:
    app = console([open_cluster(snapshot=_snapshot_file(tmp_path))])
    async with app.run_test(size=(160, 30)) as pilot:
        await loaded(pilot)
        table = app.query_one("#queue-table", ViewTable)
        plain = _first_cells(table)
        assert plain == ["ml/train-1", "ml/eval-0", "ml/train-0", "ml/solo"]  # pending first
        await pilot.press("o")
        await wait_for(pilot, lambda: len(table.data.rows) == 5)
        # the owner's line where its first pod was, its pods under it; a lone pod stays plain
        assert _first_cells(table) == ["PyTorchJob/ml/train", "└ ml/train-1", "└ ml/train-0", "ml/eval-0", "ml/solo"]
        group_line = table.render_line(1).text
        assert "2 pods" in group_line and "16" in group_line and "1 pending" in group_line
        assert table.cursor_key == "0/ml/train-1"  # the cursor stays on its job: now the first pod
        await pilot.press("up")
        assert table.cursor_key == "0/owner:PyTorchJob/ml/train"
        assert app.query_one("#pane-queue").selection() is None  # type: ignore[attr-defined]
        await pilot.press("down")
        assert app.selected is not None and app.selected.job_id == "ml/train-1"
        await pilot.press("o")
        await wait_for(pilot, lambda: len(table.data.rows) == 4)
        assert _first_cells(table) == plain
