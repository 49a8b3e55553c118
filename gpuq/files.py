"""Files gpuq reads from outside are regular files: a FIFO, a device or a socket is refused before
it is opened (opening a FIFO with no writer blocks for ever; a device may never end)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from gpuq.errors import BadInput
from gpuq.textsafe import visible

__all__ = ["refuse_special"]

_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))  # fmt: skip


def refuse_special(path: str | Path, what: str) -> None:
    """BadInput when `path` is a FIFO, a device or a socket (`what`: "trace file", "recording",
    "snapshot file", for the message); anything else (a regular file, a directory, nothing at
    all) is left for the caller's own open to judge and report."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return
    for test, kind in _KINDS:
        if test(mode):
            raise BadInput(f"{visible(str(path))}: is {kind}, not a {what}: gpuq reads {what}s from regular files")
