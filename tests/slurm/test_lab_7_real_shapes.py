"""The job shapes every real Slurm cluster has, on the real lab (qos mode): CPU-only jobs (running
alone on a node, beside GPU jobs, pending, completed), an array job, a multi-node job and held jobs.
Every read command and the console read them without an error, and each job comes out as Slurm
has it. (A CPU-only job running alone on a node once crashed every read: issue 31.)"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from click.testing import CliRunner

from gpuq.cli.main import cli
from gpuq.model import JobState
from gpuq.model.codec import decode_snapshot
from gpuq.model.placement import placement_conflicts
from gpuq.service import open_cluster
from gpuq.tui.app import ConsoleSettings, make_app
from gpuq.tui.options import ConsoleSetup
from gpuq.tui.statusline import stale_banner
from tests.slurm import lab
from tests.tui.conftest import loaded

pytestmark = [pytest.mark.slurm, pytest.mark.usefixtures("qos_lab")]

#: the read commands, each as an operator types it
READS = (["queue"], ["overview"], ["gpus"], ["sla"], ["preemptions"], ["snapshot"])


def _cpu_only(*args: str, name: str, sleep: int = 600) -> str:
    return lab.sbatch(*args, gpus=0, qos="normal", name=name, sleep=sleep)


def _squeue_ids() -> set[str]:
    return set(lab.states())


def _task_states(array: str) -> list[str]:
    """The states of an array's tasks (plain squeue lists a running task by its own job id)."""
    return lab.sh(["squeue", "-h", "-r", "-j", array, "-O", "State:|"]).replace("|", "").split()


def test_a_cpu_only_job_alone_on_a_node(qos_lab: dict[str, str]) -> None:
    """The state that crashed every read: one running job without GPUs, alone on its node. (It
    runs first: the `shapes` below cancel it.)"""
    lab.cancel_all()
    alone = _cpu_only("-w", "gpu2", name="cpu-alone")
    lab.wait_running([alone], timeout=120)
    for command in READS:
        for output in ("table", "json"):
            _gpuq(*command, *(("-o", output) if command != ["snapshot"] else ()))
    assert json.loads(_gpuq("job", alone, "-o", "json"))["job"]["gpus"] == 0
    snapshot = decode_snapshot(_gpuq("snapshot").encode(), "lab.json")
    job = snapshot.job(alone)
    assert job is not None and (job.state, job.gpus, job.allocation) == (JobState.RUNNING, 0, {})
    assert snapshot.used_gpus() == _gres_used() == {}
    lab.cancel_all()


@pytest.fixture(scope="module")
def shapes(qos_lab: dict[str, str]) -> Iterator[dict[str, Any]]:
    lab.cancel_all()
    done = _cpu_only("-w", "gpu2", name="cpu-done", sleep=0)  # completes at once: sacct only
    lab.wait_for(lambda: done not in _squeue_ids(), 60, f"CPU-only job {done} to complete")
    jobs: dict[str, Any] = {"cpu_done": done}
    jobs["cpu_alone"] = _cpu_only("-w", "gpu2", name="cpu-alone")  # no GPU job on gpu2 yet
    lab.wait_running([jobs["cpu_alone"]], timeout=120)
    jobs["gpu"] = lab.sbatch("-w", "gpu1", gpus=2, qos="normal", name="gpu")
    jobs["cpu_beside"] = _cpu_only("-w", "gpu1", name="cpu-beside")
    jobs["multi"] = lab.sbatch(gpus=1, nodes=2, qos="normal", name="multi")  # one GPU on each node
    array = lab.sbatch("--array=0-2", gpus=1, qos="normal", name="array")
    jobs["array"] = [f"{array}_{i}" for i in range(3)]
    jobs["cpu_pending"] = _cpu_only("--begin=now+1hour", name="cpu-later")
    jobs["held_gpu"] = lab.sbatch("--hold", gpus=1, qos="normal", name="held-gpu")
    jobs["held_cpu"] = _cpu_only("--hold", name="held-cpu")
    lab.wait_running([jobs["gpu"], jobs["cpu_beside"], jobs["multi"]], timeout=120)
    lab.wait_for(lambda: _task_states(array) == ["RUNNING"] * 3, 120, f"array {array}'s three tasks to run")
    yield jobs
    lab.cancel_all()


def _gpuq(*args: str) -> str:
    result = CliRunner().invoke(cli, ["--backend", "slurm", *args], prog_name="gpuq")
    assert result.exit_code == 0, f"gpuq {' '.join(args)} -> {result.exit_code}\n{result.output}"
    assert "Traceback" not in result.output and "Error" not in result.output, result.output
    return result.stdout


