"""host_gpu_view: cells as every front end shows them, and job ids checked against the cluster."""

from __future__ import annotations

import pytest

from gpuq.model.codec import read_snapshot_file
from gpuq.service import GpuProcess, HostGpu, HostGpuReport
from gpuq.views.columns import HOST_GPUS, TABLES
from gpuq.views.hostgpus import format_bytes, format_memory, host_gpu_view
from tests.cli.conftest import SMALL
from tests.nvml.conftest import NOW
from tests.nvml.fakenvml import GIB

MIB = 1024**2


def _gpu(index: int, *processes: GpuProcess, **fields: object) -> HostGpu:
    values: dict[str, object] = {"uuid": f"GPU-{index}", "name": "NVIDIA H200", "utilisation_pct": 87,
                                 "memory_used_bytes": 40 * GIB, "memory_total_bytes": 141 * GIB,
                                 "temperature_c": 54, "processes": processes, "error": None}  # fmt: skip
    values.update(fields)
    return HostGpu(index, **values)  # type: ignore[arg-type]


def _report(*gpus: HostGpu, host: str = "gpu-01") -> HostGpuReport:
    return HostGpuReport(host, True, None, gpus, NOW)


@pytest.mark.parametrize(
    ("value", "text"),
    [(None, "-"), (0, "0 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (512 * MIB, "512.0 MiB"),
     (int(79.6 * GIB), "79.6 GiB"), (3 * 1024**4, "3.0 TiB"), (5000 * 1024**4, "5000.0 TiB")],
)  # fmt: skip
def test_format_bytes(value: int | None, text: str) -> None:
    assert format_bytes(value) == text


def test_format_memory_in_the_totals_unit() -> None:
    assert format_memory(512 * MIB, 80 * GIB) == "0.5/80.0 GiB"
    assert format_memory(0, 16 * MIB) == "0.0/16.0 MiB"
    assert format_memory(None, None) == "-"
    assert format_memory(None, 80 * GIB) == "-/80.0 GiB"


def test_rows_in_index_order_with_their_cells() -> None:
    view = host_gpu_view(_report(_gpu(1, utilisation_pct=None, temperature_c=None, error="utilisation: GPU is lost"),
                                 _gpu(0)))  # fmt: skip
    assert [r.gpu.index for r in view.rows] == [0, 1]
    first, lost = view.rows
    assert (first.utilisation, first.memory, first.temperature) == ("87%", "40.0/141.0 GiB", "54C")
    assert (lost.utilisation, lost.temperature, lost.gpu.error) == ("-", "-", "utilisation: GPU is lost")
    assert view.note is None and view.available and view.busy == 0


def test_processes_labelled_by_job_user_and_whether_the_cluster_has_them() -> None:
    snapshot = read_snapshot_file(SMALL)  # cluster "lab": gpu-01..03; job 101 is alice's
    known = GpuProcess(10, 20 * GIB, "101", None, "python train.py")
    unknown = GpuProcess(11, None, "999", None, "python eval.py")
    pod = GpuProcess(12, GIB, None, "1b2c3d4e-5f6a-7b8c-9d0e-1f2a3b4c5d6e", "torchrun")
    bare = GpuProcess(13, 512 * MIB, None, None, "/usr/bin/python3 -m x")
    nothing = GpuProcess(14, None, None, None, "")
    view = host_gpu_view(_report(_gpu(0, known, unknown, pod, bare, nothing)), snapshot)
    rows = view.rows[0].processes
    assert [p.label for p in rows] == [
        "10 job 101 alice 20.0 GiB",
        "11 job 999 (not in lab)",
        "12 pod 1b2c3d4e-5f6a-7b8c-9d0e-1f2a3b4c5d6e 1.0 GiB",
        "13 python3 512.0 MiB",
        "14 ?",
    ]
    assert [(p.in_cluster, p.user) for p in rows] == [(True, "alice"), (False, None), (None, None), (None, None),
                                                       (None, None)]  # fmt: skip
    assert (view.cluster, view.unchecked, view.busy) == ("lab", None, 1)


def test_without_a_snapshot_job_ids_are_shown_unchecked() -> None:
    view = host_gpu_view(_report(_gpu(0, GpuProcess(10, None, "101", None, "python"))))
    (p,) = view.rows[0].processes
    assert (p.label, p.in_cluster, p.user, view.cluster) == ("10 job 101", None, None, None)


@pytest.mark.parametrize(("host", "checked"), [("gpu-01", True), ("gpu-01.lab.example", True), ("laptop", False),
                                               ("gpu-0", False)])  # fmt: skip
def test_job_ids_are_checked_only_on_a_node_of_that_cluster(host: str, checked: bool) -> None:
    """Job 101 on a host outside cluster lab is some other cluster's job 101: not alice's."""
    snapshot = read_snapshot_file(SMALL)
    view = host_gpu_view(_report(_gpu(0, GpuProcess(10, None, "101", None, "python")), host=host), snapshot)
    (p,) = view.rows[0].processes
    if checked:
        assert (p.label, p.in_cluster, view.cluster, view.unchecked) == ("10 job 101 alice", True, "lab", None)
    else:
        assert (p.label, p.in_cluster, view.cluster) == ("10 job 101", None, None)
        assert view.unchecked == f"{host} is not a node of cluster lab: job ids not checked against it"


def test_no_nvml_is_a_note_and_no_rows() -> None:
    view = host_gpu_view(HostGpuReport("vm", False, "no NVIDIA driver on this host (NVML library not found)", (), NOW))
    assert view.rows == () and not view.available
    assert view.note == "NVML not available on vm: no NVIDIA driver on this host (NVML library not found)"


def test_the_table_spec() -> None:
    assert TABLES["host-gpus"] is HOST_GPUS
    ranks = {c.name: c.rank for c in HOST_GPUS.columns}
    assert all(ranks[n] == 0 for n in ("GPU", "UTIL", "MEMORY", "TEMP", "PROCESSES"))
    assert max(ranks, key=lambda n: ranks[n]) == "UUID"  # dropped first
