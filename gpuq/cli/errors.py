"""The one place where gpuq errors become exit codes and messages.

0 ok, 1 refused (validation, policy, not found), 2 usage / bad input, 3 backend unreachable,
4 permission denied; the codes come from each `gpuq.errors` class. click's own usage errors
already exit 2.
"""

from __future__ import annotations

from typing import IO, Any

import click

from gpuq.errors import EXIT_CODES, GpuqError

__all__ = ["EXIT_CODES", "GpuqClickError", "to_click_error"]


class GpuqClickError(click.ClickException):
    """A GpuqError carried through click: printed as `gpuq: error: …`, never a traceback."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        # click declares exit_code on the class; the code here depends on the gpuq error.
        self.exit_code = exit_code  # type: ignore[misc]

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"gpuq: error: {self.format_message()}", err=True, file=file)


def to_click_error(exc: GpuqError) -> GpuqClickError:
    return GpuqClickError(str(exc), exc.exit_code)
