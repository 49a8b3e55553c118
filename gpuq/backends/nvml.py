"""The GPUs of the host gpuq runs on, read through NVML: the only module that touches pynvml.

Every NVML call goes through one choke point (`NvmlReader`, after nvitop's `nvmlQuery`): the
library is imported and initialised lazily, on the first read; every NVML error becomes "not
available" — for the whole host when NVML cannot start (no driver: `NVMLError_LibraryNotFound`),
for one field or one GPU when a call fails mid-poll — and a report is kept for `ttl_s`, so a
console polling every second calls NVML at most once a second however many views ask. `read()`
never raises.

Each process on a GPU is mapped to the Slurm job or Kubernetes pod it runs in, from
`/proc/<pid>/cgroup` (Slurm: `.../job_1234/step_0/...`; Kubernetes: `...pod<uid>...`), else for
Slurm from `SLURM_JOB_ID` (`SLURM_ARRAY_JOB_ID`/`SLURM_ARRAY_TASK_ID` give `1234_5`, the id gpuq
shows) in `/proc/<pid>/environ`; what cannot be read (another user's environment, a process in
another PID namespace, one that has exited) is None, never an error.
"""

from __future__ import annotations

import contextlib
import re
import socket
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["GpuProcess", "HostGpu", "HostGpuReport", "NvmlReader", "job_of_process", "load_pynvml"]


@dataclass(frozen=True, slots=True)
class GpuProcess:
    pid: int
    #: GPU memory the process holds (None: NVML does not say, e.g. without permission)
    used_memory_bytes: int | None
    #: the Slurm job it runs in, as gpuq shows ids (`1234`, array task `1234_5`)
    job_id: str | None
    #: the Kubernetes pod it runs in (its UID)
    pod_uid: str | None
    #: its command line (outside text: show it through `textsafe.visible`); "" when unreadable
    command: str


@dataclass(frozen=True, slots=True)
class HostGpu:
    index: int
    #: "" when NVML could not tell (a GPU lost mid-poll)
    uuid: str
    name: str
    utilisation_pct: int | None
    memory_used_bytes: int | None
    memory_total_bytes: int | None
    temperature_c: int | None
    processes: tuple[GpuProcess, ...]
    #: what failed on this GPU in this poll (its other fields are None where it failed)
    error: str | None = None


@dataclass(frozen=True, slots=True)
class HostGpuReport:
    host: str
    #: False: NVML could not be used at all on this host (`reason` says why; `gpus` is empty)
    available: bool
    reason: str | None
    gpus: tuple[HostGpu, ...]
    #: when it was read (the reader's clock: epoch seconds)
    read_at: float


def load_pynvml() -> Any:
    """The real bindings (package nvidia-ml-py), imported only when a read needs them."""
    import pynvml

    return pynvml


# -- processes -> jobs and pods

#: Slurm's cgroup, v1 (`11:devices:/slurm/uid_1000/job_1234/step_0/task_0`) and v2
#: (`0::/system.slice/slurmstepd.scope/job_1234/step_0/user/task_0`)
_SLURM_CGROUP = re.compile(r"/job_(\d+)(?=/|$)")
#: Kubernetes: systemd driver `kubepods-burstable-pod1b2c3d4e_5f6a_....slice` (dashes as `_`),
#: cgroupfs driver `/kubepods/burstable/pod1b2c3d4e-5f6a-...`; a static pod's UID is 32 hex digits
_POD_CGROUP = re.compile(
    r"pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12}|[0-9a-f]{32})(?=[./]|$)"
)
_DIGITS = re.compile(r"\d+")
#: the most of a command line kept (a process's arguments can be long)
_COMMAND_MAX = 4096


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except (OSError, ValueError):  # gone, another user's, another PID namespace, a bad name
        return None


def _environ(proc: Path, pid: int) -> dict[str, str]:
    raw = _read(proc / str(pid) / "environ")
    if not raw:
        return {}
    wanted = (b"SLURM_JOB_ID=", b"SLURM_ARRAY_JOB_ID=", b"SLURM_ARRAY_TASK_ID=")
    found: dict[str, str] = {}
    for entry in raw.split(b"\0"):
        if entry.startswith(wanted):
            key, _, value = entry.decode("ascii", "replace").partition("=")
            if _DIGITS.fullmatch(value):
                found[key] = value
    return found


