"""NvmlReader over the stand-in NVML and the real bindings: no library, one GPU, eight GPUs, a GPU
that fails mid-poll, the TTL cache, lazy init, and never an exception."""

from __future__ import annotations

import ctypes
import json
import sys
from typing import Any

import pynvml
import pytest

from gpuq.backends.nvml import load_pynvml
from gpuq.service import HostGpuReport, NvmlReader, host_gpus
from tests.clock import FixedClock
from tests.nvml.conftest import NOW, FakeProc, ReaderFor
from tests.nvml.fakenvml import GIB, FakeNvml, h100, library_missing

NO_DRIVER = "no NVIDIA driver on this host (NVML library not found)"


class TestNoLibrary:
    def test_stand_in_library_missing(self, reader_for: ReaderFor) -> None:
        report = reader_for(library_missing()).read()
        assert report == HostGpuReport("gpu-01", False, NO_DRIVER, (), NOW)

    @pytest.mark.parametrize(
        ("error", "reason"),
        [
            (pynvml.NVMLError_DriverNotLoaded, "the NVIDIA driver is not loaded (NVML: driver not loaded)"),
            (pynvml.NVMLError_NoPermission, "no permission to use NVML on this host"),
            (pynvml.NVMLError_Unknown, "NVML could not start: Unknown Error"),
        ],
    )
    def test_any_init_error_is_not_available(self, reader_for: ReaderFor, error: type[Any], reason: str) -> None:
        report = reader_for(FakeNvml([h100(0)], init_error=error)).read()
        assert (report.available, report.reason, report.gpus) == (False, reason, ())

    def test_the_real_bindings_without_their_library(self, monkeypatch: pytest.MonkeyPatch, clock: FixedClock) -> None:
        """pynvml's own code when libnvidia-ml.so.1 cannot be loaded (as on these machines)."""

        def no_library(name: str, *args: Any, **kwargs: Any) -> ctypes.CDLL:
            raise OSError(f"{name}: cannot open shared object file: No such file or directory")

        monkeypatch.setattr(pynvml, "nvmlLib", None)
        monkeypatch.setattr(pynvml, "CDLL", no_library)
        report = NvmlReader(clock=clock, host="h").read()
        assert report == HostGpuReport("h", False, NO_DRIVER, (), NOW)

    def test_the_real_bindings_on_this_host(self, clock: FixedClock) -> None:
        """Unpatched: whatever this host has, the reader says it without raising; where the
        library cannot be loaded (no driver), it is the reason above."""
        try:
            ctypes.CDLL("libnvidia-ml.so.1")
        except OSError:
            has_library = False
        else:
            has_library = True
        reader = NvmlReader(clock=clock, host="here")
        report = reader.read()
        reader.close()
        assert report.host == "here" and report.read_at == NOW
        if has_library:
            assert report.available or report.reason != NO_DRIVER
        else:
            assert (report.available, report.reason, report.gpus) == (False, NO_DRIVER, ())

    def test_bindings_not_installed(self, clock: FixedClock) -> None:
        def absent() -> Any:
            raise ImportError("No module named 'pynvml'")

        report = NvmlReader(absent, clock, host="h").read()
        assert report.reason == "the NVML bindings are not installed (Python package nvidia-ml-py)"

    @pytest.mark.parametrize(
        ("module", "forbidden"),
        [
            ("gpuq.service, gpuq.cli.localgpus", ("pynvml",)),
            ("gpuq.views.hostgpus", ("pynvml", "click", "rich", "textual", "gpuq.cli", "gpuq.backends")),
        ],
    )
    def test_importing_loads_no_pynvml(self, module: str, forbidden: tuple[str, ...]) -> None:
        """pynvml loads on the first read only; the view loads nothing of front ends or backends."""
        import subprocess

        code = f"import json, sys; import {module}; print(json.dumps(sorted(sys.modules)))"
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)  # noqa: S603
        loaded = json.loads(out.stdout)
        assert [m for m in loaded if any(m == f or m.startswith(f + ".") for f in forbidden)] == []
        assert load_pynvml() is pynvml


