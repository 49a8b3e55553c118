"""The `gpuq` command: a click group, its commands, and the console-script entry point `main`.

Importing this module stays light: a command's module is imported only when that command runs
(`_COMMANDS`); command modules import click and gpuq's own pure modules; Rich, the policy engine
and backends load only when a command needs them, Textual only in `tui`.
"""

from __future__ import annotations

import gc
import importlib
import os
import sys
import threading
from typing import Any

import click

from gpuq import __version__
from gpuq.cli.errors import to_click_error, visible_message
from gpuq.cli.options import PROCESS_END, global_options, opened_app
from gpuq.cli.output import silence_stdout
from gpuq.errors import GpuqError

__all__ = ["GpuqGroup", "cli", "main"]


#: Command name -> "module:attribute". A command's module is imported when the command is looked
#: up (`gpuq queue` loads only gpuq.cli.queue), not when gpuq starts: every invocation would pay
#: for importing all of them, most of it compiling modules where no bytecode cache is written.
_COMMANDS: dict[str, str] = {
    "overview": "gpuq.cli.overview:overview",
    "queue": "gpuq.cli.queue:queue",
    "gpus": "gpuq.cli.gpus:gpus",
    "sla": "gpuq.cli.sla:sla",
    "preemptions": "gpuq.cli.preemptions:preemptions",
    "job": "gpuq.cli.job:job",
    "preview": "gpuq.cli.preview:preview",
    "bump": "gpuq.cli.actions:bump",
    "exempt": "gpuq.cli.actions:exempt",
    "preempt": "gpuq.cli.actions:preempt",
    "resume": "gpuq.cli.actions:resume",
    "snapshot": "gpuq.cli.snapshot:snapshot",
    "audit": "gpuq.cli.audit:audit",
    "completion": "gpuq.cli.completion:completion",
    "config": "gpuq.cli.config_cmd:config",
    "tui": "gpuq.cli.tui:tui",
    "trace": "gpuq.cli.trace:trace",
    "tune": "gpuq.cli.tune:tune_command",
    "replay": "gpuq.cli.replay:replay",
}


class GpuqGroup(click.Group):
    """A group that turns `GpuqError`s raised by any command into exit codes (cli/errors.py), and
    imports each command's module only when that command is used (`_COMMANDS`)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in _COMMANDS:
            module, _, attr = _COMMANDS[cmd_name].partition(":")
            self.add_command(getattr(importlib.import_module(module), attr), cmd_name)
        return self.commands.get(cmd_name)

    def make_context(
        self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any
    ) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.ClickException as exc:
            raise visible_message(exc) from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            try:
                return super().invoke(ctx)
            finally:
                # every way out of a command (its output, a usage error, an error, Ctrl-C) stops
                # and joins what the cluster runs in the background before the process ends
                app = opened_app(ctx)
                if app is not None:
                    app.close()
        except GpuqError as exc:
            raise to_click_error(exc) from None
        except click.ClickException as exc:
            raise visible_message(exc) from None
        except BrokenPipeError:
            # `gpuq overview | head -1`: the reader has all it wanted; stop quietly with 0, as a
            # command whose output fitted in the pipe does (click's own handler would exit 1).
            silence_stdout()
            raise click.exceptions.Exit(0) from None


@click.group(cls=GpuqGroup, invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="gpuq")
@global_options
@click.pass_context
def cli(ctx: click.Context) -> None:
    """Inspect and steer a shared GPU cluster: queue, GPUs, SLA, preemptions, dry-run previews.

    Global options may come before or after the command (`gpuq -o json queue` or
    `gpuq queue -o json`). Without a config file gpuq runs an embedded simulated cluster.

    Exit codes: 0 ok, 1 refused or not found, 2 usage, 3 backend unreachable, 4 permission denied.
    Without a command, `gpuq` opens the console on a terminal, and shows the overview elsewhere.
    """
    if ctx.invoked_subcommand is None:
        if sys.stdout.isatty() and sys.stdin.isatty() and not ctx.resilient_parsing:
            # k9s's habit: on a terminal, the console; in a pipe or a script, the overview
            from gpuq.cli.options import current_app
            from gpuq.cli.tui import open_console

            open_console(current_app(ctx))
            return
        from gpuq.cli.overview import overview

        ctx.invoke(overview)


def _end_at_once(code: object) -> None:
    """End the process now with `code`, once stdout and stderr are flushed, without freeing what
    the command kept (`ProcessEnd`). Returns where that cannot be done as Python would end it: a
    code that is a message (Python prints it), or a flush that fails for another reason than a
    reader gone (Python reports it and exits with 120)."""
    if code is not None and not isinstance(code, int):
        return
    try:
        sys.stdout.flush()
    except BrokenPipeError:  # the reader is gone, as when a command meets it (GpuqGroup.invoke)
        silence_stdout()
        code = 0
    except (OSError, ValueError):
        return
    try:
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    os._exit(code or 0)


def _threads_left() -> bool:
    """Whether a daemon thread still runs: one the backend could not stop in time (a watch
    still opening its request, `ClusterState.stop`). Python would finalise under it, and a thread
    inside OpenSSL then crashes the process (issue 32): such a process ends through os._exit."""
    main_thread = threading.main_thread()
    return any(t.daemon and t.is_alive() for t in threading.enumerate() if t is not main_thread)


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point (`gpuq = "gpuq.cli.main:main"`)."""
    # A command runs for a moment and builds hundreds of thousands of acyclic objects (rows, the
    # containers inside jobs); the cyclic collector would rescan them over and over for nothing.
    # Memory is returned by reference counting; `tui` re-enables the collector.
    gc.disable()
    if sys.stdout is None:  # `gpuq … >&-`: Python found no standard output to write to
        print("gpuq: error: cannot write the output: standard output is closed", file=sys.stderr)
        sys.exit(1)
    if "_GPUQ_COMPLETE" in os.environ:  # a shell asks for completions: answer as gpuq's scripts read them
        from gpuq.cli.completion import register

        register()
    PROCESS_END.armed = True
    try:
        try:
            cli.main(args=argv, prog_name="gpuq", complete_var="_GPUQ_COMPLETE")
        except BrokenPipeError:
            # `gpuq queue | head` (a pipe closed outside a command, e.g. while completing): stop
            # quietly, and keep Python from complaining at exit.
            silence_stdout()
            sys.exit(0)
        except KeyboardInterrupt:
            click.echo("gpuq: interrupted", err=True)
            sys.exit(130)
    except SystemExit as end:  # (click ends every command this way, 0 included)
        if PROCESS_END.kept:
            _end_at_once(end.code)
        if _threads_left():
            code = end.code
            if code is not None and not isinstance(code, int):  # (a message: as Python shows it)
                print(code, file=sys.stderr)
                code = 1
            _end_at_once(code)
        raise
