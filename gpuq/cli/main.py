"""The `gpuq` command: a click group, its commands, and the console-script entry point `main`.

Importing this module stays light: command modules import click and gpuq's own pure modules;
Rich, the policy engine and backends load only when a command needs them, Textual only in `tui`.
"""

from __future__ import annotations

import gc
import os
import sys
from typing import Any

import click

from gpuq import __version__
from gpuq.cli.errors import to_click_error
from gpuq.cli.options import global_options
from gpuq.errors import GpuqError

__all__ = ["GpuqGroup", "cli", "main"]


class GpuqGroup(click.Group):
    """A group that turns `GpuqError`s raised by any command into exit codes (cli/errors.py)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except GpuqError as exc:
            raise to_click_error(exc) from None


@click.group(cls=GpuqGroup, invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="gpuq")
@global_options
@click.pass_context
def cli(ctx: click.Context) -> None:
    """Inspect and steer a shared GPU cluster: queue, GPUs, SLA, preemptions, dry-run previews.

    Global options may come before or after the command (`gpuq -o json queue` or
    `gpuq queue -o json`). Without a config file gpuq runs an embedded simulated cluster.

    Exit codes: 0 ok, 1 refused or not found, 2 usage, 3 backend unreachable, 4 permission denied.
    Without a command, `gpuq` shows the overview.
    """
    if ctx.invoked_subcommand is None:
        from gpuq.cli.overview import overview

        ctx.invoke(overview)


def _register() -> None:
    from gpuq.cli import (
        actions,
        audit,
        completion,
        gpus,
        job,
        overview,
        preemptions,
        preview,
        queue,
        sla,
        snapshot,
        tui,
    )

    for command in (
        overview.overview,
        queue.queue,
        gpus.gpus,
        sla.sla,
        preemptions.preemptions,
        job.job,
        preview.preview,
        actions.bump,
        actions.exempt,
        actions.preempt,
        snapshot.snapshot,
        audit.audit,
        completion.completion,
        tui.tui,
    ):
        cli.add_command(command)


_register()


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point (`gpuq = "gpuq.cli.main:main"`)."""
    # A command runs for a moment and builds hundreds of thousands of acyclic objects (jobs, rows,
    # JSON dicts); the cyclic collector would rescan them over and over (half the time of
    # `queue -o json` on 200,000 jobs). Memory is returned by reference counting; `tui` re-enables it.
    gc.disable()
    try:
        cli.main(args=argv, prog_name="gpuq", complete_var="_GPUQ_COMPLETE")
    except BrokenPipeError:
        # `gpuq queue | head`: stop quietly, and keep Python from complaining at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(1)
    except KeyboardInterrupt:
        click.echo("gpuq: interrupted", err=True)
        sys.exit(130)