def job_of_process(pid: int, proc: Path = Path("/proc")) -> tuple[str | None, str | None]:
    """(Slurm job id, Kubernetes pod UID) of process `pid`, each None where it cannot be told."""
    job = pod = None
    raw = _read(proc / str(pid) / "cgroup")
    for line in (raw or b"").decode("utf-8", "replace").splitlines():
        path = line.split(":", 2)[-1]
        if job is None and (m := _SLURM_CGROUP.search(path)):
            job = m.group(1)
        if pod is None and (m := _POD_CGROUP.search(path)):
            pod = m.group(1).replace("_", "-")
    if pod is not None:
        return job, pod
    env = _environ(proc, pid)
    raw_id = env.get("SLURM_JOB_ID")
    array, task = env.get("SLURM_ARRAY_JOB_ID"), env.get("SLURM_ARRAY_TASK_ID")
    # An array task's cgroup names its own job id (1240); gpuq shows it as 1234_5.
    if array and task and (job is None or job == raw_id):
        return f"{array}_{task}", None
    return job or raw_id, None


def _command(proc: Path, pid: int) -> str:
    raw = _read(proc / str(pid) / "cmdline")
    if raw and raw.strip(b"\0"):
        text = raw.strip(b"\0").replace(b"\0", b" ").decode("utf-8", "replace")
    else:
        text = (_read(proc / str(pid) / "comm") or b"").decode("utf-8", "replace").strip()
    return text[:_COMMAND_MAX]


# -- NVML

#: pynvml's unversioned names raise NVMLLibraryMismatchError where the driver lacks the newest
#: version; the versioned ones, newest first, fall back cleanly
_PROCESS_FUNCTIONS = (
    ("nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2",
     "nvmlDeviceGetComputeRunningProcesses"),
    ("nvmlDeviceGetGraphicsRunningProcesses_v3", "nvmlDeviceGetGraphicsRunningProcesses_v2",
     "nvmlDeviceGetGraphicsRunningProcesses"),
)  # fmt: skip


def _why_not(lib: Any, exc: BaseException) -> str:
    """The plain reason NVML could not start."""
    if isinstance(exc, ImportError):
        return "the NVML bindings are not installed (Python package nvidia-ml-py)"
    kinds = (
        ("NVMLError_LibraryNotFound", "no NVIDIA driver on this host (NVML library not found)"),
        ("NVMLError_DriverNotLoaded", "the NVIDIA driver is not loaded (NVML: driver not loaded)"),
        ("NVMLError_NoPermission", "no permission to use NVML on this host"),
        ("NVMLError_LibRmVersionMismatch", "the NVIDIA driver and its NVML library differ in version"),
    )
    for name, reason in kinds:
        kind = getattr(lib, name, None)
        if isinstance(kind, type) and isinstance(exc, kind):
            return reason
    return f"NVML could not start: {_text(exc)}"


def _text(exc: BaseException) -> str:
    try:
        return str(exc) or type(exc).__name__
    except Exception:  # noqa: BLE001 - an error's own message must not fail the read
        return type(exc).__name__


