"""The policy lab's speed (issue 12, item 6: "re-simulated within a second"): the three strategies
replayed again on the built-in workload after a key press.

    python benchmarks/bench_lab.py compute [--presses 16]
    python benchmarks/bench_lab.py console [--presses 16]
    python benchmarks/bench_lab.py all

`compute`: what the lab's worker does after a key moves a setting, timed alone — the three
replays (nothing cached: every press reaches settings not seen before) and the view models
(the table, the job order, the timeline of the shown job). `console`: the real console, headless
at 200x60 over the fixture snapshot: from the key press until the new table is on screen.
Measures and prints; it asserts only that what it timed happened.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from itertools import cycle, islice
from pathlib import Path

from gpuq.service.policylab import KNOBS, Lab, LabSettings, builtin_trace
from gpuq.views.policylab import job_order, job_timeline, lab_table

#: one key per knob, each moving its setting one stop the same way: from the defaults, 16 presses
#: (four of each knob, in turn) reach 16 settings not seen before
KEYS = {"delta": "D", "grace": "a", "checkpoint": "c", "sla": "L"}
STEPS = {"delta": 1, "grace": -1, "checkpoint": -1, "sla": 1}
SNAPSHOT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "snapshots" / "small.json"


def presses(count: int) -> list[str]:
    return list(islice(cycle(KNOBS), count))


def compute(count: int) -> None:
    began = time.perf_counter()
    trace = builtin_trace()
    built = time.perf_counter() - began
    lab = Lab(trace)
    settings = LabSettings()
    began = time.perf_counter()
    lab.result(settings)
    first = time.perf_counter() - began
    walls, replays, events, jobs_s = [], [], [], []
    preemptions = []
    for knob in presses(count):
        settings = settings.stepped(knob, STEPS[knob])
        assert lab.cached(settings) is None
        began = time.perf_counter()
        result = lab.result(settings)
        order = job_order(result)
        lab_table(result)
        job_timeline(result, order[0])
        walls.append(time.perf_counter() - began)
        replays.append(result.wall_s)
        sim = sum(r.sim_wall_s for r in result.results)
        events.append(sum(r.events for r in result.results) / sim)
        jobs_s.append(3 * len(trace.jobs) / sim)
        preemptions.append(tuple(r.preemptions for r in result.results))
    began = time.perf_counter()
    assert lab.cached(settings) is not None
    lab.result(settings)
    cached = time.perf_counter() - began
    print(f"built-in workload: {len(trace.jobs):,} jobs on {settings.nodes}x{settings.gpus_per_node} GPUs, "
          f"generated in {built * 1000:.0f} ms; first replay of the three {first * 1000:.0f} ms")  # fmt: skip
    ms = {name: statistics.median(values) * 1000 for name, values in (("walls", walls), ("replays", replays))}
    print(f"after a key press ({count} presses, each to new settings): median {ms['walls']:.0f} ms, "
          f"max {max(walls) * 1000:.0f} ms (the three replays alone: median {ms['replays']:.0f} ms)")  # fmt: skip
    print(f"  simulator: median {statistics.median(events):,.0f} events/s, {statistics.median(jobs_s):,.0f} jobs/s; "
          f"preemptions (cancel, requeue, graceful) from {min(preemptions)} to {max(preemptions)}")  # fmt: skip
    print(f"a setting seen before (cached): {cached * 1e6:.0f} µs")


async def _console(count: int) -> None:
    from gpuq.service import open_cluster
    from gpuq.tui.app import ConsoleSettings, make_app
    from gpuq.tui.options import ConsoleSetup
    from gpuq.tui.panes.lab import LabPane

    cluster = open_cluster(snapshot=str(SNAPSHOT))
    app = make_app(ConsoleSetup([cluster], ConsoleSettings(), time.time))
    async with app.run_test(size=(200, 60)) as pilot:

        async def until(predicate: object, timeout: float = 30.0) -> None:
            deadline = time.perf_counter() + timeout
            while not predicate():  # type: ignore[operator]
                assert time.perf_counter() < deadline, "timed out"
                await asyncio.sleep(0.002)

        await until(lambda: app.context() is not None)
        pane = app.query_one(LabPane)
        began = time.perf_counter()
        await pilot.press("8")
        await until(lambda: pane._model is not None)
        first = time.perf_counter() - began
        settings = pane.params().settings
        times = []
        for knob in presses(count):
            settings = settings.stepped(knob, STEPS[knob])
            began = time.perf_counter()
            await pilot.press(KEYS[knob])
            await until(lambda s=settings: pane._model is not None and pane._model.params.settings == s)
            times.append(time.perf_counter() - began)
    median = statistics.median(times) * 1000
    print(f"console (headless 200x60): first lab {first * 1000:.0f} ms; key press to the new table on screen: "
          f"median {median:.0f} ms, max {max(times) * 1000:.0f} ms over {count} presses")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("compute", "console", "all"))
    parser.add_argument("--presses", type=int, default=16, choices=range(1, 17), metavar="1..16")
    args = parser.parse_args()
    if args.what in ("compute", "all"):
        compute(args.presses)
    if args.what in ("console", "all"):
        asyncio.run(_console(args.presses))


if __name__ == "__main__":
    main()
