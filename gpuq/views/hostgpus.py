"""The host's own GPUs (NVML): one row per GPU with its load and the processes on it, each named
by the Slurm job or pod it runs in, and whether the cluster knows that job.

`host_gpu_view(report, snapshot)` is what `gpuq gpus --local` prints and the console's GPUs view
shows; `snapshot` (None: not read) tells which job ids the cluster knows and their users. Job ids
are looked up only when this host is one of the snapshot's nodes (its name, or its name up to the
first dot): a job 1234 on a host outside that cluster is another cluster's job 1234.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpuq.model import Snapshot
    from gpuq.service import GpuProcess, HostGpu, HostGpuReport

__all__ = ["HostGpuRow", "HostGpuView", "ProcessRow", "format_bytes", "format_memory", "host_gpu_view"]

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")
#: what a cell shows for a value NVML did not give
MISSING = "-"


def _unit(value: int) -> tuple[float, str]:
    scaled, unit = float(value), _UNITS[0]
    for unit in _UNITS:
        if scaled < 1024 or unit == _UNITS[-1]:
            break
        scaled /= 1024
    return scaled, unit


def _number(scaled: float, unit: str) -> str:
    return f"{scaled:.0f}" if unit == "B" else f"{scaled:.1f}"


def format_bytes(value: int | None) -> str:
    """`512 B`, `20.0 MiB`, `79.6 GiB` (binary units, as nvidia-smi's MiB)."""
    if value is None:
        return MISSING
    scaled, unit = _unit(value)
    return f"{_number(scaled, unit)} {unit}"


def format_memory(used: int | None, total: int | None) -> str:
    """`40.1/79.6 GiB`: used and total in the total's unit (the unit once, the numbers line up)."""
    if used is None or total is None:
        return MISSING if used is None and total is None else f"{format_bytes(used)}/{format_bytes(total)}"
    _, unit = _unit(total)
    factor = 1024 ** _UNITS.index(unit)
    return f"{_number(used / factor, unit)}/{_number(total / factor, unit)} {unit}"


@dataclass(frozen=True, slots=True)
class ProcessRow:
    process: GpuProcess
    #: whether the cluster's snapshot has its job (None: no job id, or no snapshot read)
    in_cluster: bool | None
    #: the job's user, from the snapshot
    user: str | None
    #: one item as a table lists it: `4242 job 1234 alice 20.0 GiB`, `4242 pod 1b2c… `,
    #: `4242 job 77 (not in lab)`, `4242 python3` (outside text: render through `visible`)
    label: str

    @property
    def program(self) -> str:
        """The command's first word without its directory (`/usr/bin/python3 x.py` → `python3`)."""
        return _program(self.process.command)


def _program(command: str) -> str:
    return command.split(" ", 1)[0].rsplit("/", 1)[-1]


@dataclass(frozen=True, slots=True)
class HostGpuRow:
    gpu: HostGpu
    processes: tuple[ProcessRow, ...]

    @property
    def utilisation(self) -> str:
        return MISSING if self.gpu.utilisation_pct is None else f"{self.gpu.utilisation_pct}%"

    @property
    def memory(self) -> str:
        return format_memory(self.gpu.memory_used_bytes, self.gpu.memory_total_bytes)

    @property
    def temperature(self) -> str:
        return MISSING if self.gpu.temperature_c is None else f"{self.gpu.temperature_c}C"


@dataclass(frozen=True, slots=True)
class HostGpuView:
    host: str
    available: bool
    #: why NVML is not available, as one line for the operator (None when it is)
    note: str | None
    read_at: float
    rows: tuple[HostGpuRow, ...]
    #: the cluster the job ids were checked against (None: not checked)
    cluster: str | None
    #: why the job ids were not checked against the snapshot given (this host is not its node)
    unchecked: str | None = None

    @property
    def busy(self) -> int:
        """GPUs with at least one process."""
        return sum(1 for r in self.rows if r.gpu.processes)


def _process_row(process: GpuProcess, snapshot: Snapshot | None) -> ProcessRow:
    in_cluster: bool | None = None
    user: str | None = None
    words = [str(process.pid)]
    if process.job_id is not None:
        words += ["job", process.job_id]
        if snapshot is not None:
            job = snapshot.job(process.job_id)
            in_cluster = job is not None
            if job is not None:
                user = job.user
                words.append(job.user)
            else:
                words.append(f"(not in {snapshot.cluster})")
    elif process.pod_uid is not None:
        words += ["pod", process.pod_uid]
    else:
        words.append(_program(process.command) or "?")
    if process.used_memory_bytes is not None:
        words.append(format_bytes(process.used_memory_bytes))
    return ProcessRow(process, in_cluster, user, " ".join(words))


def _is_node(host: str, snapshot: Snapshot) -> bool:
    """Whether `host` is one of the snapshot's nodes, their names compared up to the first dot
    (Slurm names nodes `gpu-a07`, the host may call itself `gpu-a07.cluster.example`)."""
    short = host.split(".", 1)[0]
    return any(n.name.split(".", 1)[0] == short for n in snapshot.nodes)


def host_gpu_view(report: HostGpuReport, snapshot: Snapshot | None = None) -> HostGpuView:
    """One row per GPU, in index order; processes by pid, each with its job checked against
    `snapshot` when given and this host is one of its nodes. Without NVML, no rows and `note`
    says why."""
    note = None if report.available else f"NVML not available on {report.host}: {report.reason or 'unknown reason'}"
    unchecked = None
    if snapshot is not None and not _is_node(report.host, snapshot):
        unchecked = f"{report.host} is not a node of cluster {snapshot.cluster}: job ids not checked against it"
        snapshot = None
    rows = tuple(
        HostGpuRow(gpu, tuple(_process_row(p, snapshot) for p in gpu.processes))
        for gpu in sorted(report.gpus, key=lambda g: g.index)
    )
    return HostGpuView(report.host, report.available, note, report.read_at, rows,
                       None if snapshot is None else snapshot.cluster, unchecked)  # fmt: skip