class NvmlReader:
    """Reads the host's GPUs through NVML: lazily initialised, every error mapped to "not
    available", each report kept for `ttl_s` seconds. Safe to share between threads.

    `library_loader` returns the pynvml module (tests hand in a stand-in with the same
    functions and pynvml's own error classes); `clock` gives epoch seconds (the report's
    `read_at`, and the cache's age); `proc` is the /proc tree processes are looked up in.
    """

    def __init__(
        self,
        library_loader: Callable[[], Any] = load_pynvml,
        clock: Callable[[], float] = time.time,
        ttl_s: float = 1.0,
        *,
        proc: Path = Path("/proc"),
        host: str | None = None,
    ) -> None:
        self._loader = library_loader
        self._clock = clock
        self._ttl_s = ttl_s
        self._proc = proc
        self._host = host
        self._lib: Any = None
        self._cached: HostGpuReport | None = None
        self._lock = threading.Lock()

    @property
    def host(self) -> str:
        if self._host is None:
            self._host = socket.gethostname()
        return self._host

    def read(self) -> HostGpuReport:
        """The host's GPUs now, or as read less than `ttl_s` ago. Never raises."""
        with self._lock:
            now = self._clock()
            cached = self._cached
            # A clock that went back (the wall clock set) ends the cached report's life too.
            if cached is not None and cached.read_at <= now < cached.read_at + self._ttl_s:
                return cached
            try:
                report = self._poll(now)
            except Exception as exc:  # noqa: BLE001 - a console's poll must never fail on the host's GPUs
                report = self._unavailable(now, f"NVML read failed: {type(exc).__name__}: {_text(exc)}")
            self._cached = report
            return report

    def close(self) -> None:
        """Shut NVML down if this reader started it (a later read starts it again)."""
        with self._lock:
            lib, self._lib, self._cached = self._lib, None, None
            if lib is not None:
                self._quietly(lib, "nvmlShutdown")

    def _unavailable(self, now: float, reason: str) -> HostGpuReport:
        return HostGpuReport(self.host, False, reason, (), now)

    def _start(self) -> tuple[Any, str | None]:
        """(the initialised library, None) or (the module if it loaded, why NVML is unusable)."""
        if self._lib is not None:
            return self._lib, None
        lib: Any = None
        try:
            lib = self._loader()
            lib.nvmlInit()
        except Exception as exc:  # noqa: BLE001 - ImportError, NVMLError or a broken library: all "not available"
            return lib, _why_not(lib, exc)
        self._lib = lib
        return lib, None

    def _poll(self, now: float) -> HostGpuReport:
        lib, why = self._start()
        if why is not None:
            return self._unavailable(now, why)
        errors = self._errors(lib)
        try:
            count = int(lib.nvmlDeviceGetCount())
        except errors as exc:
            # The driver went away under a started NVML: start afresh on the next read.
            self._lib = None
            self._quietly(lib, "nvmlShutdown")
            return self._unavailable(now, f"NVML could not count the GPUs: {_text(exc)}")
        gpus = tuple(self._gpu(lib, errors, index) for index in range(count))
        return HostGpuReport(self.host, True, None, gpus, now)

    @staticmethod
    def _errors(lib: Any) -> tuple[type[BaseException], ...]:
        kinds = [getattr(lib, "NVMLError", None), getattr(lib, "NVMLLibraryMismatchError", None)]
        return tuple(k for k in kinds if isinstance(k, type) and issubclass(k, BaseException))

    @staticmethod
    def _quietly(lib: Any, name: str) -> None:
        with contextlib.suppress(Exception):  # shutting down a library that already failed
            getattr(lib, name)()

    def _gpu(self, lib: Any, errors: tuple[type[BaseException], ...], index: int) -> HostGpu:
        failed: list[str] = []
        not_supported = getattr(lib, "NVMLError_NotSupported", None)

        def field(what: str, call: Callable[[], Any]) -> Any:
            try:
                return call()
            except errors as exc:
                # Not supported (temperature or utilisation on some boards, MIG) is no fault.
                if not (isinstance(not_supported, type) and isinstance(exc, not_supported)):
                    failed.append(f"{what}: {_text(exc)}")
                return None

        handle = field("handle", lambda: lib.nvmlDeviceGetHandleByIndex(index))
        if handle is None:
            return HostGpu(index, "", "", None, None, None, None, (), "; ".join(failed) or "no handle")
        name = field("name", lambda: lib.nvmlDeviceGetName(handle))
        uuid = field("uuid", lambda: lib.nvmlDeviceGetUUID(handle))
        util = field("utilisation", lambda: lib.nvmlDeviceGetUtilizationRates(handle))
        memory = field("memory", lambda: lib.nvmlDeviceGetMemoryInfo(handle))
        temperature = field("temperature", lambda: lib.nvmlDeviceGetTemperature(handle, lib.NVML_TEMPERATURE_GPU))
        processes = field("processes", lambda: self._processes(lib, errors, handle))
        return HostGpu(
            index=index,
            uuid=_str(uuid),
            name=_str(name),
            utilisation_pct=None if util is None else int(util.gpu),
            memory_used_bytes=None if memory is None else int(memory.used),
            memory_total_bytes=None if memory is None else int(memory.total),
            temperature_c=None if temperature is None else int(temperature),
            processes=processes or (),
            error="; ".join(failed) or None,
        )

    def _processes(self, lib: Any, errors: tuple[type[BaseException], ...], handle: Any) -> tuple[GpuProcess, ...]:
        """Compute then graphics processes, each pid once (a process doing both is listed by each)."""
        missing = getattr(lib, "NVMLError_FunctionNotFound", ())
        seen: dict[int, GpuProcess] = {}
        for names in _PROCESS_FUNCTIONS:
            for entry in self._call_newest(lib, missing, names, handle):
                pid = int(entry.pid)
                if pid not in seen:
                    used = getattr(entry, "usedGpuMemory", None)
                    job, pod = job_of_process(pid, self._proc)
                    seen[pid] = GpuProcess(pid, None if used is None else int(used), job, pod,
                                           _command(self._proc, pid))  # fmt: skip
        return tuple(sorted(seen.values(), key=lambda p: p.pid))

    @staticmethod
    def _call_newest(lib: Any, missing: Any, names: Iterable[str], handle: Any) -> list[Any]:
        last: BaseException | None = None
        for name in names:
            function = getattr(lib, name, None)
            if function is None:
                continue
            try:
                return list(function(handle))
            except missing as exc:  # this driver lacks that version: try the one before it
                last = exc
        if last is not None:
            raise last
        return []


def _str(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bytes):  # older bindings return bytes
        return value.decode("utf-8", "replace")
    return str(value)
