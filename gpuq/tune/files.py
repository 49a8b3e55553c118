"""The files a tuning run shares with the tasks of a Slurm job array.

- The points file (``points.json``, `gpuq.tune-points/v1`): the grid as given (`--grid` texts),
  the number of tasks, and every point's id and values, shown as the table shows them. A task
  parses the grid again and checks that it finds the same points.
- One result file per task (``result-<task>.json``, `gpuq.tune-result/v1`): the points the task
  replayed, by index and id, each with its `ReplayResult.to_dict()`. Written to a temporary name
  and renamed, so a file that exists is whole.

A task's share of the points: every `tasks`-th point from its own index (`task_share`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import msgspec

from gpuq.errors import BadInput
from gpuq.replay.model import ReplayResult
from gpuq.textsafe import visible
from gpuq.tune.grid import Grid, Point, parse_grid

__all__ = [
    "POINTS_FORMAT",
    "RESULT_FORMAT",
    "read_points_file",
    "read_result_file",
    "result_path",
    "task_share",
    "write_points_file",
    "write_result_file",
]

POINTS_FORMAT: Final = "gpuq.tune-points/v1"
RESULT_FORMAT: Final = "gpuq.tune-result/v1"


def task_share(points: Sequence[Point], task: int, tasks: int) -> tuple[Point, ...]:
    """The points task `task` of `tasks` replays."""
    return tuple(points[task::tasks])


def result_path(directory: str | Path, task: int) -> Path:
    return Path(directory) / f"result-{task}.json"


def _write_atomic(path: Path, data: bytes) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_bytes(data)
    os.replace(temporary, path)


def _points_doc(grid_specs: Sequence[str], grid: Grid, tasks: int) -> dict[str, Any]:
    return {
        "format": POINTS_FORMAT,
        "grid": list(grid_specs),
        "tasks": tasks,
        "points": [{"index": p.index, "id": p.id, "label": p.label} for p in grid.points()],
    }


def write_points_file(path: str | Path, grid_specs: Sequence[str], tasks: int) -> Grid:
    """Write the points file of the grid `grid_specs` split over `tasks` tasks; the parsed grid."""
    grid = parse_grid(grid_specs)
    _write_atomic(Path(path), msgspec.json.encode(_points_doc(grid_specs, grid, tasks)) + b"\n")
    return grid


def _load(path: str | Path, what: str) -> Mapping[str, Any]:
    try:
        raw = msgspec.json.decode(Path(path).read_bytes())
    except OSError as exc:
        raise BadInput(f"{visible(str(path))}: cannot read the {what} ({exc.strerror or exc})") from None
    except msgspec.DecodeError as exc:
        raise BadInput(f"{visible(str(path))}: not a {what} ({exc})") from None
    if not isinstance(raw, dict):
        raise BadInput(f"{visible(str(path))}: not a {what}")
    return raw


def read_points_file(path: str | Path) -> tuple[Grid, int]:
    """The grid and the number of tasks of a points file, checked: its grid must give exactly
    the points it lists (the same gpuq, the same grid)."""
    raw = _load(path, "tuning points file")
    shown = visible(str(path))
    if raw.get("format") != POINTS_FORMAT:
        raise BadInput(f"{shown}: not a {POINTS_FORMAT} file (format {visible(repr(raw.get('format')))})")
    specs, tasks = raw.get("grid"), raw.get("tasks")
    if not isinstance(specs, list) or not all(isinstance(s, str) for s in specs):
        raise BadInput(f"{shown}: 'grid' must be a list of --grid texts")
    if not isinstance(tasks, int) or isinstance(tasks, bool) or tasks < 1:
        raise BadInput(f"{shown}: 'tasks' must be a whole number of at least 1")
    grid = parse_grid(specs)
    listed = raw.get("points")
    expected = _points_doc(specs, grid, tasks)["points"]
    if listed != expected:
        raise BadInput(f"{shown}: its points are not the ones its grid gives (written by another gpuq version?)")
    return grid, tasks


def write_result_file(directory: str | Path, task: int, results: Sequence[tuple[Point, ReplayResult]]) -> Path:
    path = result_path(directory, task)
    doc = {
        "format": RESULT_FORMAT,
        "task": task,
        "points": [{"index": p.index, "id": p.id, "result": r.to_dict()} for p, r in results],
    }
    _write_atomic(path, msgspec.json.encode(doc) + b"\n")
    return path


def read_result_file(path: str | Path, expected: Sequence[Point]) -> list[ReplayResult]:
    """The results of one task's file, in `expected`'s order; BadInput when it holds other points."""
    raw = _load(path, "tuning result file")
    shown = visible(str(path))
    entries = raw.get("points")
    if raw.get("format") != RESULT_FORMAT or not isinstance(entries, list):
        raise BadInput(f"{shown}: not a {RESULT_FORMAT} file")
    got = [(e.get("index"), e.get("id")) for e in entries if isinstance(e, dict)]
    want = [(p.index, p.id) for p in expected]
    if got != want:
        raise BadInput(f"{shown}: holds points {[i for _, i in got]}, expected {[i for _, i in want]}")
    try:
        return [ReplayResult.from_dict(e["result"]) for e in entries]
    except (KeyError, TypeError, ValueError) as exc:
        raise BadInput(f"{shown}: a result that does not read back ({exc})") from None
