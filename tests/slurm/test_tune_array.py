"""`gpuq tune --on slurm` on the real lab: the grid as one job array whose tasks run this
checkout's gpuq on the lab's nodes (the same host, as root, the same paths), merged and ranked
exactly as the local run ranks it; a failed task named with its log; the partition honoured."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpuq.cli.main import cli
from gpuq.errors import Refused
from gpuq.service.tuning import ArrayOptions, TuneRequest, tune
from tests.slurm import lab
from tests.tune.helpers import write_trace

pytestmark = [pytest.mark.slurm, pytest.mark.usefixtures("qos_lab")]

GRID = ["--grid", "delta=0,500", "--grid", "min_runtime=0,10m", "--grid", "strategy=requeue,cancel"]


def _gpuq(*args: str) -> dict[str, object]:
    result = CliRunner().invoke(cli, ["tune", *args, "-o", "json"], prog_name="gpuq")
    assert result.exit_code == 0, result.output
    doc: dict[str, object] = json.loads(result.stdout)
    return doc


def _ranking(doc: dict[str, object]) -> list[tuple[object, ...]]:
    points = doc["points"]
    assert isinstance(points, list)
    return [(p["rank"], p["id"], p["score"], p["pareto"], json.dumps({**p["result"], "sim_wall_s": 0}, sort_keys=True))
            for p in points]  # fmt: skip


def _accounted(job_id: str, field: str, expected: list[str]) -> None:
    """sacct shows `expected` (JobID|field rows) for the array; records reach it a few seconds late."""

    def rows() -> list[str]:
        return sorted(lab.sh(["sacct", "-n", "-P", "-X", "-j", job_id, "-o", f"JobID,{field}"]).split())

    lab.wait_for(lambda: rows() == expected, 30, f"sacct to show {expected}")


def test_the_same_grid_locally_and_as_a_job_array_ranks_identically(tmp_path: Path) -> None:
    trace = write_trace(str(tmp_path / "jobs.jsonl"), 40)
    local = _gpuq(trace, *GRID, "--cluster-shape", "1x4", "-j", "2")
    work = tmp_path / "array"
    array = _gpuq(trace, *GRID, "--cluster-shape", "1x4", "--on", "slurm", "--work-dir", str(work), "--tasks", "3")
    assert str(array["ran_on"]).startswith("Slurm job array ") and str(array["ran_on"]).endswith("(3 tasks)")
    assert array["work_dir"] == str(work)
    assert _ranking(array) == _ranking(local)
    assert len(_ranking(local)) == 8
    # each task wrote its share and logged it
    for task in range(3):
        assert (work / f"result-{task}.json").exists()
        assert f"task {task} wrote" in (work / f"task-{task}.log").read_text()
    job_id = str(array["ran_on"]).split()[3]
    _accounted(job_id, "State", [f"{job_id}_{t}|COMPLETED" for t in range(3)])


def test_a_failed_task_is_named_with_its_log(tmp_path: Path) -> None:
    trace = write_trace(str(tmp_path / "jobs.jsonl"), 10)
    wrapper = tmp_path / "gpuq-or-fail"
    # task 1 fails; the others run the real gpuq (the task index is the last argument)
    wrapper.write_text(
        "#!/bin/sh\nfor last; do :; done\n"
        'if [ "$last" = 1 ]; then echo "boom in task 1" >&2; exit 3; fi\n'
        f'exec {sys.executable} -m gpuq "$@"\n'
    )
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    options = ArrayOptions(work_dir=str(tmp_path / "w"), tasks=2, poll_s=0.5, executable=(str(wrapper),))
    with pytest.raises(Refused) as caught:
        tune(TuneRequest(trace, ("delta=0,50,100",), shape="1x4"), on_slurm=options)
    message = str(caught.value)
    assert "task 1 failed (FAILED, exit code 3:0) without writing its result" in message
    assert f"its log {tmp_path / 'w' / 'task-1.log'} ends: boom in task 1" in message


def test_the_partition_is_the_one_asked_for(tmp_path: Path) -> None:
    trace = write_trace(str(tmp_path / "jobs.jsonl"), 5)
    doc = _gpuq(trace, "--grid", "delta=0,50", "--on", "slurm", "--partition", "debug", "--work-dir",
                str(tmp_path / "w"), "--cluster-shape", "1x4")  # fmt: skip
    job_id = str(doc["ran_on"]).split()[3]
    _accounted(job_id, "Partition", [f"{job_id}_0|debug", f"{job_id}_1|debug"])
    assert os.path.exists(tmp_path / "w" / "points.json")
