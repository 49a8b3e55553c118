"""The Policy lab pane (Pilot): opened with its key, Δ moved with a key re-simulates (the last
table stays, marked, meanwhile), the timeline steps through the jobs, `:trace` loads a trace
and a bad path is one error line."""

from __future__ import annotations

import io
import threading
from typing import Any

import pytest
from rich.console import Console
from textual.widgets import Input, Static

from gpuq.service import Cluster
from gpuq.service.policylab import Lab, LabSettings, builtin_trace, run_lab
from gpuq.tui.app import GpuqConsole
from gpuq.tui.panes.lab import LabModel, LabPane
from gpuq.views.policylab import job_order, lab_table
from tests.tui.conftest import FIXTURES, ConsoleFactory, loaded, noted, wait_for

TRACE = FIXTURES / "traces" / "jobs.jsonl"


def text_of(app: GpuqConsole, widget_id: str) -> str:
    console = Console(width=160, color_system=None, file=io.StringIO())
    console.print(app.query_one(widget_id, Static).content)
    return str(console.file.getvalue())  # type: ignore[attr-defined]


def shown(app: GpuqConsole) -> LabModel | None:
    return app.query_one(LabPane)._model


async def open_lab(pilot: Any) -> tuple[GpuqConsole, LabModel]:
    app = await loaded(pilot)
    await pilot.press("8")
    assert app.view_id == "lab"
    await wait_for(pilot, lambda: shown(app) is not None and not app._computing)
    model = shown(app)
    assert model is not None and model.result is not None
    return app, model


async def command(pilot: Any, text: str) -> None:
    await pilot.press("colon")
    pilot.app.query_one("#prompt", Input).value = text
    await pilot.press("enter")


