"""The GPUs view: a line per node with each GPU's holder (never cut, in its tenant's colour),
occupancy, the cursor's holder as the selection, the `/` filter, the combined view, and this
host's own GPUs through a stand-in NVML."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pynvml
import pytest
from textual.color import Color
from textual.widgets import Static

from gpuq.model import JobState, Node, NodeState, Snapshot
from gpuq.model.codec import encode_snapshot
from gpuq.service import Cluster, NvmlReader, open_cluster
from gpuq.service.hostgpus import set_default_reader
from gpuq.tui.app import GpuqConsole
from gpuq.tui.widgets.gpugrid import GpuGridView
from gpuq.tui.widgets.tones import component_style
from gpuq.views.gpucells import FREE_CELL, tenant_tone
from gpuq.views.gpus import gpu_grid
from tests.clock import FixedClock
from tests.factories import make_job, make_snapshot
from tests.nvml.conftest import FakeProc
from tests.nvml.fakenvml import GIB, FakeNvml, h100, library_missing
from tests.tui.backends import flaky_cluster
from tests.tui.conftest import CONSOLE_T0, SMALL, ConsoleFactory, loaded, noted, wait_for


@pytest.fixture(autouse=True)
def nvml(tmp_path: Path) -> Iterator[list[FakeNvml]]:
    """This host is gpu-01 without a driver unless a test hands in GPUs (`nvml[0] = ...`): the
    console never reads the real NVML of the machine the tests run on."""
    fakes = [library_missing()]
    proc = FakeProc(tmp_path / "proc")
    saved = set_default_reader(NvmlReader(lambda: fakes[0], FixedClock(CONSOLE_T0), proc=proc.root, host="gpu-01"))
    yield fakes
    set_default_reader(saved)


def grid_of(app: GpuqConsole) -> GpuGridView:
    return app.query_one("#gpus-grid", GpuGridView)


def lines(grid: GpuGridView) -> list[str]:
    return [grid.render_line(y).text.rstrip() for y in range(grid.size.height)]


def text_of(app: GpuqConsole, selector: str) -> str:
    """A widget's text as drawn on the screen, a line per line."""
    widget = app.query_one(selector)
    return "\n".join(widget.render_line(y).text.rstrip() for y in range(widget.size.height))


async def refreshed(pilot: object, app: GpuqConsole) -> None:
    """Read again and wait until the pane has shown what was read."""
    token = app._token
    app.action_refresh_now()
    await wait_for(pilot, lambda: app._token > token and not app._computing)


async def open_gpus(pilot: object) -> GpuqConsole:
    app = await loaded(pilot)
    await pilot.press("2")  # type: ignore[attr-defined]
    await wait_for(pilot, lambda: app.view_id == "gpus" and grid_of(app).rows)
    return await loaded(pilot)


async def test_key_2_shows_a_line_per_node_of_the_fixture(small_cluster: Cluster, console: ConsoleFactory) -> None:
    app = console([small_cluster])
    async with app.run_test(size=(80, 24)) as pilot:
        await open_gpus(pilot)
        grid = gpu_grid(small_cluster.snapshot())
        shown = lines(grid_of(app))
        assert shown[0].split()[:3] == ["NODE", "STATE", "BUSY"]
        rows = [line.split() for line in shown[1 : 1 + len(grid.nodes)]]
        assert [r[0] for r in rows] == [g.node.name for g in grid.nodes]
        for words, g in zip(rows, grid.nodes, strict=True):
            assert words[1:3] == [g.node.state.value, f"{g.busy}/{g.node.gpus}"]
            held = [job or (FREE_CELL if g.node.state.takes_work else "×") for job in g.slots]
            assert words[3:] == held
        summary = text_of(app, "#gpus-summary")
        assert f"lab: {grid.busy}/{grid.total} GPUs busy" in summary and "4 down/drain on 1 node" in summary
        assert "H100 8/12 (67%)" in summary
        assert "3 nodes" in str(app.query_one("#status", Static).render())


