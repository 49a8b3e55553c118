"""Quitting the console stops the clusters' background work (issue 32): a Kubernetes cluster's
watch threads are stopped and joined before the console's `run` returns, so the process never
finalises under a thread inside a read."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from gpuq.service import open_cluster
from tests.k8s.double import ApiDouble
from tests.tui.conftest import ConsoleFactory, loaded, wait_for


def _watching() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("gpuq-k8s-") and t.is_alive()]


async def test_quit_stops_and_joins_the_kubernetes_watches(tmp_path: Path, console: ConsoleFactory) -> None:
    with ApiDouble() as double:
        kubeconfig = double.kubeconfig(tmp_path / "kubeconfig")
        config = tmp_path / "config.toml"
        config.write_text(f"[backends.kubernetes]\nkubeconfig = {json.dumps(str(kubeconfig))}\n")
        cluster = open_cluster(backend="kubernetes", config_file=str(config))
        app = console([cluster])
        async with app.run_test(size=(160, 40)) as pilot:
            await loaded(pilot)
            await wait_for(pilot, lambda: len(double.requests(watch=True)) >= 5)  # (the console watches)
            assert _watching()
            await pilot.press("q")
        assert _watching() == []  # (joined on quit: nothing left to wait for)
