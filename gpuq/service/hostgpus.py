"""The GPUs of the host gpuq runs on (NVML), for `gpuq gpus --local` and the console's GPUs view.

One reader serves the whole process (`host_gpus()` without an argument), so a console that
refreshes several views every second still calls NVML at most once per the reader's TTL.
`set_default_reader` swaps it (tests hand in a reader over a stand-in NVML; an embedding program
may want another TTL) and returns the one it replaced.
"""

from __future__ import annotations

import threading

from gpuq.backends.nvml import GpuProcess, HostGpu, HostGpuReport, NvmlReader

__all__ = ["GpuProcess", "HostGpu", "HostGpuReport", "NvmlReader", "host_gpus", "set_default_reader"]

_default: NvmlReader | None = None
_lock = threading.Lock()


def _default_reader() -> NvmlReader:
    global _default
    with _lock:
        if _default is None:
            _default = NvmlReader()
        return _default


def set_default_reader(reader: NvmlReader | None) -> NvmlReader | None:
    """Use `reader` for `host_gpus()` from now on (None: a fresh real one when next needed);
    returns the reader it replaces."""
    global _default
    with _lock:
        previous, _default = _default, reader
        return previous


def host_gpus(reader: NvmlReader | None = None) -> HostGpuReport:
    """This host's GPUs, utilisation, memory, temperature and processes (mapped to Slurm jobs and
    pods). Never raises: without a driver the report says `available=False` and why."""
    return (reader or _default_reader()).read()
