"""The job array's files and batch script, without Slurm: `sbatch` stood in for by running
task.sh once per task (as Slurm would, with SLURM_ARRAY_TASK_ID set), so the script's quoting, the
task mode and the merge are checked on odd paths; the merge ranks as the local run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gpuq.backends.slurm import array
from gpuq.service.tuning import ArrayOptions, TuneRequest, tune
from tests.tune.helpers import write_trace

GRID = ("delta=0,500", "min_runtime=0,10m")


@pytest.fixture
def fake_slurm(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    submitted: list[list[str]] = []

    def submit(runner: Any, script: Path, *, tasks: int, name: str, log_dir: Path, workdir: Path,
               partition: str | None = None, extra: Any = ()) -> array.ArrayJob:  # fmt: skip
        submitted.append([str(script), str(tasks), str(partition)])
        for task in range(tasks):
            with open(log_dir / f"task-{task}.log", "w") as log:
                env = {**os.environ, "SLURM_ARRAY_TASK_ID": str(task)}
                subprocess.run(["/bin/sh", str(script)], cwd=workdir, env=env, stdout=log, stderr=log, check=True)  # noqa: S603
        return array.ArrayJob("123", tasks, log_dir)

    def wait(runner: Any, job: array.ArrayJob, done: Any, *, progress: Any = None, **_: Any) -> None:
        assert all(done(t) for t in range(job.tasks))
        if progress is not None:
            progress(job.tasks, job.tasks)

    monkeypatch.setattr(array, "submit_array", submit)
    monkeypatch.setattr(array, "wait_array", wait)
    return submitted


def test_script_files_and_merge(tmp_path: Path, fake_slurm: list[list[str]]) -> None:
    odd = tmp_path / "it's a dir $HOME"
    odd.mkdir()
    trace = write_trace(str(odd / "jobs `x`.jsonl"), 20)
    work = odd / "work dir"
    request = TuneRequest(trace, GRID, shape="1x4", strategy="graceful", seed=3)
    seen: list[tuple[int, int]] = []
    report = tune(request, on_slurm=ArrayOptions(work_dir=str(work), tasks=3, partition="debug"),
                  progress=lambda d, t: seen.append((d, t)))  # fmt: skip
    assert fake_slurm == [[str(work / "task.sh"), "3", "debug"]]
    assert report.ran_on == "Slurm job array 123 (3 tasks)" and report.work_dir == str(work)
    assert seen[-1] == (4, 4)
    script = (work / "task.sh").read_text()
    assert script.startswith("#!/bin/sh\n") and script.rstrip().endswith('--task-index "$SLURM_ARRAY_TASK_ID"')
    assert f"{sys.executable}" in script and "--strategy graceful" in script and "--seed 3" in script
    points = json.loads((work / "points.json").read_text())
    assert points["format"] == "gpuq.tune-points/v1" and points["grid"] == list(GRID) and points["tasks"] == 3
    assert [p["id"] for p in points["points"]] == ["p01", "p02", "p03", "p04"]
    assert "graceful" in (work / "policy.toml").read_text()
    for task in range(3):
        assert f"task {task} wrote" in (work / f"task-{task}.log").read_text()
    local = tune(request, workers=2)
    assert [(r.point.id, r.score, r.pareto) for r in report.ranking.rows] == [
        (r.point.id, r.score, r.pareto) for r in local.ranking.rows
    ]


def test_a_reused_work_dir_forgets_old_results(tmp_path: Path, fake_slurm: list[list[str]]) -> None:
    trace = write_trace(str(tmp_path / "jobs.jsonl"), 5)
    work = tmp_path / "w"
    work.mkdir()
    (work / "result-7.json").write_text("old")
    tune(TuneRequest(trace, ("delta=0,50",), shape="1x4"), on_slurm=ArrayOptions(work_dir=str(work)))
    assert sorted(p.name for p in work.glob("result-*.json")) == ["result-0.json", "result-1.json"]
