"""The Audit view: the log newest first, an outcome never logged marked, refusals and errors
toned, the cursor selecting the row's job on the cluster it names, the filter, outside text."""

from __future__ import annotations

from typing import Any

from gpuq.audit import AuditLog, make_record
from gpuq.service import Cluster
from gpuq.tui.app import GpuqConsole
from gpuq.tui.widgets.table import ViewTable
from gpuq.views.audit import audit_view
from tests.tui.backends import flaky_cluster
from tests.tui.conftest import CONSOLE_T0, SMALL, ConsoleFactory, loaded, wait_for


def lines(table: ViewTable) -> list[str]:
    return [table.render_line(y).text.rstrip() for y in range(table.size.height)]


def audit_table(app: GpuqConsole) -> ViewTable:
    return app.query_one("#audit-table", ViewTable)


def record(target: str, result: str = "ok", *, at: float, cluster: str = "lab", **extra: Any) -> dict[str, Any]:
    return make_record(backend="snapshot", cluster=cluster, action="bump", target=target, result=result, now=at,
                       **extra)  # fmt: skip


def fill(log: AuditLog) -> None:
    log.append(record("201", before={"priority": 100}, after={"priority": 500}, at=CONSOLE_T0 - 50))
    log.append(record("202", "refused", error="priority above the highest allowed", at=CONSOLE_T0 - 40))
    log.append(record("203", "pending", phase="intent", reason="make room", at=CONSOLE_T0 - 30))
    log.append(record("101", "error", error="scontrol failed", at=CONSOLE_T0 - 20))
    log.append(record("77", at=CONSOLE_T0 - 10, cluster="prod"))


async def shown(pilot: object, app: GpuqConsole, rows: int) -> None:
    await wait_for(pilot, lambda: app.view_id == "audit" and not app._computing and audit_table(app).row_count == rows)


def tones(table: ViewTable, index: int) -> dict[str, str | None]:
    assert table.data.tones is not None
    return dict(zip(table.data.spec.names, table.data.tones(table.data.rows[index]), strict=True))


async def test_7_shows_the_log_newest_first_outcome_unknown_marked(small_cluster: Cluster,
                                                                   console: ConsoleFactory) -> None:  # fmt: skip
    fill(small_cluster.audit)
    app = console([small_cluster])
    async with app.run_test(size=(200, 30)) as pilot:
        await loaded(pilot)
        await pilot.press("7")
        await shown(pilot, app, 5)
        table = audit_table(app)
        expected = [r.record["target"] for r in audit_view(small_cluster.audit).rows][::-1]
        assert [r.row.record["target"] for r in table.data.rows] == expected == ["77", "101", "203", "202", "201"]
        shown_lines = lines(table)
        header = shown_lines[0].split()
        assert header == ["TIME", "OPERATOR", "CLUSTER", "ACTION", "JOB", "RESULT", "CHANGE", "REASON"]
        job, result = header.index("JOB"), header.index("RESULT")
        assert [line.split()[job] for line in shown_lines[1:6]] == expected
        assert [line.split()[result] for line in shown_lines[1:6]] == ["ok", "error", "unknown", "refused", "ok"]
        assert "outcome unknown: check the cluster" in shown_lines[3]
        assert "priority: 100 -> 500" in shown_lines[5]
        assert set(tones(table, 2).values()) == {"breach"}  # the whole row
        assert set(tones(table, 1).values()) == {"risk"} and set(tones(table, 3).values()) == {"muted"}
        assert tones(table, 0)["RESULT"] == "ok" and tones(table, 0)["JOB"] is None
        assert "5 actions, newest first · 1 outcome unknown: check the cluster" in app.pane.status()
        await pilot.press("1", "colon", *"audit", "enter")
        await wait_for(pilot, lambda: app.view_id == "audit")


async def test_the_cursor_selects_the_rows_job_on_its_cluster(small_cluster: Cluster, console: ConsoleFactory) -> None:
    fill(small_cluster.audit)
    app = console([small_cluster])
    async with app.run_test(size=(120, 30)) as pilot:
        await loaded(pilot)
        await pilot.press("7")
        await shown(pilot, app, 5)
        assert app.pane.selection() is None  # 77 is on prod, not a cluster shown here
        await pilot.press("enter")  # says so, and opens nothing
        await pilot.pause(0.2)
        assert app.view_id == "audit"
        await pilot.press("down", "down")
        assert app.selected is not None and (app.selected.index, app.selected.job_id) == (0, "203")
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.view_id == "job" and "job 203 " in app.pane.status())


async def test_filter_matches_any_column_and_outside_text_is_data(small_cluster: Cluster,
                                                                  console: ConsoleFactory) -> None:  # fmt: skip
    fill(small_cluster.audit)
    odd = "[/] [bold red]x \x1b[2J \u202eevil"
    small_cluster.audit.append(record("[bold red]x", reason=odd, at=CONSOLE_T0 - 5))
    app = console([small_cluster])
    async with app.run_test(size=(200, 30)) as pilot:
        await loaded(pilot)
        await pilot.press("7")
        await shown(pilot, app, 6)
        text = "\n".join(lines(audit_table(app)))
        assert "[bold red]x" in text and "[/]" in text and "\\x1b[2J" in text and "\\u202eevil" in text
        assert "\x1b" not in text and "\u202e" not in text
        assert len([line for line in lines(audit_table(app)) if line]) == 7  # header + 6: no row broken
        await pilot.press("slash", *"make room", "enter")  # a reason
        await shown(pilot, app, 1)
        assert audit_table(app).data.rows[0].row.record["target"] == "203"
        await pilot.press("slash", "ctrl+u", *"scontrol", "enter")  # an error, shown as the change
        await shown(pilot, app, 1)
        assert audit_table(app).data.rows[0].row.record["target"] == "101"
        assert "1 of 6 actions" in app.pane.status()


async def test_clusters_sharing_the_log_read_it_once(console: ConsoleFactory) -> None:
    a, _ = flaky_cluster(SMALL, "lab")
    b, _ = flaky_cluster(SMALL, "prod")
    fill(a.audit)
    app = console([a, b])
    async with app.run_test(size=(160, 30)) as pilot:
        await loaded(pilot)
        await pilot.press("7", "right_square_bracket", "right_square_bracket")
        await wait_for(pilot, lambda: app.scope == -1)
        await shown(pilot, app, 5)
        await pilot.press("end")  # the oldest: 201 on lab
        assert app.selected is not None and (app.selected.index, app.selected.job_id) == (0, "201")
        await pilot.press("home")  # the newest: 77 on prod, the second cluster
        assert app.selected is not None and (app.selected.index, app.selected.job_id) == (1, "77")
