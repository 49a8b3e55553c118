"""Where every command's output reaches stdout, so that output that cannot be written is one clear
error (`gpuq: error: cannot write the output: No space left on device`, exit 1) and not a
traceback. A reader that went away (EPIPE) is not an error: `gpuq.cli.main` ends quietly then.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

from gpuq.errors import GpuqError, GpuqWarning
from gpuq.textsafe import visible

__all__ = [
    "OutputError",
    "show_gpuq_warnings",
    "silence_stdout",
    "write_bytes",
    "write_text",
    "writing",
    "writing_stdout",
]


class OutputError(GpuqError):
    """The command's output could not be written: a full disk, an I/O error."""

    exit_code = 1


def show_gpuq_warnings() -> None:
    """Show every `GpuqWarning` (a backend's word to the operator) as one ``gpuq: warning:`` line
    on stderr; other warnings as Python shows them. Installed once per process."""
    shown = warnings.showwarning
    if getattr(shown, "gpuq", False):
        return

    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
             file: object = None, line: str | None = None) -> None:  # fmt: skip
        if issubclass(category, GpuqWarning):
            sys.stderr.write(f"gpuq: warning: {visible(str(message))}\n")
            sys.stderr.flush()
        else:
            shown(message, category, filename, lineno, file, line)  # type: ignore[arg-type]

    show.gpuq = True  # type: ignore[attr-defined]
    warnings.showwarning = show


def silence_stdout() -> None:
    """Point stdout at /dev/null, so that what is still buffered does not fail again (and
    Python does not report it) when the process ends."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (a test runner's stream)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


@contextmanager
def writing(failure: str, cleanup: Callable[[], None] | None = None) -> Iterator[None]:
    """Around writes (streamed ones too): a failed write becomes `OutputError` ("FAILURE: why"),
    after `cleanup`; a reader that went away (EPIPE) is left to `gpuq.cli.main`, which ends quietly."""
    try:
        yield
    except BrokenPipeError:
        raise
    except OSError as exc:
        if cleanup is not None:
            cleanup()
        raise OutputError(f"{failure}: {exc.strerror or exc}") from None


def writing_stdout() -> AbstractContextManager[None]:
    """`writing` for stdout: once a write failed, stdout points at /dev/null."""
    return writing("cannot write the output", silence_stdout)


def write_text(text: str) -> None:
    """Text on stdout, flushed (so its order with stderr's messages is kept)."""
    with writing_stdout():
        sys.stdout.write(text)
        sys.stdout.flush()


def write_bytes(data: bytes | bytearray) -> None:
    """Encoded output on stdout, through its binary buffer when it has one."""
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:  # (a text-only stream, as a test runner's)
        write_text(data.decode("utf-8"))
        return
    with writing_stdout():
        sys.stdout.flush()
        buffer.write(data)
        buffer.flush()
