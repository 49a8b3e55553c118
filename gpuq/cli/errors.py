"""The one place where gpuq errors become exit codes and messages.

0 ok, 1 refused (validation, policy, not found), 2 usage / bad input, 3 backend unreachable,
4 permission denied; the codes come from each `gpuq.errors` class. click's own usage errors
already exit 2.
"""

from __future__ import annotations

from typing import IO, Any

import click

from gpuq.errors import EXIT_CODES, GpuqError
from gpuq.textsafe import visible

__all__ = ["EXIT_CODES", "GpuqClickError", "to_click_error", "visible_message"]


class GpuqClickError(click.ClickException):
    """A GpuqError carried through click: printed as `gpuq: error: …`, never a traceback."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        # click declares exit_code on the class; the code here depends on the gpuq error.
        self.exit_code = exit_code  # type: ignore[misc]

    def show(self, file: IO[Any] | None = None) -> None:
        # The message may quote outside text (a job id, a backend's answer): shown as data.
        click.echo(f"gpuq: error: {visible(self.format_message())}", err=True, file=file)


def visible_message(exc: click.ClickException) -> click.ClickException:
    """click's own usage errors quote what was typed (`no such option: …`, `'…' is not one of
    …`): control characters in it are shown as escapes too."""
    vars(exc)["message"] = visible(exc.message)  # click types it Final; only how it reads changes
    return exc


def to_click_error(exc: GpuqError) -> GpuqClickError:
    return GpuqClickError(str(exc), exc.exit_code)