async def test_every_demo_node_and_holder_at_80x24(demo_cluster: Cluster, console: ConsoleFactory) -> None:
    app = console([demo_cluster])
    async with app.run_test(size=(80, 24)) as pilot:
        await open_gpus(pilot)
        snap = app.snapshots[0]
        assert snap is not None
        grid = gpu_grid(snap)
        shown = lines(grid_of(app))
        by_node = {line.split()[0]: line.split()[3:] for line in shown[1:] if line.strip()}
        assert list(by_node) == [g.node.name for g in grid.nodes]
        for g in grid.nodes:
            assert by_node[g.node.name] == [job or FREE_CELL for job in g.slots]
        assert all(len(line) <= 80 for line in shown)


def _long_ids_snapshot() -> Snapshot:
    """Two 8-GPU nodes, every GPU held by another array task with a long id."""
    nodes = [Node(f"node-{n}", 8, "H100", NodeState.ALLOCATED) for n in (1, 2)]
    jobs = [
        make_job(f"9876543_{n}{i:02d}", tenant=f"tenant{i % 3}", state=JobState.RUNNING,
                 submit_time=CONSOLE_T0 - 600, start_time=CONSOLE_T0 - 60, allocation={f"node-{n}": [i]})
        for n in (1, 2) for i in range(8)
    ]  # fmt: skip
    return make_snapshot("lab", "snapshot", CONSOLE_T0, nodes=nodes, jobs=jobs)


async def test_long_ids_wrap_a_node_onto_more_lines_never_cut(tmp_path: Path, console: ConsoleFactory) -> None:
    path = tmp_path / "long.json"
    snap = _long_ids_snapshot()
    path.write_bytes(encode_snapshot(snap))
    app = console([open_cluster(snapshot=str(path))])
    async with app.run_test(size=(80, 24)) as pilot:
        await open_gpus(pilot)
        shown = lines(grid_of(app))
        assert all(len(line) <= 80 for line in shown)
        words = " ".join(shown[1:]).split()
        ids = [j.id for j in snap.jobs]
        assert [w for w in words if w.startswith("9876")] == ids  # each whole, in GPU order
        starts = [line.split()[0] for line in shown[1:] if line[:1].strip()]
        assert starts == ["node-1", "node-2"]
        assert len([line for line in shown[1:] if line.strip()]) > 2  # they wrapped
        # a wider screen puts each node on one line again
        await pilot.resize_terminal(200, 30)
        await pilot.pause(0.2)
        wide = [line for line in lines(grid_of(app))[1:] if line.strip()]
        assert len(wide) == 2 and [w for w in " ".join(wide).split() if w.startswith("9876")] == ids


async def test_cells_are_in_their_tenants_tone(tmp_path: Path, console: ConsoleFactory) -> None:
    path = tmp_path / "long.json"
    snap = _long_ids_snapshot()
    path.write_bytes(encode_snapshot(snap))
    app = console([open_cluster(snapshot=str(path))])
    async with app.run_test(size=(200, 30)) as pilot:
        await open_gpus(pilot)
        grid = grid_of(app)
        tenants = {j.id: j.tenant for j in snap.jobs}

        def colours() -> dict[str, object]:
            found: dict[str, object] = {}
            for y in range(1, 3):
                for seg in grid.render_line(y):
                    word = seg.text.strip()
                    if word in tenants and seg.style is not None:
                        found[word] = seg.style.color
            return found

        first = colours()
        assert set(first) == set(tenants)
        theme = app.theme_variables
        for job_id, colour in first.items():
            assert colour == Color.parse(theme[f"gpuq-{tenant_tone(tenants[job_id])}"]).rich_color
        assert len({str(c) for c in first.values()}) > 1  # tenants tell apart
        # the same tenant, the same colour, refresh after refresh
        await refreshed(pilot, app)
        assert colours() == first


