"""The console's footer keeps only the keys it shows: switching views over and over does not
keep every footer key ever shown alive (Textual's Footer alone does)."""

from __future__ import annotations

import gc

from textual.widgets import Footer
from textual.widgets._footer import FooterKey

from gpuq.service import Cluster
from gpuq.tui.widgets.footer import ConsoleFooter, watcher_count
from tests.tui.conftest import ConsoleFactory, loaded


def _live_footer_keys() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, FooterKey))


async def test_view_switches_keep_the_footer_keys_bounded(small_cluster: Cluster, console: ConsoleFactory) -> None:
    app = console([small_cluster])
    async with app.run_test(size=(160, 40)) as pilot:
        await loaded(pilot)
        footer = app.query_one(Footer)
        assert isinstance(footer, ConsoleFooter)
        views = ["gpus", "sla", "preemptions", "queue"]
        counts: list[tuple[int, int]] = []
        for n in range(24):
            app.action_show_view(views[n % len(views)])
            await pilot.pause(0.05)
            if n in (3, 23):
                counts.append((watcher_count(footer), _live_footer_keys()))
        shown = len(footer.query(FooterKey))
        (watchers_early, keys_early), (watchers_late, keys_late) = counts
        assert shown > 0 and watchers_late <= shown + 2  # one watcher per key shown (and spare)
        assert watchers_late <= watchers_early + 2 and keys_late <= keys_early + 2 * shown