class TestGpus:
    def test_one_gpu(self, reader_for: ReaderFor, proc: FakeProc) -> None:
        proc.add(4242, cgroup="0::/system.slice/slurmstepd.scope/job_1234/step_0/user/task_0\n",
                 cmdline=["python3", "train.py", "--lr", "3e-4"])  # fmt: skip
        fake = FakeNvml([h100(0, utilisation_pct=87, memory_used=40 * GIB, temperature_c=61,
                              compute=[(4242, 39 * GIB)])])  # fmt: skip
        report = reader_for(fake).read()
        assert report.available and report.reason is None and len(report.gpus) == 1
        gpu = report.gpus[0]
        assert (gpu.index, gpu.name) == (0, "NVIDIA H100 80GB HBM3")
        assert gpu.uuid == "GPU-00000000-1111-2222-3333-444455556666"
        assert (gpu.utilisation_pct, gpu.memory_used_bytes, gpu.memory_total_bytes, gpu.temperature_c) == (
            87, 40 * GIB, 80 * GIB, 61)  # fmt: skip
        assert gpu.error is None
        (p,) = gpu.processes
        assert (p.pid, p.used_memory_bytes, p.job_id, p.pod_uid, p.command) == (
            4242, 39 * GIB, "1234", None, "python3 train.py --lr 3e-4")  # fmt: skip

    def test_eight_gpus_in_index_order(self, reader_for: ReaderFor) -> None:
        fake = FakeNvml([h100(i, utilisation_pct=10 * i, temperature_c=30 + i) for i in range(8)])
        report = reader_for(fake).read()
        assert [g.index for g in report.gpus] == list(range(8))
        assert [g.utilisation_pct for g in report.gpus] == [0, 10, 20, 30, 40, 50, 60, 70]
        assert len({g.uuid for g in report.gpus}) == 8
        assert all(g.error is None and g.processes == () for g in report.gpus)

    def test_a_driver_with_no_gpus(self, reader_for: ReaderFor) -> None:
        report = reader_for(FakeNvml([])).read()
        assert (report.available, report.gpus) == (True, ())

    def test_a_gpu_that_errors_mid_poll(self, reader_for: ReaderFor, clock: FixedClock) -> None:
        """GPU 3's utilisation fails from the second poll on: that field only, on that GPU only."""
        fake = FakeNvml([h100(i, utilisation_pct=50, temperature_c=40) for i in range(8)])
        fake.fail("nvmlDeviceGetUtilizationRates", 3, pynvml.NVMLError_GpuIsLost, from_poll=2)
        reader = reader_for(fake)
        first = reader.read()
        assert all(g.error is None and g.utilisation_pct == 50 for g in first.gpus)
        clock.now += 5
        second = reader.read()
        lost = second.gpus[3]
        assert (lost.utilisation_pct, lost.error) == (None, "utilisation: GPU is lost")
        assert (lost.temperature_c, lost.memory_total_bytes, lost.name) == (40, 80 * GIB, "NVIDIA H100 80GB HBM3")
        others = [g for g in second.gpus if g.index != 3]
        assert all(g.error is None and g.utilisation_pct == 50 for g in others)
        assert second.available

    def test_a_gpu_lost_entirely(self, reader_for: ReaderFor) -> None:
        fake = FakeNvml([h100(i) for i in range(3)])
        fake.fail("nvmlDeviceGetHandleByIndex", 1, pynvml.NVMLError_GpuIsLost)
        gpus = reader_for(fake).read().gpus
        assert [g.index for g in gpus] == [0, 1, 2]
        assert (gpus[1].uuid, gpus[1].utilisation_pct, gpus[1].error) == ("", None, "handle: GPU is lost")
        assert gpus[0].error is None and gpus[2].error is None

    def test_several_fields_failing_are_all_named(self, reader_for: ReaderFor) -> None:
        fake = FakeNvml([h100(0)])
        fake.fail("nvmlDeviceGetMemoryInfo", 0, pynvml.NVMLError_Unknown)
        fake.fail("nvmlDeviceGetTemperature", 0, pynvml.NVMLError_Timeout)
        gpu = reader_for(fake).read().gpus[0]
        assert gpu.error == "memory: Unknown Error; temperature: Timeout"
        assert (gpu.memory_used_bytes, gpu.memory_total_bytes, gpu.temperature_c) == (None, None, None)

    def test_not_supported_is_no_error(self, reader_for: ReaderFor) -> None:
        fake = FakeNvml([h100(0)])
        fake.fail("nvmlDeviceGetTemperature", 0, pynvml.NVMLError_NotSupported)
        gpu = reader_for(fake).read().gpus[0]
        assert (gpu.temperature_c, gpu.error) == (None, None)

    def test_counting_fails_after_init(self, reader_for: ReaderFor, clock: FixedClock) -> None:
        fake = FakeNvml([h100(0)])
        fake.fail("nvmlDeviceGetCount", -1, pynvml.NVMLError_DriverNotLoaded, from_poll=2)
        reader = reader_for(fake)
        assert reader.read().available
        clock.now += 2
        report = reader.read()
        assert (report.available, report.reason) == (False, "NVML could not count the GPUs: Driver Not Loaded")
        assert fake.calls["nvmlShutdown"] == 1  # and the next read starts NVML afresh
        fake.faults.clear()
        clock.now += 2
        assert reader.read().available and fake.calls["nvmlInit"] == 2

    def test_a_broken_library_never_raises(self, reader_for: ReaderFor) -> None:
        fake = FakeNvml([h100(0)])
        fake.nvmlDeviceGetCount = lambda: "eight"  # type: ignore[method-assign,assignment,return-value]
        report = reader_for(fake).read()
        assert report.available is False
        assert report.reason == "NVML read failed: ValueError: invalid literal for int() with base 10: 'eight'"


