"""Replaying a grid's points: in this process, or across local cores with a process pool.

Each worker process loads the trace itself, once (`loader`: a picklable callable, such as a
`functools.partial` of a module-level function over the path and the trace options, so the jobs
never cross a pipe), and replays the points it is handed. A result comes back as
`ReplayResult.to_dict()` and is rebuilt with `from_dict`; the serial run takes the same round
trip, so both give equal results.

Errors: a `GpuqError` in a worker (a malformed trace line) is raised here as the same kind of
error with the same message (a worker's exception object is not sent back: not every error type
pickles).
"""

from __future__ import annotations

import copyreg
import gc
import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from types import MappingProxyType
from typing import Any

from gpuq.errors import BadInput, GpuqError, NotFound, PermissionDenied, Refused, Unreachable
from gpuq.replay.model import ReplayConfig, ReplayResult
from gpuq.trace.record import TraceJob
from gpuq.tune.grid import Point, apply_point

__all__ = ["Loader", "Progress", "Replayer", "default_replayer", "default_workers", "replay_point", "run_points"]

#: loads the trace's jobs (called once per process)
Loader = Callable[[], Sequence[TraceJob]]
#: `gpuq.replay.run.replay`'s signature
Replayer = Callable[[Sequence[TraceJob], ReplayConfig], ReplayResult]
#: (points done, points in all)
Progress = Callable[[int, int], None]

_ERRORS: dict[int, type[GpuqError]] = {1: Refused, 2: BadInput, 3: Unreachable, 4: PermissionDenied}


def default_workers() -> int:
    """The cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def default_replayer() -> Replayer:
    """`gpuq.replay.run.replay` (imported when first needed)."""
    from gpuq.replay.run import replay

    return replay


#: what a worker process keeps between points: its loaded jobs and its replay function
_WORKER: dict[str, Any] = {}


def replay_point(jobs: Sequence[TraceJob], base: ReplayConfig, point: Point, replayer: Replayer) -> ReplayResult:
    """One point replayed, as every path replays it (through the to_dict/from_dict round trip)."""
    result = replayer(jobs, apply_point(base, point))
    return ReplayResult.from_dict(result.to_dict())


def _worker_point(loader: Loader, replayer: Replayer | None, base: ReplayConfig, point: Point) -> tuple[Any, ...]:
    try:
        if "jobs" not in _WORKER:
            # One process per core that lives for the run: the collector would only rescan
            # the trace's acyclic objects (as `gpuq.cli.main` reasons for the CLI).
            gc.disable()
            _WORKER["jobs"] = tuple(loader())
            gc.freeze()
            _WORKER["replay"] = replayer or default_replayer()
        result = _WORKER["replay"](_WORKER["jobs"], apply_point(base, point))
        return ("ok", result.to_dict())
    except GpuqError as exc:
        return ("error", exc.exit_code, str(exc), isinstance(exc, NotFound))


def _raise(reply: tuple[Any, ...]) -> None:
    _, code, message, not_found = reply
    raise (NotFound if not_found else _ERRORS.get(code, Refused))(message)


def _mappingproxy(items: dict[Any, Any]) -> MappingProxyType[Any, Any]:
    return MappingProxyType(items)


def _pickle_mappingproxy(proxy: MappingProxyType[Any, Any]) -> tuple[Any, ...]:
    return (_mappingproxy, (dict(proxy),))


def run_points(
    loader: Loader,
    base: ReplayConfig,
    points: Sequence[Point],
    *,
    workers: int | None = None,
    replayer: Replayer | None = None,
    progress: Progress | None = None,
) -> list[ReplayResult]:
    """Replay `points` on `base`, one result per point in the points' order.

    `workers`: processes (default: the cores this process may use); 1 replays here, with no
    pool. `replayer`: default `gpuq.replay.run.replay` (tests hand in their own; it must be a
    module-level function, since it is pickled to the workers)."""
    total = len(points)
    workers = min(workers or default_workers(), max(total, 1))
    if progress is not None:
        progress(0, total)
    if workers <= 1:
        return _serial(loader, base, points, replayer, progress)
    # The policy's read-only tables (MappingProxyType) go to the workers as copies of their dicts.
    copyreg.pickle(MappingProxyType, _pickle_mappingproxy)
    results: list[ReplayResult | None] = [None] * total
    # spawn: fresh interpreters, nothing inherited from a parent that may hold threads and locks
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        pending: dict[Future[tuple[Any, ...]], int] = {
            pool.submit(_worker_point, loader, replayer, base, point): i for i, point in enumerate(points)
        }
        done = 0
        try:
            while pending:
                finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in finished:
                    index = pending.pop(future)
                    reply = future.result()
                    if reply[0] != "ok":
                        _raise(reply)
                    results[index] = ReplayResult.from_dict(reply[1])
                    done += 1
                    if progress is not None:
                        progress(done, total)
        except BaseException:
            for future in pending:
                future.cancel()
            raise
    return [r for r in results if r is not None]


def _serial(
    loader: Loader, base: ReplayConfig, points: Sequence[Point], replayer: Replayer | None, progress: Progress | None
) -> list[ReplayResult]:
    jobs = tuple(loader())
    replay = replayer or default_replayer()
    results = []
    for n, point in enumerate(points, start=1):
        results.append(replay_point(jobs, base, point, replay))
        if progress is not None:
            progress(n, len(points))
    return results
