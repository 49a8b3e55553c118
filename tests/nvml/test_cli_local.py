"""`gpuq gpus --local` in every output format, on the stand-in NVML made the process's default."""

from __future__ import annotations

import csv
import ctypes
import io
import json
from collections.abc import Callable
from typing import Any

import pynvml
import pytest
from click.testing import CliRunner

from gpuq.cli.localgpus import CSV_HEADER
from gpuq.cli.main import cli
from gpuq.cli.options import Injected
from gpuq.service import NvmlReader
from tests.cli.conftest import SMALL
from tests.clock import FixedClock
from tests.nvml.conftest import FakeProc, ReaderFor, Runner
from tests.nvml.fakenvml import GIB, FakeNvml, h100, library_missing

NO_DRIVER = "gpuq: warning: NVML not available on gpu-01: no NVIDIA driver on this host (NVML library not found)\n"
Use = Callable[[NvmlReader | None], None]


@pytest.fixture
def eight(proc: FakeProc, reader_for: ReaderFor, default_reader: Use) -> FakeNvml:
    """gpu-01 (a node of small.json's cluster lab) with eight GPUs; job 101 (alice's) on 0-3,
    a job the cluster does not know on 4, a pod on 5, an unmapped process on 6."""
    proc.add(100, cgroup="0::/system.slice/slurmstepd.scope/job_101/step_0/user/task_0\n", cmdline=["python"])
    proc.add(200, cgroup="0::/system.slice/slurmstepd.scope/job_999/step_0/user/task_0\n", cmdline=["eval"])
    proc.add(300, cgroup="0::/kubepods/besteffort/pod1b2c3d4e-5f6a-7b8c-9d0e-1f2a3b4c5d6e/c0ffee\n")
    proc.add(400, cmdline=["/usr/bin/python3", "x.py"])
    gpus = [h100(i, utilisation_pct=90, memory_used=60 * GIB, temperature_c=60, compute=[(100, 59 * GIB)])
            for i in range(4)]  # fmt: skip
    gpus += [h100(4, utilisation_pct=30, memory_used=GIB, compute=[(200, GIB)]),
             h100(5, compute=[(300, 2 * GIB)]), h100(6, compute=[(400, None)]), h100(7)]  # fmt: skip
    fake = FakeNvml(gpus)
    fake.fail("nvmlDeviceGetTemperature", 7, pynvml.NVMLError_GpuIsLost)
    default_reader(reader_for(fake))
    return fake


@pytest.fixture
def no_driver(reader_for: ReaderFor, default_reader: Use) -> FakeNvml:
    fake = library_missing()
    default_reader(reader_for(fake))
    return fake


class TestNoDriver:
    @pytest.mark.parametrize("output", ["table", "wide"])
    def test_table_says_so_once_and_shows_no_columns(self, gpuq: Runner, no_driver: FakeNvml, output: str) -> None:
        result = gpuq("gpus", "--local", "-o", output)
        assert result.exit_code == 0
        assert (result.stdout, result.stderr) == ("", NO_DRIVER)

    def test_json_says_available_false(self, gpuq: Runner, no_driver: FakeNvml) -> None:
        result = gpuq("gpus", "--local", "-o", "json")
        assert result.exit_code == 0 and result.stderr == NO_DRIVER
        doc = json.loads(result.stdout)
        assert doc == {"host": "gpu-01", "available": False,
                       "reason": "no NVIDIA driver on this host (NVML library not found)",
                       "read_at": "2026-11-19T15:00:00Z", "cluster": None, "unchecked": None, "gpus": []}  # fmt: skip

    def test_csv_is_its_header_alone(self, gpuq: Runner, no_driver: FakeNvml) -> None:
        result = gpuq("gpus", "--local", "-o", "csv")
        assert result.exit_code == 0 and result.stderr == NO_DRIVER
        assert list(csv.reader(io.StringIO(result.stdout))) == [list(CSV_HEADER)]

    def test_no_cluster_is_read(self, gpuq: Runner, no_driver: FakeNvml) -> None:
        """Nothing to check: even a snapshot that cannot be read does not matter."""
        result = gpuq("--snapshot", "/nonexistent.json", "gpus", "--local")
        assert (result.exit_code, result.stderr) == (0, NO_DRIVER)

    def test_the_real_bindings_without_a_library(self, gpuq: Runner, monkeypatch: pytest.MonkeyPatch,
                                                 default_reader: Use) -> None:  # fmt: skip
        """The CLI's own default reader over the real pynvml, where libnvidia-ml.so.1 is missing."""

        def no_library(name: str, *args: Any, **kwargs: Any) -> ctypes.CDLL:
            raise OSError(name)

        monkeypatch.setattr(pynvml, "nvmlLib", None)
        monkeypatch.setattr(pynvml, "CDLL", no_library)
        default_reader(None)  # a fresh real reader
        doc = json.loads(gpuq("gpus", "--local", "-o", "json").stdout)
        assert (doc["available"], doc["reason"]) == (False, "no NVIDIA driver on this host (NVML library not found)")

    def test_watch_says_it_once_and_each_frame_says_why_it_is_empty(self, clock: FixedClock,
                                                                    no_driver: FakeNvml) -> None:  # fmt: skip
        calls: list[float] = []

        def sleep(seconds: float) -> None:
            calls.append(seconds)
            clock.now += seconds
            if len(calls) == 3:
                raise KeyboardInterrupt

        result = CliRunner().invoke(cli, ["gpus", "--local", "-w", "1"], prog_name="gpuq",
                                    obj=Injected(clock=clock, sleep=sleep))  # fmt: skip
        assert result.exit_code == 0, result.output
        assert result.stderr == NO_DRIVER
        assert result.stdout.count("NVML not available on gpu-01") == 3
        assert no_driver.calls["nvmlInit"] == 3  # one poll per frame (1 s apart: the TTL has passed)


