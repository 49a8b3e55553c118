"""The console's footer keeps only the keys it shows: switching views over and over does not
keep every footer key ever shown alive (Textual's Footer alone does)."""

from __future__ import annotations

import gc
import weakref

from textual.widgets import Footer
from textual.widgets._footer import FooterKey

from gpuq.service import Cluster
from gpuq.tui.widgets.footer import ConsoleFooter, watcher_count
from tests.tui.conftest import ConsoleFactory, loaded, wait_for


async def test_view_switches_keep_the_footer_keys_bounded(small_cluster: Cluster, console: ConsoleFactory) -> None:
    app = console([small_cluster])
    async with app.run_test(size=(160, 40)) as pilot:
        await loaded(pilot)
        footer = app.query_one(Footer)
        assert isinstance(footer, ConsoleFooter)
        await wait_for(pilot, lambda: footer.query(FooterKey))
        first_keys = [weakref.ref(key) for key in footer.query(FooterKey)]
        views = ["gpus", "sla", "preemptions", "queue"]
        for n in range(24):
            app.action_show_view(views[n % len(views)])
            await pilot.pause(0.05)
        await wait_for(pilot, lambda: footer.query(FooterKey))
        shown = len(footer.query(FooterKey))
        assert shown > 0 and first_keys
        # no key is data-bound to the footer: none leaves a watcher on it (a leak never gets there)
        await wait_for(pilot, lambda: watcher_count(footer) == 0, timeout=5.0)
        gc.collect()
        assert all(ref() is None for ref in first_keys)  # the keys shown first are gone
