"""`gpuq tune` of a trace `gpuq trace export` wrote takes the cluster's shape from the trace's
header unless `--cluster-shape` is given, through the code `gpuq replay` uses, and says so."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from click.testing import Result

from gpuq.service.tuning import TuneRequest, tune
from gpuq.trace.joblog import write_jobs
from tests.tune.helpers import fake_replay, trace_jobs

Gpuq = Callable[..., Result]


def _shaped(tmp_path: Path, shape: str = "3x4") -> str:
    path = tmp_path / "shaped.jsonl"
    with path.open("w") as out:
        write_jobs(trace_jobs(5), out, {"cluster": "lab", "cluster_shape": shape})
    return str(path)


def test_tune_takes_the_shape_from_the_traces_header(tmp_path: Path) -> None:
    path = _shaped(tmp_path)
    report = tune(TuneRequest(path, ("delta=0,500",)), workers=1, replayer=fake_replay)
    assert (report.base.nodes, report.base.gpus_per_node, report.shape_source) == (3, 4, "the trace's header")
    given = tune(TuneRequest(path, ("delta=0,500",), shape="2x8"), workers=1, replayer=fake_replay)
    assert (given.base.nodes, given.base.gpus_per_node, given.shape_source) == (2, 8, "--cluster-shape")


def test_tune_says_where_the_shape_came_from(gpuq: Gpuq, tmp_path: Path) -> None:
    path = _shaped(tmp_path)
    result = gpuq("tune", path, "--grid", "delta=0,500", "-j", "1")
    assert result.exit_code == 0, result.output
    assert "3x4 GPUs (shape from the trace's header)" in result.stdout.splitlines()[0]
    given = gpuq("tune", path, "--grid", "delta=0,500", "-j", "1", "--cluster-shape", "2x8")
    assert given.exit_code == 0, given.output
    assert "2x8 GPUs, " in given.stdout.splitlines()[0] and "header" not in given.stdout.splitlines()[0]


def test_a_bad_shape_in_a_header_is_the_traces_error(gpuq: Gpuq, tmp_path: Path) -> None:
    path = _shaped(tmp_path, "lots")
    result = gpuq("tune", path, "--grid", "delta=0,500", "-j", "1")
    assert result.exit_code == 2
    assert (
        result.stderr == f"gpuq: error: {path}: header cluster_shape 'lots' is not NODESxGPUS (give --cluster-shape)\n"
    )
