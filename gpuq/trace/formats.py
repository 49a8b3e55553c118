"""The names of the formats and presets `open_trace` reads (no imports: command-line options
list them without loading a reader)."""

from __future__ import annotations

from typing import Final

__all__ = ["FORMATS", "PRESETS"]

#: the presets `--preset` takes: the public traces
PRESETS: Final = ("philly", "helios", "alibaba-pai-2020", "alibaba-gpu-2023")
#: every format `open_trace` reads
FORMATS: Final = ("jobs", "snapshots", "recording", "sacct-json", "sacct-parsable", "csv", *PRESETS)
