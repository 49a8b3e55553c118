"""The points replayed here and across worker processes: the same results, in the points' order;
progress reported; a worker's error raised here with its message."""

from __future__ import annotations

import functools

import pytest

from gpuq.errors import BadInput
from gpuq.replay.model import ReplayConfig
from gpuq.tune.grid import apply_point, parse_grid
from gpuq.tune.pool import run_points
from gpuq.tune.score import rank
from tests.tune.helpers import failing_replay, fake_replay, trace_jobs

GRID = ("delta=0,50,100", "checkpoint_interval=10m,30m", "strategy=requeue,cancel")
LOADER = functools.partial(trace_jobs, 7)


def test_parallel_equals_serial_exactly() -> None:
    points = parse_grid(GRID).points()
    seen: list[tuple[int, int]] = []
    serial = run_points(LOADER, ReplayConfig(), points, workers=1, replayer=fake_replay)
    parallel = run_points(LOADER, ReplayConfig(), points, workers=2, replayer=fake_replay,
                          progress=lambda done, total: seen.append((done, total)))  # fmt: skip
    assert parallel == serial
    assert rank(points, parallel) == rank(points, serial)
    # in the points' order: each result is its own point's
    for point, got in zip(points, serial, strict=True):
        assert got == fake_replay(trace_jobs(7), apply_point(ReplayConfig(), point))
    assert len({r.wait.mean_s for r in serial}) > 1  # the points really differ
    assert seen == [(n, len(points)) for n in range(len(points) + 1)]


def test_serial_progress_and_loaded_jobs() -> None:
    points = parse_grid(["delta=0,50"]).points()
    seen: list[tuple[int, int]] = []
    results = run_points(functools.partial(trace_jobs, 3), ReplayConfig(), points, workers=1, replayer=fake_replay,
                         progress=lambda d, t: seen.append((d, t)))  # fmt: skip
    assert [r.jobs for r in results] == [3, 3]
    assert seen == [(0, 2), (1, 2), (2, 2)]


@pytest.mark.parametrize("workers", [1, 2])
def test_a_workers_error_comes_back_as_the_same_error(workers: int) -> None:
    points = parse_grid(["delta=0,50"]).points()
    with pytest.raises(BadInput, match=r"^replay refused delta (0|50)$"):
        run_points(LOADER, ReplayConfig(), points, workers=workers, replayer=failing_replay)


def test_the_real_replay_runs_in_workers() -> None:
    points = parse_grid(["delta=0,500", "min_runtime=0,10m"]).points()
    base = ReplayConfig(nodes=1, gpus_per_node=4)
    serial = run_points(functools.partial(trace_jobs, 40), base, points, workers=1)
    parallel = run_points(functools.partial(trace_jobs, 40), base, points, workers=2)
    assert [r.jobs for r in serial] == [40] * 4
    strip = [[{**r.to_dict(), "sim_wall_s": 0} for r in rs] for rs in (serial, parallel)]
    assert strip[0] == strip[1]
    assert any(r.wait.mean_s > 0 for r in serial)  # 40 jobs on 4 GPUs: a queue formed