async def test_the_cursors_holder_is_the_selection(small_cluster: Cluster, console: ConsoleFactory) -> None:
    app = console([small_cluster])
    async with app.run_test(size=(80, 24)) as pilot:
        await open_gpus(pilot)
        grid = grid_of(app)
        assert grid.has_focus
        assert app.selected is not None and app.selected.job_id == "101"  # gpu-01's first GPU
        await pilot.press("down", "right", "right")  # gpu-02, GPU 2
        await wait_for(pilot, lambda: app.selected is not None and app.selected.job_id == "103")
        assert app.selected.index == 0 and grid.cursor_key == "0/103"
        await pilot.press("right")
        await wait_for(pilot, lambda: app.selected is not None and app.selected.job_id == "104")
        await pilot.press("right")  # past the last GPU: the next node's first, a down node's
        await pilot.pause(0.1)
        assert grid.cursor == (2, 0) and grid.cursor_key is None
        assert app.selected.job_id == "104"  # a free GPU selects nothing new
        await pilot.press("up", "enter")
        await wait_for(pilot, lambda: app.view_id == "job")
        assert app.selected.job_id == "102"


async def test_filter_keeps_nodes_by_name_or_holder(small_cluster: Cluster, console: ConsoleFactory) -> None:
    app = console([small_cluster])
    async with app.run_test(size=(80, 24)) as pilot:
        await open_gpus(pilot)
        grid = grid_of(app)
        await pilot.press("slash", *"103", "enter")
        await wait_for(pilot, lambda: [r.node for _, r in grid.rows] == ["gpu-02"])
        assert "1 of 3 nodes" in str(app.query_one("#status", Static).render())
        assert "lab: 8/12 GPUs busy" in text_of(app, "#gpus-summary")  # the cluster's, not the filter's
        await pilot.press("slash", "backspace", "backspace", "backspace", *"GPU-03", "enter")  # any case
        await wait_for(pilot, lambda: [r.node for _, r in grid.rows] == ["gpu-03"])


async def test_combined_view_has_a_cluster_column(console: ConsoleFactory) -> None:
    a, _ = flaky_cluster(SMALL, "alpha")
    b, _ = flaky_cluster(SMALL, "beta")
    app = console([a, b], first_view="gpus")
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(pilot)
        await pilot.press("right_square_bracket", "right_square_bracket")
        grid = grid_of(app)
        await wait_for(pilot, lambda: len(grid.rows) == 6)
        shown = lines(grid_of(app))
        assert shown[0].split()[:2] == ["CLUSTER", "NODE"]
        assert [line.split()[:2] for line in shown[1:7]] == [
            [c, f"gpu-0{n}"] for c in ("alpha", "beta") for n in (1, 2, 3)
        ]
        summary = text_of(app, "#gpus-summary")
        assert "alpha: 8/12 GPUs busy" in summary and "beta: 8/12 GPUs busy" in summary
        await pilot.press("home", "down", "down", "down")  # beta's gpu-01
        await wait_for(pilot, lambda: app.selected is not None and app.selected.index == 1)
        assert app.selected is not None and app.selected.job_id == "101"


async def test_without_nvml_one_muted_line_says_why(small_cluster: Cluster, console: ConsoleFactory) -> None:
    app = console([small_cluster])
    async with app.run_test(size=(80, 24)) as pilot:
        await open_gpus(pilot)
        host = text_of(app, "#gpus-host")  # one message, wrapped at the screen's width
        why = "NVML not available on gpu-01: no NVIDIA driver on this host (NVML library not found)"
        assert " ".join(host.split()) == why
        pane = app.query_one("#pane-gpus")
        muted = component_style(pane, "gpus--muted").color
        assert muted != Color.parse(app.theme_variables["foreground"]).rich_color  # muted, not plain
        drawn = app.query_one("#gpus-host").render_line(0)
        assert {seg.style.color for seg in drawn if seg.text.strip() and seg.style} == {muted}
        assert not noted(app)  # not an error
        assert grid_of(app).host_node is None


