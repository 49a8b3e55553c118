"""What the console benchmarks share: a median timer and an app that shows one pane alone with
the console's stylesheet and theme variables (imported by bench_console_*.py, run as scripts
from this folder)."""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.app import App, ComposeResult

from gpuq.tui.app import GpuqConsole

__all__ = ["PaneApp", "median"]


def median(fn: Callable[[], Any], runs: int) -> tuple[float, Any]:
    """The median time of `runs` calls of `fn`, and its last result."""
    times, result = [], None
    for _ in range(runs):
        started = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


class PaneApp(App[None]):
    """The pane alone, with the console's stylesheet and theme variables."""

    CSS_PATH = str(Path(sys.modules[GpuqConsole.__module__].__file__ or "").with_name("gpuq.tcss"))
    _FALLBACKS = GpuqConsole._FALLBACKS
    get_theme_variable_defaults = GpuqConsole.get_theme_variable_defaults

    def __init__(self, pane: Any) -> None:
        super().__init__()
        self.bench_pane = pane

    def compose(self) -> ComposeResult:
        yield self.bench_pane
