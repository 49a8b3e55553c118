"""Trace input: every format gpuq reads a job history from, as a stream of `TraceJob`s.

`record` (the job and the error), `joblog` (gpuq's own `gpuq.jobs/v1`), `snapshots` (a
`gpuq.snapshot/v1` history), `philly` and `presets` (the public traces), `csvmap` (any CSV by a
column mapping), `classes` (the class rules), `sniff` (which format a path holds), `formats`
(their names). Readers stream: a million-job file is never held. Front ends open traces through
`gpuq.service.tracing.open_trace`, which also reads the formats whose readers are backends'.

The names below load their module when first used, so that importing one reader (or a command
that lists the presets) does not load them all.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from gpuq.trace.formats import FORMATS, PRESETS
from gpuq.trace.record import TraceError, TraceJob

if TYPE_CHECKING:
    from gpuq.trace.classes import assign_classes, class_from_field
    from gpuq.trace.csvmap import parse_columns, read_csv
    from gpuq.trace.joblog import read_joblog, write_jobs
    from gpuq.trace.philly import read_philly
    from gpuq.trace.presets import read_alibaba_2023, read_helios, read_pai_2020
    from gpuq.trace.snapshots import follow_snapshots, read_snapshots
    from gpuq.trace.sniff import read_trace, sniff

__all__ = [
    "FORMATS",
    "PRESETS",
    "TraceError",
    "TraceJob",
    "assign_classes",
    "class_from_field",
    "follow_snapshots",
    "parse_columns",
    "read_alibaba_2023",
    "read_csv",
    "read_helios",
    "read_joblog",
    "read_pai_2020",
    "read_philly",
    "read_snapshots",
    "read_trace",
    "sniff",
    "write_jobs",
]

_MODULES = {
    "assign_classes": "classes",
    "class_from_field": "classes",
    "parse_columns": "csvmap",
    "read_csv": "csvmap",
    "read_joblog": "joblog",
    "write_jobs": "joblog",
    "read_philly": "philly",
    "read_alibaba_2023": "presets",
    "read_helios": "presets",
    "read_pai_2020": "presets",
    "follow_snapshots": "snapshots",
    "read_snapshots": "snapshots",
    "read_trace": "sniff",
    "sniff": "sniff",
}


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module 'gpuq.trace' has no attribute {name!r}")
    return getattr(importlib.import_module(f"gpuq.trace.{module}"), name)