@pytest.mark.parametrize("command", READS, ids=lambda c: c[0])
@pytest.mark.parametrize("output", ["table", "json"])
def test_every_read_command_reads_every_shape(shapes: dict[str, Any], command: list[str], output: str) -> None:
    text = _gpuq(*command, "-o", output) if command != ["snapshot"] else _gpuq(*command)
    if output == "json" or command == ["snapshot"]:
        json.loads(text)  # one whole document
    if command == ["queue"]:
        for key in ("cpu_alone", "cpu_beside", "cpu_pending", "held_gpu", "held_cpu", "gpu", "multi"):
            assert shapes[key] in text


def test_each_job_comes_out_as_slurm_has_it(shapes: dict[str, Any]) -> None:
    snapshot = decode_snapshot(_gpuq("snapshot").encode(), "lab.json")
    assert placement_conflicts(snapshot) == ()
    jobs = {j.id: j for j in snapshot.jobs}

    for key in ("cpu_alone", "cpu_beside"):
        job = jobs[shapes[key]]
        assert (job.state, job.gpus, job.allocation) == (JobState.RUNNING, 0, {})
    gpu = jobs[shapes["gpu"]]
    assert gpu.gpus == 2 and list(gpu.allocation) == ["gpu1"] and None not in gpu.allocation["gpu1"]
    multi = jobs[shapes["multi"]]
    assert multi.gpus == 2 and {n: len(i) for n, i in multi.allocation.items()} == {"gpu1": 1, "gpu2": 1}
    for task in shapes["array"]:
        assert jobs[task].state is JobState.RUNNING and jobs[task].gpus == 1
    later = jobs[shapes["cpu_pending"]]
    assert (later.state, later.gpus, later.allocation) == (JobState.PENDING, 0, {})
    for key in ("held_gpu", "held_cpu"):
        held = jobs[shapes[key]]
        assert held.state is JobState.PENDING and held.allocation == {}
        assert held.reason is not None and "held" in held.reason.lower(), held.reason
    # The GPUs each node holds are the ones Slurm itself counts there (sinfo's GresUsed).
    assert snapshot.used_gpus() == _gres_used()


def _gres_used() -> dict[str, int]:
    """node -> GPUs in use, from ``sinfo``'s GresUsed (``gpu:h100:3(IDX:0-2)``)."""
    used: dict[str, int] = {}
    for line in lab.sh(["sinfo", "-h", "-N", "-O", "NodeList:|,GresUsed:|"]).splitlines():
        node, gres = line.split("|")[:2]
        count = int(gres.split("(")[0].rsplit(":", 1)[1]) if gres.startswith("gpu") else 0
        if count:
            used[node.strip()] = count
    return used


@pytest.mark.parametrize("key", ["cpu_alone", "cpu_beside", "cpu_pending", "held_gpu", "held_cpu", "multi", "array"])
def test_job_explains_every_shape(shapes: dict[str, Any], key: str) -> None:
    job_id = shapes[key][0] if key == "array" else shapes[key]
    doc = json.loads(_gpuq("job", job_id, "-o", "json"))
    assert doc["job"]["id"] == job_id
    assert job_id in _gpuq("job", job_id)


def test_the_gpus_grid_counts_no_gpu_for_a_cpu_only_job(shapes: dict[str, Any]) -> None:
    doc = json.loads(_gpuq("gpus", "-o", "json"))
    holders = {cell.get("job") for node in doc["nodes"] for cell in node["slots"]}
    assert shapes["cpu_alone"] not in holders and shapes["cpu_beside"] not in holders
    assert shapes["gpu"] in holders and shapes["multi"] in holders


async def test_the_console_shows_every_shape(shapes: dict[str, Any]) -> None:
    """The console reads the lab like the CLI: data, not "no data yet: ValueError …"."""
    app = make_app(ConsoleSetup([open_cluster(backend="slurm")], ConsoleSettings(), time.time))
    async with app.run_test(size=(160, 48)) as pilot:
        console = await loaded(pilot)
        snapshot = console.snapshots[0]
        assert snapshot is not None
        shown = {j.id for j in snapshot.jobs}
        assert {shapes["cpu_alone"], shapes["cpu_beside"], shapes["held_cpu"], shapes["multi"]} <= shown
        assert stale_banner(console, time.time()) is None
