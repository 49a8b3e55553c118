"""An in-process stand-in for the pynvml module: the functions gpuq calls, with NVML's semantics.

It raises pynvml's own error classes (the real module imports fine without a driver): nothing
works before `nvmlInit` (`NVMLError_Uninitialized`), an index past the last GPU is
`NVMLError_InvalidArgument`, a missing library is `NVMLError_LibraryNotFound` at init. Faults are
set per function and GPU from a given poll on (a poll = one `nvmlDeviceGetCount` call), and every
call is counted, so a test can tell whether NVML was asked again.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pynvml

__all__ = ["FakeGpu", "FakeNvml", "h100", "library_missing"]

GIB = 1024**3


@dataclass
class FakeGpu:
    name: str = "NVIDIA H100 80GB HBM3"
    uuid: str = "GPU-00000000-0000-0000-0000-000000000000"
    utilisation_pct: int = 0
    memory_used: int = 0
    memory_total: int = 80 * GIB
    temperature_c: int = 35
    #: (pid, used GPU memory in bytes or None) of the compute processes
    compute: list[tuple[int, int | None]] = field(default_factory=list)
    graphics: list[tuple[int, int | None]] = field(default_factory=list)


def h100(index: int, **changes: Any) -> FakeGpu:
    return FakeGpu(uuid=f"GPU-{index:08x}-1111-2222-3333-444455556666", **changes)


class FakeNvml:
    """Pass `FakeNvml(...)` where pynvml is expected (`NvmlReader(library_loader=lambda: fake)`)."""

    NVML_TEMPERATURE_GPU = pynvml.NVML_TEMPERATURE_GPU
    NVMLError = pynvml.NVMLError
    NVMLLibraryMismatchError = pynvml.NVMLLibraryMismatchError

    def __init__(self, gpus: list[FakeGpu], *, init_error: type[pynvml.NVMLError] | None = None,
                 missing: tuple[str, ...] = ()) -> None:  # fmt: skip
        self.gpus = gpus
        self.init_error = init_error
        #: functions this "driver" lacks (an older one): they raise NVMLError_FunctionNotFound
        self.missing = set(missing)
        self.calls: Counter[str] = Counter()
        self.initialised = 0
        self.polls = 0
        #: (function, GPU index) -> (first poll it fails on, error class)
        self.faults: dict[tuple[str, int], tuple[int, type[pynvml.NVMLError]]] = {}

    def __getattr__(self, name: str) -> Any:
        if name.startswith("NVMLError_"):  # every error class of the real bindings
            return getattr(pynvml, name)
        raise AttributeError(name)

    def fail(self, function: str, index: int, error: type[pynvml.NVMLError], *, from_poll: int = 1) -> None:
        self.faults[(function, index)] = (from_poll, error)

    # -- what NVML does

    def _enter(self, function: str, index: int | None = None) -> None:
        self.calls[function] += 1
        if function in self.missing:
            raise pynvml.NVMLError_FunctionNotFound()
        if function != "nvmlInit" and not self.initialised:
            raise pynvml.NVMLError_Uninitialized()
        if index is not None:
            fault = self.faults.get((function, index))
            if fault is not None and self.polls >= fault[0]:
                raise fault[1]()

    def nvmlInit(self) -> None:
        self._enter("nvmlInit")
        if self.init_error is not None:
            raise self.init_error()
        self.initialised += 1

    def nvmlShutdown(self) -> None:
        self._enter("nvmlShutdown")
        self.initialised -= 1

    def nvmlDeviceGetCount(self) -> int:
        self.polls += 1
        self._enter("nvmlDeviceGetCount", -1)
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> SimpleNamespace:
        self._enter("nvmlDeviceGetHandleByIndex", index)
        if not 0 <= index < len(self.gpus):
            raise pynvml.NVMLError_InvalidArgument()
        return SimpleNamespace(index=index)

    def _gpu(self, function: str, handle: SimpleNamespace) -> FakeGpu:
        index: int = handle.index
        self._enter(function, index)
        return self.gpus[index]

    def nvmlDeviceGetName(self, handle: SimpleNamespace) -> str:
        return self._gpu("nvmlDeviceGetName", handle).name

    def nvmlDeviceGetUUID(self, handle: SimpleNamespace) -> str:
        return self._gpu("nvmlDeviceGetUUID", handle).uuid

    def nvmlDeviceGetUtilizationRates(self, handle: SimpleNamespace) -> SimpleNamespace:
        gpu = self._gpu("nvmlDeviceGetUtilizationRates", handle)
        return SimpleNamespace(gpu=gpu.utilisation_pct, memory=gpu.utilisation_pct // 2)

    def nvmlDeviceGetMemoryInfo(self, handle: SimpleNamespace) -> SimpleNamespace:
        gpu = self._gpu("nvmlDeviceGetMemoryInfo", handle)
        return SimpleNamespace(total=gpu.memory_total, used=gpu.memory_used, free=gpu.memory_total - gpu.memory_used)

    def nvmlDeviceGetTemperature(self, handle: SimpleNamespace, sensor: int) -> int:
        gpu = self._gpu("nvmlDeviceGetTemperature", handle)
        if sensor != pynvml.NVML_TEMPERATURE_GPU:
            raise pynvml.NVMLError_InvalidArgument()
        return gpu.temperature_c

    @staticmethod
    def _processes(entries: list[tuple[int, int | None]]) -> list[SimpleNamespace]:
        return [SimpleNamespace(pid=pid, usedGpuMemory=used, gpuInstanceId=0xFFFFFFFF, computeInstanceId=0xFFFFFFFF)
                for pid, used in entries]  # fmt: skip

    def nvmlDeviceGetComputeRunningProcesses_v3(self, handle: SimpleNamespace) -> list[SimpleNamespace]:
        return self._processes(self._gpu("nvmlDeviceGetComputeRunningProcesses_v3", handle).compute)

    def nvmlDeviceGetComputeRunningProcesses_v2(self, handle: SimpleNamespace) -> list[SimpleNamespace]:
        return self._processes(self._gpu("nvmlDeviceGetComputeRunningProcesses_v2", handle).compute)

    def nvmlDeviceGetGraphicsRunningProcesses_v3(self, handle: SimpleNamespace) -> list[SimpleNamespace]:
        return self._processes(self._gpu("nvmlDeviceGetGraphicsRunningProcesses_v3", handle).graphics)

    def nvmlDeviceGetGraphicsRunningProcesses_v2(self, handle: SimpleNamespace) -> list[SimpleNamespace]:
        return self._processes(self._gpu("nvmlDeviceGetGraphicsRunningProcesses_v2", handle).graphics)


def library_missing() -> FakeNvml:
    """A host without a driver: nvmlInit raises NVMLError_LibraryNotFound, as pynvml does there."""
    return FakeNvml([], init_error=pynvml.NVMLError_LibraryNotFound)
