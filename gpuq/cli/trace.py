"""`gpuq trace`: job traces. `gpuq trace export` writes a live cluster's job history as one.

    gpuq trace export --backend slurm --since 30d -o last-month.jsonl
    gpuq trace export --backend slurm --since 2026-11-01 --until 2026-12-01 --format sacct -o nov.txt
    gpuq trace export --backend kubernetes --context prod --since 7d -o -

The group is lazy like the root (`_SUBCOMMANDS`): a subcommand's module loads when it is used.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import stat
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO

import click

from gpuq.cli.options import App, global_options, pass_app
from gpuq.cli.output import writing, writing_stdout
from gpuq.errors import BadInput
from gpuq.service.history_export import GPUQ_FORMAT, export_history, parse_when, window_now
from gpuq.textsafe import visible

__all__ = ["export", "trace"]

#: subcommand -> "module:attribute" (this module's own, and any another part adds)
_SUBCOMMANDS: dict[str, str] = {"export": "gpuq.cli.trace:export"}
#: what `--format` may name: gpuq's job log, or a backend's own accounting format
FORMATS = (GPUQ_FORMAT, "sacct")


class TraceGroup(click.Group):
    """Subcommands imported when used (`_SUBCOMMANDS`)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *_SUBCOMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in _SUBCOMMANDS:
            module, _, attr = _SUBCOMMANDS[cmd_name].partition(":")
            self.add_command(getattr(importlib.import_module(module), attr), cmd_name)
        return self.commands.get(cmd_name)


@click.group("trace", cls=TraceGroup)
def trace() -> None:
    """Job traces: export a cluster's job history as one (`gpuq trace export`)."""


def _without_global_output(command: click.Command) -> click.Command:
    """`-o` names the file here: drop the global `-o/--output FORMAT` this command would carry."""
    command.params = [p for p in command.params if p.name != "output"]
    return command


@_without_global_output
@click.command("export")
@click.option(
    "--since",
    required=True,
    metavar="WHEN",
    help="Start of the window: a duration back from now (30d, 12h) or an ISO time (2026-11-01T08:00Z).",
)
@click.option("--until", metavar="WHEN", default="now", show_default=True, help="End of the window (as --since).")
@click.option(
    "-o", "--output", "dest", metavar="FILE", default="-", show_default=True, help="Where to write it ('-': stdout)."
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS, case_sensitive=False),
    default=GPUQ_FORMAT,
    show_default=True,
    help="gpuq: gpuq's job log (gpuq.jobs/v1); sacct: Slurm's own sacct --parsable2 output.",
)
@global_options
@pass_app
def export(app: App, since: str, until: str, dest: str, fmt: str) -> None:
    """Write the cluster's jobs over a window as a trace (gpuq.jobs/v1 JSON lines, streaming).

    Slurm: sacct's accounting (every run of a requeued job merged into one); Kubernetes: the
    GPU pods of every phase the API server still holds; demo: the simulated jobs. Exit 3 when
    the backend cannot be reached, 1 for a backend without history.
    """
    # (on the cluster's clock, as every other time it shows: the demo's runs ahead of the wall)
    now = window_now(app.cluster, (app.injected.clock or time.time)())
    start = parse_when(since, now, "--since")
    end = parse_when(until, now, "--until")
    running = export_history(app.cluster, since=start, until=end, fmt=fmt.lower())
    try:
        if dest == "-":
            with writing_stdout():
                _write(running.lines, sys.stdout)
            return
        _write_file(Path(dest), running.lines)
    finally:
        running.close()  # (a pipe closed early: the backend's read stops now)
    window = f"{running.meta['since']} .. {running.meta['until']}"
    what = "jobs" if running.format == GPUQ_FORMAT else "sacct records"
    click.echo(
        f"gpuq: wrote {running.jobs} {what} of {visible(running.cluster) or running.backend} ({running.backend}, "
        f"{window}) to {visible(dest)}",
        err=True,
    )


def _write(lines: Iterable[str], out: IO[str]) -> None:
    write = out.write
    for line in lines:
        write(line)
    out.flush()


@contextlib.contextmanager
def _opening(shown: str) -> Iterator[None]:
    """An `-o` place that cannot be opened is a bad argument (exit 2), not a failed write."""
    try:
        yield
    except OSError as exc:
        raise BadInput(f"{shown}: cannot write there: {exc.strerror or exc}") from None


def _write_file(path: Path, lines: Iterable[str]) -> None:
    """Write to a temporary file beside `path`, renamed over it once complete: an export that
    fails half-way leaves no half-written trace (nor clobbers an older one). A symbolic link's
    target is what is replaced (the link stays); a pipe, a device or a socket is written into
    as it is (a rename would put a plain file where it was). A write that fails (a full disk)
    is `OutputError` (`gpuq.cli.output.writing`)."""
    shown = f"-o {visible(str(path))}"
    with _opening(shown):
        target = path.resolve()  # (through links; a file not there yet is fine: only its folder must be)
        mode = target.stat().st_mode if target.exists() else None
    if mode is not None and stat.S_ISDIR(mode):
        raise BadInput(f"{shown}: is a directory")
    if mode is not None and not stat.S_ISREG(mode):
        with _opening(shown):
            out = open(target, "w", encoding="utf-8", newline="\n")  # noqa: SIM115 - closed below
        with writing(f"{shown}: cannot write the trace"), out:
            _write(lines, out)
        return
    with _opening(shown):
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    try:
        with writing(f"{shown}: cannot write the trace"):
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as out:
                _write(lines, out)
            os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise

