"""The console says what the data it shows was built without (issue 32 item 3): a cluster whose
credentials may not list nodes gets a `note:` banner above the views, in the sentence the CLI's
`note:` line says, as data (outside text escaped, never markup); a whole read gets none."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from gpuq.model import Unread
from gpuq.model.codec import decode_snapshot, encode_snapshot
from gpuq.service import Cluster, open_cluster
from gpuq.tui.app import GpuqConsole
from gpuq.tui.widgets.bar import Bar
from tests.k8s.double import ApiDouble
from tests.tui.conftest import SMALL, ConsoleFactory, loaded

NODES_NOTE = "note: nodes: forbidden — GPU totals from pods only"


def _kubernetes(tmp_path: Path, double: ApiDouble) -> Cluster:
    kubeconfig = double.kubeconfig(tmp_path / "kubeconfig")
    config = tmp_path / "config.toml"
    config.write_text(f"[backends.kubernetes]\nkubeconfig = {json.dumps(str(kubeconfig))}\nwatch = false\n")
    return open_cluster(backend="kubernetes", config_file=str(config))


def _banner(console: GpuqConsole) -> str | None:
    bar = console.query_one("#unread", Bar)
    return bar.line if bar.display else None


async def test_nodes_forbidden_shows_a_note_banner(tmp_path: Path, console: ConsoleFactory) -> None:
    with ApiDouble() as double:
        double.reply("GET", "/api/v1/nodes", "35-forbidden-403-nodes.json", times=100)
        app = console([_kubernetes(tmp_path, double)])
        async with app.run_test(size=(160, 40)) as pilot:
            await loaded(pilot)
            banner = _banner(app)
            assert banner is not None and banner.startswith(NODES_NOTE), banner
            await pilot.press("2")  # (every view stands on the same read: the banner stays)
            await pilot.pause()
            assert app.view_id == "gpus" and _banner(app) == banner


async def test_a_whole_read_has_no_banner(tmp_path: Path, console: ConsoleFactory) -> None:
    with ApiDouble() as double:
        app = console([_kubernetes(tmp_path, double)])
        async with app.run_test(size=(160, 40)) as pilot:
            await loaded(pilot)
            assert _banner(app) is None


async def test_outside_text_in_the_banner_is_data(tmp_path: Path, console: ConsoleFactory) -> None:
    snapshot = decode_snapshot(SMALL.read_bytes())
    hostile = Unread("nodes\x1b[2J", "forbidden", "[bold]totals\u202e from pods")
    path = tmp_path / "partial.json"
    path.write_bytes(encode_snapshot(replace(snapshot, unread=(hostile,))))
    app = console([open_cluster(snapshot=str(path))])
    async with app.run_test(size=(160, 40)) as pilot:
        await loaded(pilot)
        assert _banner(app) == "note: nodes\\x1b[2J: forbidden — [bold]totals\\u202e from pods"
        shown = str(app.query_one("#unread").render())
        assert "[bold]totals" in shown and "\x1b" not in shown  # (not markup, no escape sent)
