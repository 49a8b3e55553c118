"""Trace reader tests: the fixture files (written from each format's published description) and
a helper that runs a reader to its end and returns the TraceError it raised."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

from gpuq.trace import TraceError, TraceJob

TRACES = Path(__file__).resolve().parent.parent / "fixtures" / "traces"


def trace_error(read: Callable[[], Iterable[TraceJob]]) -> TraceError:
    """The TraceError reading everything `read` gives raises (the test fails without one)."""
    with pytest.raises(TraceError) as caught:
        for _ in read():
            pass
    return caught.value


def where(error: TraceError) -> tuple[int, int | None]:
    return error.line, error.column
