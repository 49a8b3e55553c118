"""`gpuq tui`: the live console. Textual is imported only here, and only when the command runs."""

from __future__ import annotations

import gc

import click

from gpuq.cli.options import App, global_options, pass_app
from gpuq.errors import GpuqError

__all__ = ["tui"]


@click.command("tui")
@click.option(
    "--refresh", type=click.FloatRange(min=0.5), default=2.0, show_default=True, help="Seconds between refreshes."
)
@global_options
@pass_app
def tui(app: App, refresh: float) -> None:
    """Open the interactive console (queue, GPUs, SLA, previews, actions)."""
    try:
        from gpuq.tui.app import run_tui  # type: ignore[import-not-found,unused-ignore]
    except ImportError as exc:
        raise GpuqError(
            f"the TUI is not available in this installation ({exc}); the other commands work without it"
        ) from None
    gc.enable()  # main() turns it off for short commands; the TUI runs for hours
    run_tui(app.cluster, refresh_interval=refresh)