class TestProcesses:
    def test_compute_and_graphics_once_each(self, reader_for: ReaderFor, proc: FakeProc) -> None:
        proc.add(30, cmdline=["/usr/bin/Xorg"])
        proc.add(10, cmdline=["python"])
        fake = FakeNvml([h100(0, compute=[(20, None), (10, GIB)], graphics=[(30, 512), (10, GIB)])])
        (gpu,) = reader_for(fake).read().gpus
        assert [(p.pid, p.used_memory_bytes, p.command) for p in gpu.processes] == [
            (10, GIB, "python"), (20, None, ""), (30, 512, "/usr/bin/Xorg")]  # fmt: skip

    def test_an_older_driver_without_v3(self, reader_for: ReaderFor) -> None:
        v3 = ("nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetGraphicsRunningProcesses_v3")
        fake = FakeNvml([h100(0, compute=[(7, GIB)])], missing=v3)
        (gpu,) = reader_for(fake).read().gpus
        assert [p.pid for p in gpu.processes] == [7] and gpu.error is None
        assert fake.calls["nvmlDeviceGetComputeRunningProcesses_v2"] == 1

    def test_no_process_function_at_all(self, reader_for: ReaderFor) -> None:
        names = [f"nvmlDeviceGet{k}RunningProcesses_v{v}" for k in ("Compute", "Graphics") for v in (2, 3)]
        fake = FakeNvml([h100(0, utilisation_pct=5, compute=[(7, GIB)])], missing=tuple(names))
        (gpu,) = reader_for(fake).read().gpus
        assert (gpu.processes, gpu.utilisation_pct) == ((), 5)
        assert gpu.error == "processes: Function Not Found"


class TestCache:
    def test_no_second_call_within_the_ttl(self, reader_for: ReaderFor, clock: FixedClock) -> None:
        fake = FakeNvml([h100(i) for i in range(2)])
        reader = reader_for(fake, ttl_s=1.0)
        first = reader.read()
        clock.now += 0.999
        assert reader.read() is first
        assert fake.calls["nvmlDeviceGetCount"] == 1 and fake.calls["nvmlDeviceGetName"] == 2
        clock.now += 0.001
        second = reader.read()
        assert second is not first and second.read_at == NOW + 1.0
        assert fake.calls["nvmlDeviceGetCount"] == 2

    def test_init_once_and_lazily(self, reader_for: ReaderFor, clock: FixedClock) -> None:
        fake = FakeNvml([h100(0)])
        reader = reader_for(fake)
        assert fake.calls["nvmlInit"] == 0  # nothing before the first read
        for _ in range(3):
            reader.read()
            clock.now += 10
        assert (fake.calls["nvmlInit"], fake.calls["nvmlDeviceGetCount"]) == (1, 3)
        reader.close()
        assert (fake.calls["nvmlShutdown"], fake.initialised) == (1, 0)

    def test_no_driver_is_asked_again_only_after_the_ttl(self, reader_for: ReaderFor, clock: FixedClock) -> None:
        fake = library_missing()
        reader = reader_for(fake, ttl_s=1.0)
        reader.read()
        reader.read()
        assert fake.calls["nvmlInit"] == 1
        clock.now += 1
        reader.read()
        assert fake.calls["nvmlInit"] == 2

    def test_a_clock_set_back_reads_again(self, reader_for: ReaderFor, clock: FixedClock) -> None:
        fake = FakeNvml([h100(0)])
        reader = reader_for(fake)
        reader.read()
        clock.now -= 3600
        assert reader.read().read_at == NOW - 3600
        assert fake.calls["nvmlDeviceGetCount"] == 2

    def test_host_gpus_uses_the_reader_given(self, reader_for: ReaderFor) -> None:
        fake = FakeNvml([h100(0), h100(1)])
        assert [g.index for g in host_gpus(reader_for(fake)).gpus] == [0, 1]