async def test_this_hosts_gpus_joined_to_its_node(tmp_path: Path, nvml: list[FakeNvml], small_cluster: Cluster,
                                                  console: ConsoleFactory) -> None:  # fmt: skip
    proc = FakeProc(tmp_path / "proc")
    proc.add(100, cgroup="0::/system.slice/slurmstepd.scope/job_101/step_0/user/task_0\n", cmdline=["python"])
    for pid in range(200, 206):
        proc.add(pid, cgroup=f"0::/system.slice/slurmstepd.scope/job_99{pid - 200}/step_0/user/task_0\n")
    nvml[0] = FakeNvml([
        h100(0, utilisation_pct=87, memory_used=40 * GIB, temperature_c=61, compute=[(100, 20 * GIB)]),
        h100(1, utilisation_pct=3, memory_used=6 * GIB, temperature_c=35,
             compute=[(pid, GIB) for pid in range(200, 206)]),
        h100(2),
    ])  # fmt: skip
    nvml[0].fail("nvmlDeviceGetTemperature", 2, pynvml.NVMLError_GpuIsLost)
    app = console([small_cluster])
    async with app.run_test(size=(80, 24)) as pilot:
        await open_gpus(pilot)
        host = text_of(app, "#gpus-host")
        assert " ".join(host.split()).startswith(
            "this host gpu-01: 3 × NVIDIA H100 80GB HBM3, 2 with processes · node gpu-01 in the grid"
        )
        table = host.split("GPU  UTIL", 1)[1].splitlines()[1:]
        assert len(table) == 3  # a line per GPU, at 80 columns too
        assert re.fullmatch(r"0 +87% +40\.0/80\.0 GiB +61C +100 job 101 alice 20\.0 GiB", table[0])
        # six processes do not fit: cut between two of them, never inside a pid or a job id
        shown, _, more = table[1].rpartition(", …+")
        kept = shown.split("35C", 1)[1].strip().split(", ")
        assert kept[0] == "200 job 990 (not in lab) 1.0 GiB" and len(kept) + int(more) == 6
        assert all(re.fullmatch(r"20\d job 99\d \(not in lab\) 1\.0 GiB", k) for k in kept)
        assert re.fullmatch(r"2 +0% +0\.0/80\.0 GiB +- +error: temperature: GPU is lost", table[2])
        assert all(len(line) <= 80 for line in host.splitlines())
        assert grid_of(app).host_node == "gpu-01"
        # the host's node is marked in the grid
        node = next(seg for seg in grid_of(app).render_line(1) if seg.text.strip() == "gpu-01")
        assert node.style is not None and node.style.underline


async def test_a_replay_shows_no_live_host_gpus(tmp_path: Path, nvml: list[FakeNvml], demo_cluster: Cluster,
                                                clock: FixedClock) -> None:  # fmt: skip
    """A recording is of another time: this host's GPUs now would read as the incident's."""
    from gpuq.config import Config
    from gpuq.service import open_recorder
    from gpuq.tui.app import ConsoleSettings, make_app
    from gpuq.tui.options import ConsoleSetup, console_setup

    nvml[0] = FakeNvml([h100(0, utilisation_pct=50)])
    directory = tmp_path / "incident"
    recorder = open_recorder(directory)
    recording = make_app(ConsoleSetup([demo_cluster], ConsoleSettings(), clock, recorder=recorder))
    async with recording.run_test(size=(80, 24)) as pilot:
        await loaded(pilot)
        # (the read worker shows the snapshot first and records it after)
        await wait_for(pilot, lambda: recorder.bytes_written > 0)
    nvml[0] = FakeNvml([h100(0, utilisation_pct=50)])  # a fresh count of NVML calls
    app = make_app(console_setup(Config(), replay=str(directory), clock=clock))
    async with app.run_test(size=(80, 24)) as pilot:
        await open_gpus(pilot)
        assert text_of(app, "#gpus-host") == "this host's GPUs are not shown while replaying a recording"
        assert grid_of(app).rows and nvml[0].polls == 0