async def test_a_key_moves_delta_and_the_table_follows(small_cluster: Cluster, console: ConsoleFactory,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    app = console([small_cluster])
    async with app.run_test(size=(100, 40)) as pilot:
        app, before = await open_lab(pilot)
        assert before.params.settings == LabSettings()
        assert "Δ 100 d/D" in text_of(app, "#lab-settings")
        assert "Utilisation" in text_of(app, "#lab-table")
        # the next replay waits (in the worker) until the test has looked at the screen
        go = threading.Event()
        replay = Lab.result

        def held(self: Lab, settings: LabSettings, policy: Any = None) -> Any:
            assert go.wait(20)
            return replay(self, settings, policy)

        monkeypatch.setattr(Lab, "result", held)
        await pilot.press("D")
        await pilot.pause(0.2)
        # the new value, marked, over the old table, while the replay runs
        assert app._computing
        assert "Δ 200 d/D" in text_of(app, "#lab-settings") and "re-simulating…" in text_of(app, "#lab-settings")
        assert shown(app) is before and "Utilisation" in text_of(app, "#lab-table")
        go.set()
        await wait_for(pilot, lambda: shown(app) is not before and not app._computing)
        after = shown(app)
        assert after is not None and after.params.settings.delta == 200.0
        assert "re-simulating" not in text_of(app, "#lab-settings")
        expected = lab_table(run_lab(builtin_trace(), LabSettings(delta=200.0), policy=small_cluster.policy))
        assert after.rows == expected
        assert after.rows != before.rows
        preemptions = next(r for r in after.rows if r.label == "Preemptions")
        assert all(cell in text_of(app, "#lab-table") for cell in preemptions.cells)
        # back to Δ 100: kept, shown without replaying again
        await pilot.press("d")
        await wait_for(pilot, lambda: shown(app) is not after and not app._computing)
        again = shown(app)
        assert again is not None and again.result is before.result
        # each knob has its keys
        await pilot.press("a", "C", "l")
        await wait_for(pilot, lambda: (m := shown(app)) is not None and m.params.settings.sla_factor == 0.75
                       and not app._computing)  # fmt: skip
        settings = shown(app).params.settings  # type: ignore[union-attr]
        assert (settings.grace_period_s, settings.checkpoint_interval_s) == (120.0, 2700.0)


async def test_the_timeline_steps_through_the_jobs(small_cluster: Cluster, console: ConsoleFactory) -> None:
    app = console([small_cluster])
    async with app.run_test(size=(100, 40)) as pilot:
        app, model = await open_lab(pilot)
        assert model.result is not None
        order = job_order(model.result)
        assert model.order == order and model.timeline is not None and model.timeline.job_id == order[0]
        assert f"Timeline of job {order[0]} " in text_of(app, "#lab-timeline")
        assert "job 1 of 2,000" in text_of(app, "#lab-timeline")
        await pilot.press("n")
        await wait_for(pilot, lambda: (m := shown(app)) is not None and m.timeline is not None
                       and m.timeline.job_id == order[1])  # fmt: skip
        assert "job 2 of 2,000" in text_of(app, "#lab-timeline")
        await pilot.press("N", "N")
        await wait_for(pilot, lambda: (m := shown(app)) is not None and m.timeline is not None
                       and m.timeline.job_id == order[-1])  # fmt: skip
        # the job stays when a setting moves: the same job under the new replay
        await pilot.press("D")
        await wait_for(pilot, lambda: (m := shown(app)) is not None and m.params.settings.delta == 200.0)
        timeline = shown(app).timeline  # type: ignore[union-attr]
        assert timeline is not None and timeline.job_id == order[-1]


async def test_trace_command_loads_a_trace_and_a_bad_path_is_one_line(small_cluster: Cluster,
                                                                      console: ConsoleFactory) -> None:  # fmt: skip
    app = console([small_cluster])
    async with app.run_test(size=(100, 40)) as pilot:
        await loaded(pilot)
        await command(pilot, f":trace {TRACE}".lstrip(":"))
        assert app.view_id == "lab"
        await wait_for(pilot, lambda: (m := shown(app)) is not None and m.result is not None
                       and m.params.request.path == str(TRACE) and not app._computing)  # fmt: skip
        model = shown(app)
        assert model is not None and model.result is not None
        # (j5 asks for no GPU: left out of the replay, counted as skipped)
        assert len(model.result.trace.jobs) == 5 and set(model.order) == {"j1", "j2", "j3", "j4"}
        assert [r.skipped for r in model.result.results] == [1, 1, 1]
        assert "jobs.jsonl, 5 jobs" in text_of(app, "#lab-settings")
        assert model.rows and "Utilisation" in text_of(app, "#lab-table")
        # a path that is not there: one error line; the lab keeps its trace and table
        await command(pilot, "lab /no/such/trace.jsonl")
        await wait_for(pilot, lambda: any("no such trace" in n.message for n in noted(app)))
        await wait_for(pilot, lambda: not app._computing)
        errors = [n for n in noted(app) if n.severity == "error"]
        assert len(errors) == 1 and "\n" not in errors[0].message and "Traceback" not in errors[0].message
        assert errors[0].message.startswith("/no/such/trace.jsonl: no such trace file")
        assert shown(app) is model and "jobs.jsonl, 5 jobs" in text_of(app, "#lab-settings")
        assert app.query_one(LabPane).params().request.path == str(TRACE)
        # a refresh after the failure does not say it again
        app.action_refresh_now()
        await pilot.pause(0.3)
        await wait_for(pilot, lambda: not app._computing)
        assert len([n for n in noted(app) if n.severity == "error"]) == 1
        # a bad option is said too, and `:lab builtin` goes back to the built-in workload
        await command(pilot, "lab x.csv --colour red")
        await wait_for(pilot, lambda: any("unknown option" in n.message for n in noted(app)))
        await command(pilot, "trace")
        await wait_for(pilot, lambda: any("trace needs a path" in n.message for n in noted(app)))
        await command(pilot, "lab builtin")
        await wait_for(pilot, lambda: (m := shown(app)) is not None and m.result is not None
                       and m.params.request.path is None and not app._computing)  # fmt: skip
        assert "built-in workload" in text_of(app, "#lab-settings")
        # another shape: the built-in workload made for it
        await command(pilot, "lab --shape 4x8")
        await wait_for(pilot, lambda: (m := shown(app)) is not None and m.params.settings.nodes == 4
                       and not app._computing)  # fmt: skip
        assert "on 4×8 GPUs" in text_of(app, "#lab-settings")
        assert shown(app).result.results[0].nodes == 4  # type: ignore[union-attr]
