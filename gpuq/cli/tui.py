"""`gpuq tui` (and plain `gpuq` on a terminal): the live console. Textual is imported only here,
and only when the command runs."""

from __future__ import annotations

import gc
import sys

import click

from gpuq.cli.options import App, global_options, pass_app
from gpuq.config import REFRESH_MAX_S, REFRESH_MIN_S
from gpuq.errors import BadInput, GpuqError

__all__ = ["has_terminal", "open_console", "tui"]



@click.command("tui")
@click.option("--refresh", type=click.FloatRange(REFRESH_MIN_S, REFRESH_MAX_S), metavar="SECONDS",
              help="Seconds between refreshes (1-3600; default: the config's console.refresh, else 2).")  # fmt: skip
@click.option("--theme", metavar="NAME", help="Colour theme (default: the config's console.theme, else dark).")
@click.option("--read-only", "read_only", is_flag=True, default=False,
              help="Disable every action (bump, exempt, preempt, resume).")  # fmt: skip
@click.option("--record", metavar="DIR", help="Keep every refresh in DIR, to replay the incident later.")
@click.option("--replay", metavar="DIR", help="Open a recording made with --record (read-only), with a scrubber.")
@global_options
@pass_app
def tui(app: App, refresh: float | None, theme: str | None, read_only: bool, record: str | None,
        replay: str | None) -> None:  # fmt: skip
    """Open the interactive console: queue, GPUs, SLA, preemptions, previews and actions."""
    open_console(app, refresh=refresh, theme=theme, read_only=read_only, record=record, replay=replay)


def open_console(app: App, *, refresh: float | None = None, theme: str | None = None, read_only: bool = False,
                 record: str | None = None, replay: str | None = None) -> None:  # fmt: skip
    """Build the console from the options and the config, and run it until the operator quits."""
    if record and replay:
        raise BadInput("give --record or --replay, not both (a recording is replayed read-only)")
    try:
        from gpuq.tui.app import make_app
        from gpuq.tui.options import console_setup
    except ImportError as exc:
        raise GpuqError(
            f"the console is not available in this installation ({exc}); the other commands work without it"
        ) from None
    o = app.options
    # Everything the console is built from is checked first (the config, its keys, the theme, a
    # recording), so a mistake reads the same on a terminal and in a script.
    setup = console_setup(app.config, backend=o.backend, cluster=o.cluster, snapshot=o.snapshot, policy_file=o.policy,
                          seed=o.seed, speed=o.speed, refresh=refresh, theme=theme, read_only=read_only,
                          record=record, replay=replay, clock=app.injected.clock, contexts=o.contexts,
                          flags=app.kube_flags())  # fmt: skip
    console = make_app(setup, owns_process=True)
    if not has_terminal():
        raise BadInput("the console needs a terminal (stdin and stdout); for scripts use `gpuq overview`, "
                       "`gpuq queue -o json` and the other commands")  # fmt: skip
    gc.enable()  # main() turns it off for short commands; the console runs for hours
    console.run()


def has_terminal() -> bool:
    """Whether stdin and stdout are a terminal the console can draw on (patched in tests)."""
    return sys.stdin.isatty() and sys.stdout.isatty()