class TestGpus:
    def test_table(self, gpuq: Runner, eight: FakeNvml) -> None:
        result = gpuq("--snapshot", str(SMALL), "gpus", "--local", "--no-color")
        assert result.exit_code == 0, result.output
        assert result.stderr == ""
        lines = result.stdout.splitlines()
        assert lines[0] == "gpu-01: 8 GPUs, 7 with processes (NVML at 2026-11-19T15:00:00Z)"
        assert lines[1].split() == ["GPU", "NAME", "UTIL", "MEMORY", "TEMP", "PROCESSES", "ERROR", "UUID"]
        by_gpu = {line.split()[0]: line for line in lines[2:]}
        assert "90%  60.0/80.0 GiB   60C  100 job 101 alice 59.0 GiB" in by_gpu["0"]
        assert "200 job 999 (not in lab) 1.0 GiB" in by_gpu["4"]
        assert "300 pod 1b2c3d4e-5f6a-7b8c-9d0e-1f2a3b4c5d6e 2.0 GiB" in by_gpu["5"]
        assert "400 python3" in by_gpu["6"]
        assert "-  " in by_gpu["7"] and "temperature: GPU is lost" in by_gpu["7"]
        assert "GPU-00000007-1111-2222-3333-444455556666" in by_gpu["7"]

    @pytest.mark.parametrize(
        ("width", "hidden"), [(160, "1 column hidden (UUID)"), (100, "3 columns hidden (NAME, ERROR, UUID)")]
    )
    def test_a_narrow_terminal_drops_the_uuid_first(
        self, gpuq: Runner, eight: FakeNvml, monkeypatch: pytest.MonkeyPatch, width: int, hidden: str
    ) -> None:
        monkeypatch.setenv("COLUMNS", str(width))
        result = gpuq("--snapshot", str(SMALL), "gpus", "--local", "--no-color")
        assert result.exit_code == 0, result.output
        lines = result.stdout.splitlines()
        assert "UUID" not in lines[1] and "GPU-0000" not in result.stdout
        assert lines[-1] == f"{hidden}: -o wide or a wider terminal"
        assert all(len(line) <= width for line in lines)
        assert "300 pod 1b2c3d4e-5f6a-7b8c-9d0e-1f2a3b4c5d6e 2.0 GiB" in result.stdout  # ids never cut

    def test_json(self, gpuq: Runner, eight: FakeNvml) -> None:
        result = gpuq("--snapshot", str(SMALL), "gpus", "--local", "-o", "json")
        assert result.exit_code == 0, result.output
        doc = json.loads(result.stdout)
        assert (doc["host"], doc["available"], doc["reason"], doc["cluster"]) == ("gpu-01", True, None, "lab")
        assert [g["index"] for g in doc["gpus"]] == list(range(8))
        first = doc["gpus"][0]
        assert first == {
            "index": 0, "uuid": "GPU-00000000-1111-2222-3333-444455556666", "name": "NVIDIA H100 80GB HBM3",
            "utilisation_pct": 90, "memory_used_bytes": 60 * GIB, "memory_total_bytes": 80 * GIB,
            "temperature_c": 60, "error": None,
            "processes": [{"pid": 100, "command": "python", "used_memory_bytes": 59 * GIB, "job_id": "101",
                           "pod_uid": None, "in_cluster": True, "user": "alice"}],
        }  # fmt: skip
        assert doc["gpus"][4]["processes"][0]["in_cluster"] is False
        assert (doc["gpus"][7]["temperature_c"], doc["gpus"][7]["error"]) == (None, "temperature: GPU is lost")

    def test_csv(self, gpuq: Runner, eight: FakeNvml) -> None:
        result = gpuq("--snapshot", str(SMALL), "gpus", "--local", "-o", "csv")
        assert result.exit_code == 0, result.output
        rows = list(csv.DictReader(io.StringIO(result.stdout)))
        assert len(rows) == 8  # one process on each of 0-6, and GPU 7 without any
        assert {k: rows[0][k] for k in ("host", "gpu", "job", "user", "in_cluster", "process_memory_bytes")} == {
            "host": "gpu-01", "gpu": "0", "job": "101", "user": "alice", "in_cluster": "true",
            "process_memory_bytes": str(59 * GIB)}  # fmt: skip
        assert (rows[4]["job"], rows[4]["in_cluster"]) == ("999", "false")
        assert rows[5]["pod"] == "1b2c3d4e-5f6a-7b8c-9d0e-1f2a3b4c5d6e"
        assert (rows[7]["pid"], rows[7]["error"]) == ("", "temperature: GPU is lost")

    def test_a_cluster_that_cannot_be_read_still_shows_the_gpus(self, gpuq: Runner, eight: FakeNvml) -> None:
        result = gpuq("--snapshot", "/nonexistent.json", "gpus", "--local", "-o", "json")
        assert result.exit_code == 0, result.output
        assert result.stderr.startswith("gpuq: warning: job ids not checked against the cluster: ")
        assert len(result.stderr.splitlines()) == 1
        doc = json.loads(result.stdout)
        assert doc["cluster"] is None and doc["gpus"][0]["processes"][0]["in_cluster"] is None

    def test_a_host_outside_the_cluster_says_its_ids_are_unchecked(
        self, gpuq: Runner, reader_for: ReaderFor, proc: FakeProc, default_reader: Use
    ) -> None:
        proc.add(100, cgroup="0::/system.slice/slurmstepd.scope/job_101/step_0/user/task_0\n")
        default_reader(reader_for(FakeNvml([h100(0, compute=[(100, GIB)])]), host="laptop"))
        result = gpuq("--snapshot", str(SMALL), "gpus", "--local", "--no-color")
        assert result.exit_code == 0, result.output
        assert result.stderr == "gpuq: warning: laptop is not a node of cluster lab: job ids not checked against it\n"
        assert "100 job 101 1.0 GiB" in result.stdout and "alice" not in result.stdout

    def test_outside_text_is_shown_as_data(self, gpuq: Runner, reader_for: ReaderFor, proc: FakeProc,
                                           default_reader: Use) -> None:  # fmt: skip
        proc.add(100, cmdline=["\x1b[2J[bold red]evil"])
        default_reader(reader_for(FakeNvml([h100(0, name="[/]GPU\u202e", compute=[(100, None)])])))
        result = gpuq("gpus", "--local", "--no-color")
        assert result.exit_code == 0, result.output
        assert "\x1b" not in result.stdout and "\u202e" not in result.stdout
        assert "[/]GPU\\u202e" in result.stdout and "100 \\x1b[2J[bold" in result.stdout

    @pytest.mark.parametrize("other", [["--node", "gpu-01"], ["--free"]])
    def test_local_with_node_or_free_is_a_usage_error(self, gpuq: Runner, eight: FakeNvml, other: list[str]) -> None:
        result = gpuq("gpus", "--local", *other)
        assert result.exit_code == 2
        assert "--local shows this host's GPUs: it takes neither --node nor --free" in result.stderr
        assert eight.calls["nvmlInit"] == 0
