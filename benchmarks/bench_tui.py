"""The console's speed (issue 10): first paint of the 200,000-job snapshot, a refresh that changes
1% of the rows, a key press while a refresh computes, and memory over many refreshes.

    python benchmarks/gen_big_snapshot.py benchmarks/out/big.json
    python benchmarks/bench_tui.py paint benchmarks/out/big.json [--runs 3]
    python benchmarks/bench_tui.py refresh benchmarks/out/big.json [--runs 5]
    python benchmarks/bench_tui.py keys benchmarks/out/big.json [--presses 20]
    python benchmarks/bench_tui.py memory [--jobs 10000] [--refreshes 1000] [--switch 50]
    python benchmarks/bench_tui.py all benchmarks/out/big.json

Every console is built by `make_app` (what `gpuq tui` runs) and runs headless at 200x60; each
frame Textual would send to a terminal is also encoded as terminal output (`render_segments`), so
a "painted" frame costs here what it costs on a terminal. `paint` starts a fresh process per run
(as `gpuq tui --snapshot big.json` does) and also times the real `gpuq tui` inside tmux until its
rows are on the screen. Measures and prints; it asserts only that what it timed happened (rows on
screen, the same table object after a refresh).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import gc
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

START = time.perf_counter()

import msgspec  # noqa: E402 - the child's import time is measured from START
from textual import events  # noqa: E402

from gpuq.backends.base import Backend, Capabilities  # noqa: E402
from gpuq.config import PolicySource, load_config  # noqa: E402
from gpuq.model import Snapshot  # noqa: E402
from gpuq.model.codec import read_snapshot_file  # noqa: E402
from gpuq.policy.config import DEFAULT_POLICY  # noqa: E402
from gpuq.service import Cluster  # noqa: E402
from gpuq.tui.app import ConsoleSettings, GpuqConsole, make_app  # noqa: E402
from gpuq.tui.options import ConsoleSetup, console_setup  # noqa: E402
from gpuq.tui.panes.queue import QueuePane  # noqa: E402
from gpuq.tui.widgets.table import ViewTable  # noqa: E402

SIZE = (200, 60)
#: Textual draws at most 60 frames a second: "within one frame" is within this
FRAME_S = 1 / 60


# -- what was drawn, and when


class Probe:
    """Records, for every frame the app would send to a terminal, when it was sent and whether
    the queue table drew job rows in it (and the row under the cursor), and when the table
    handled a cursor key."""

    def __init__(self) -> None:
        self.frames: list[tuple[float, bool, bool]] = []
        self.moved: list[float] = []
        #: set (on the UI thread's loop) when a frame with job rows is sent; made by `wait_rows`
        self.rows_sent: asyncio.Event | None = None
        self._rows = False
        self._cursor = False
        render, cursor = ViewTable.render_line, ViewTable.action_cursor
        probe = self

        def render_line(table: ViewTable, y: int) -> Any:
            strip = render(table, y)
            if y >= 1 and table.id == "queue-table" and table.row_count:
                probe._rows = True
                if int(table.scroll_y) + y - 1 == table.cursor:
                    probe._cursor = True
            return strip

        def action_cursor(table: ViewTable, step: int) -> None:
            cursor(table, step)
            probe.moved.append(time.perf_counter())

        ViewTable.render_line = render_line  # type: ignore[method-assign]
        ViewTable.action_cursor = action_cursor  # type: ignore[method-assign]

        def restore() -> None:
            ViewTable.render_line, ViewTable.action_cursor = render, cursor  # type: ignore[method-assign]

        self._restore = restore

    def attach(self, app: GpuqConsole) -> None:
        display = app._display

        def on_display(screen: Any, renderable: Any) -> None:
            if renderable is not None:
                if hasattr(renderable, "render_segments"):
                    renderable.render_segments(app.console)  # what a terminal would be sent
                self.frames.append((time.perf_counter(), self._rows, self._cursor))
                if self._rows and self.rows_sent is not None:
                    self.rows_sent.set()
                self._rows, self._cursor = False, False
            display(screen, renderable)

        app._display = on_display  # type: ignore[method-assign]

    async def wait_rows(self, timeout: float = 120.0) -> None:
        """Until a frame with job rows is sent: an event, not a poll (each look through the pilot
        is UI work that a terminal's console does not do, taken from the worker that loads)."""
        self.rows_sent = asyncio.Event()
        if self.first_with_rows() is None:
            await asyncio.wait_for(self.rows_sent.wait(), timeout)

    def first_with_rows(self, after: float = 0.0) -> float | None:
        return next((t for t, rows, _ in self.frames if rows and t >= after), None)

    def cursor_shown(self, after: float) -> float | None:
        """When the first frame with the cursor's row was sent after a cursor key handled after
        `after`."""
        handled = next((t for t in self.moved if t >= after), None)
        if handled is None:
            return None
        return next((t for t, _, cursor in self.frames if cursor and t >= handled), None)

    def close(self) -> None:
        self._restore()


def timed(obj: Any, name: str, log: list[tuple[float, float]]) -> None:
    """Wrap `obj.name` (on an instance: an attribute shadowing the method; on a class: the method
    itself) to log (start, end) of each call."""
    method = getattr(obj, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return method(*args, **kwargs)
        finally:
            log.append((started, time.perf_counter()))

    if isinstance(obj, type):

        def unbound(self: Any, *args: Any, **kwargs: Any) -> Any:
            return wrapper(self, *args, **kwargs)

        setattr(obj, name, unbound)
    else:
        setattr(obj, name, wrapper)


async def until(pilot: Any, predicate: Callable[[], object], timeout: float = 120.0, step: float = 0.002) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise SystemExit("timed out: the console did not get there")
        await pilot.pause(step)


async def quiet(pilot: Any) -> None:
    """Let every worker finish and its messages be handled before the console is closed."""
    app: GpuqConsole = pilot.app
    await until(pilot, lambda: not app._computing and not any(w.is_running for w in app.workers), step=0.01)
    await pilot.pause(0.3)


def shown(app: GpuqConsole) -> bool:
    return app._token > 0 and not app._computing and app.query_one("#queue-table", ViewTable).row_count > 0


# -- (a) first paint


def paint_child(path: str) -> None:
    """One `gpuq tui --snapshot PATH` start, headless: print when each step ended (from START)."""
    probe = Probe()
    setup = console_setup(load_config(), snapshot=path)
    t_setup = time.perf_counter()
    computes: list[tuple[float, float]] = []
    shows: list[tuple[float, float]] = []
    # (on the class: the first read may be computed before run_test hands over)
    timed(QueuePane, "compute", computes)
    timed(QueuePane, "show", shows)
    app = make_app(setup, owns_process=True)  # (as `gpuq tui` makes it)
    probe.attach(app)

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            # (the probe notes each frame as it is sent; a poll through the pilot until then cost
            # the worker that reads and computes ~20% of the interpreter, which a terminal's console
            # never has to give up)
            await probe.wait_rows()
            painted = probe.first_with_rows()
            step = 0.02
            # (the first frame may show the first rows while the rest are still sorted: then the
            # finished compute, and the frame with all rows, follow)
            await until(pilot, lambda: bool(computes) and not app._computing, step=step)
            await until(pilot, lambda: probe.first_with_rows(after=shows[-1][1]) is not None, step=step)
            whole = probe.first_with_rows(after=shows[-1][1])
            assert painted is not None and whole is not None and shows and computes
            result = {"painted": painted - START, "setup": t_setup - START, "compute": computes[0][1] - computes[0][0],
                      "read_done": computes[0][0] - START, "show": shows[0][1] - shows[0][0], "whole": whole - START,
                      "rows": app.query_one("#queue-table", ViewTable).row_count}  # fmt: skip
            print(json.dumps(result), flush=True)
            # The figure is taken: neither the console's shutdown nor the interpreter's teardown of
            # 200,000 jobs is part of it.
            os._exit(0)

    asyncio.run(run())


#: how often `tmux_paint` reads the pane: each read is a tmux client process, and read every 5 ms
#: they kept a core busy that the console's terminal does not take from it
POLL_S = 0.02


def tmux_paint(path: str, env: dict[str, str]) -> float | None:
    """Seconds from starting the real `gpuq tui --snapshot PATH` in tmux until a job row shows."""
    tmux = shutil.which("tmux")
    gpuq = Path(sys.executable).with_name("gpuq")
    if tmux is None or not gpuq.exists():
        return None
    sock = f"gpuq-bench-{uuid.uuid4().hex[:8]}"

    def call(*args: str) -> str:
        argv = [tmux, "-L", sock, *args]
        return subprocess.run(argv, capture_output=True, text=True, env=env, check=True).stdout  # noqa: S603

    started = time.perf_counter()
    call("-f", os.devnull, "new-session", "-d", "-x", str(SIZE[0]), "-y", str(SIZE[1]), "--", str(gpuq), "tui",
         "--snapshot", path)  # fmt: skip
    try:
        while time.perf_counter() - started < 120:
            lines = call("capture-pane", "-p").splitlines()
            if any(line.startswith("ID ") for line in lines) and any(line[:1].isdigit() for line in lines):
                return time.perf_counter() - started
            time.sleep(POLL_S)
        return None
    finally:
        subprocess.run([tmux, "-L", sock, "kill-server"], capture_output=True, env=env, check=False)  # noqa: S603


def paint(path: str, runs: int) -> None:
    env = dict(os.environ)
    with tempfile.TemporaryDirectory() as home:
        for name in ("config", "state", "cache"):
            env[f"XDG_{name.upper()}_HOME"] = f"{home}/{name}"
        results = []
        for _ in range(runs):
            out = subprocess.run([sys.executable, __file__, "_paint", path], capture_output=True, text=True,  # noqa: S603
                                 env=env, check=True)  # fmt: skip
            results.append(json.loads(out.stdout.strip().splitlines()[-1]))
        tmux = [t for t in (tmux_paint(path, env) for _ in range(runs)) if t is not None]

    def med(key: str) -> float:
        return statistics.median(r[key] for r in results)

    print(f"(a) first paint of {path} ({results[0]['rows']:,} rows), {SIZE[0]}x{SIZE[1]}, median of {runs} fresh "
          f"processes:")  # fmt: skip
    painted = sorted(r["painted"] for r in results)
    print(f"    the first frame with rows sent {med('painted'):.2f} s after the imports began (min {painted[0]:.2f}, "
          f"max {painted[-1]:.2f})")  # fmt: skip
    print(f"    of which: imports, config and opening {med('setup'):.2f} s; the first compute began at "
          f"{med('read_done'):.2f} s and took {med('compute'):.2f} s (worker), handing over the first rows "
          f"ahead of the sort; show {med('show') * 1000:.1f} ms (UI thread)")  # fmt: skip
    print(f"    the frame with every row sorted sent {med('whole'):.2f} s after the imports began")
    if tmux:
        print(f"    `gpuq tui --snapshot` in tmux until a row is on the screen: median {statistics.median(tmux):.2f} s "
              f"(min {min(tmux):.2f}, max {max(tmux):.2f})")  # fmt: skip
    else:
        print("    (tmux or the venv's gpuq script not found: the terminal figure is left out)")


# -- a backend whose reads change 1% of the jobs


class Changing(Backend):
    """Serves `snap`; each read changes the priority of `share` of the jobs (others each time)
    and, with `move_s`, moves the cluster's clock on."""

    name = "bench"

    def __init__(self, snap: Snapshot, share: float = 0.01, move_s: float = 0.0, seed: int = 7) -> None:
        self.base = snap
        self.cluster = snap.cluster
        self.share = share
        self.move_s = move_s
        self.rng = random.Random(seed)
        self.reads = 0
        self.changed: list[str] = []

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(read_only_reason="a benchmark")

    def snapshot(self, *, ledger: bool = True) -> Snapshot:
        self.reads += 1
        jobs = list(self.base.jobs)
        picked = self.rng.sample(range(len(jobs)), max(1, int(len(jobs) * self.share))) if self.reads > 1 else []
        for i in picked:
            jobs[i] = msgspec.structs.replace(jobs[i], priority=jobs[i].priority + self.reads)
        self.changed = [jobs[i].id for i in picked]
        taken = self.base.taken_at + timedelta(seconds=self.move_s * self.reads)
        return dataclasses.replace(self.base, jobs=tuple(jobs), taken_at=taken)


def changing_cluster(snap: Snapshot, **kwargs: Any) -> tuple[Cluster, Changing]:
    backend = Changing(snap, **kwargs)
    return Cluster(backend, "bench", PolicySource(DEFAULT_POLICY, "defaults")), backend


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def console(cluster: Cluster, clock: Clock, refresh_s: float = 3600.0) -> GpuqConsole:
    """A console whose own schedule stays out of the way (the benchmark refreshes it), with the
    collector set as `gpuq tui` sets it (`gpuq.tui.collector`)."""
    return make_app(ConsoleSetup([cluster], ConsoleSettings(refresh_s=refresh_s), clock), owns_process=True)


# -- (b) a refresh that changes 1% of the rows


def refresh(path: str, runs: int) -> None:
    snap = read_snapshot_file(Path(path))
    cluster, backend = changing_cluster(snap)
    app = console(cluster, Clock(snap.now))
    probe = Probe()
    probe.attach(app)

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: shown(app))
            pane = app.query_one("#pane-queue")
            table = app.query_one("#queue-table", ViewTable)
            computes: list[tuple[float, float]] = []
            shows: list[tuple[float, float]] = []
            recomputes: list[tuple[float, float]] = []
            timed(pane, "compute", computes)
            timed(pane, "show", shows)
            timed(app, "recompute", recomputes)
            rows = []
            for _ in range(runs):
                await pilot.pause(0.2)
                # the views' widgets (Textual's footer recomposes its keys as bindings change)
                widgets = [id(w) for w in app.query_one("#panes").walk_children(with_self=True)]
                token = app._token
                app.action_refresh_now()
                await until(pilot, lambda t=token: app._token > t and not app._computing and len(shows) > len(rows))
                show_start, show_end = shows[-1]
                painted = probe.first_with_rows(after=show_end)
                while painted is None:
                    await pilot.pause(0.001)
                    painted = probe.first_with_rows(after=show_end)
                assert app.query_one("#queue-table", ViewTable) is table, "the table was replaced"
                now = [id(w) for w in app.query_one("#panes").walk_children(with_self=True)]
                assert now == widgets, "widgets remounted"
                by_id = {r.item.job.id: r.item.job.priority for r in table.data.rows}
                base = {j.id: j.priority for j in snap.jobs}
                assert all(by_id[j] > base[j] for j in backend.changed), "the new priorities are not shown"
                rows.append({"refreshed": recomputes[-1][0], "compute": computes[-1][1] - computes[-1][0],
                             "show": show_end - show_start, "ui": painted - show_start,
                             "total": painted - recomputes[-1][0]})  # fmt: skip

            def med(key: str) -> float:
                return statistics.median(r[key] for r in rows) * 1000

            def rng(key: str) -> str:
                return f"{min(r[key] for r in rows) * 1000:.0f}-{max(r[key] for r in rows) * 1000:.0f}"

            print(f"(b) a refresh changing {len(backend.changed):,} of {len(snap.jobs):,} rows (1%), median of "
                  f"{runs} (range):")  # fmt: skip
            print(f"    UI thread, pane.show -> a frame with the new rows sent: {med('ui'):.1f} ms "
                  f"({rng('ui')}); show() alone {med('show'):.1f} ms ({rng('show')})")  # fmt: skip
            print(f"    worker, QueuePane.compute: {med('compute'):.0f} ms ({rng('compute')})")
            print(f"    Refreshed -> painted (the compute included): {med('total'):.0f} ms ({rng('total')})")
            print("    in place: the same ViewTable object, no widget mounted or removed, the changed rows shown")
            await quiet(pilot)

    asyncio.run(run())
    probe.close()


# -- (c) a key press while a refresh computes


def keys(path: str, presses: int) -> None:
    """`down` sent from another thread, as a terminal driver's input thread sends keys (so a key
    waits for whatever holds the UI thread), at idle and at random moments of a refresh."""
    snap = read_snapshot_file(Path(path))
    cluster, _ = changing_cluster(snap)
    app = console(cluster, Clock(snap.now))
    probe = Probe()
    probe.attach(app)

    def phase() -> str:
        if app._computing:
            return "computing"
        return "reading" if app.refreshes[0].running else "showing"

    async def press_down(delay: float = 0.0) -> tuple[float, str]:
        driver = app._driver
        assert driver is not None
        sent: list[tuple[float, str]] = []

        def send() -> None:
            time.sleep(delay)
            event = events.Key("down", None)
            event.set_sender(app)
            sent.append((time.perf_counter(), phase()))
            driver.send_message(event)

        threading.Thread(target=send, daemon=True).start()
        drawn, deadline = None, time.monotonic() + 60
        while drawn is None:
            if time.monotonic() > deadline:
                raise SystemExit("the key was not answered within 60 s")
            await asyncio.sleep(0.0005)
            drawn = probe.cursor_shown(after=sent[0][0]) if sent else None
        return drawn - sent[0][0], sent[0][1]

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: shown(app))
            table = app.query_one("#queue-table", ViewTable)
            idle: list[float] = []
            busy: dict[str, list[float]] = {}
            for _ in range(presses):
                await pilot.pause(0.05)
                idle.append((await press_down())[0])
            rng = random.Random(1)
            for _ in range(presses):
                await pilot.pause(0.05)
                token = app._token
                app.action_refresh_now()  # a read with 1% changed, then its 200,000 rows computed
                latency, when = await press_down(rng.uniform(0.0, 2.0))
                busy.setdefault(when, []).append(latency)
                await until(pilot, lambda t=token: app._token > t and not app._computing)

            def fmt(xs: list[float]) -> str:
                xs = sorted(xs)
                p90 = xs[int(0.9 * (len(xs) - 1))]
                within = sum(x <= FRAME_S for x in xs)
                spread = f"p90 {p90 * 1000:.1f} ms, " if len(xs) >= 10 else ""
                return (f"median {statistics.median(xs) * 1000:.1f} ms, {spread}max {xs[-1] * 1000:.1f} ms; "
                        f"{within}/{len(xs)} within one frame ({FRAME_S * 1000:.1f} ms)")  # fmt: skip

            print(f"(c) `down` (sent from an input thread) -> the frame with the moved cursor sent, "
                  f"{table.row_count:,} rows:")  # fmt: skip
            print(f"    idle, {len(idle)} presses: {fmt(idle)}")
            print(f"    at a random moment of a refresh, {presses} presses:")
            for when in ("reading", "computing", "showing"):
                if when in busy:
                    print(f"      {when} ({len(busy[when])}): {fmt(busy[when])}")
            await quiet(pilot)

    asyncio.run(run())
    probe.close()


# -- (d) memory over many refreshes


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def memory(jobs: int, refreshes: int, move_s: float, switch: int) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from gen_big_snapshot import generate

    with tempfile.TemporaryDirectory() as tmp:
        doc = generate(max(1, jobs // 40), jobs, 7)
        path = Path(tmp) / "jobs.json"
        path.write_text(json.dumps(doc))
        snap = read_snapshot_file(path)
    cluster, backend = changing_cluster(snap, move_s=move_s)
    clock = Clock(snap.now)
    app = console(cluster, clock, refresh_s=move_s)
    marks = sorted({m for m in (1, 10, 100, 500, 1000, 2000, refreshes) if m <= refreshes})
    seen: list[tuple[int, float, int]] = []

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: shown(app))
            views = ["queue", "gpus", "sla", "preemptions", "queue"]
            for n in range(1, refreshes + 1):
                if switch and n % switch == 0:  # the other views now and then, as an operator does
                    app.action_show_view(views[(n // switch) % len(views)])
                clock.now += move_s
                token = app._token
                app.action_refresh_now()
                await until(pilot, lambda t=token: app._token > t and not app._computing)
                if n in marks:
                    gc.collect()
                    seen.append((n, rss_mib(), len(gc.get_objects())))
            await quiet(pilot)

    started = time.perf_counter()
    asyncio.run(run())
    took = time.perf_counter() - started
    views_shown = f"another view every {switch} refreshes" if switch else "the Queue view shown"
    print(f"(d) RSS over {refreshes} refreshes of {len(snap.jobs):,} jobs, the clock moving {move_s:g} s a "
          f"refresh ({refreshes * move_s / 3600:.1f} h of cluster time; 1% of the jobs changed each time; "
          f"{views_shown}; {took:.0f} s):")  # fmt: skip
    for n, rss, objects in seen:
        print(f"    after {n:>5} refreshes: RSS {rss:7.1f} MiB, {objects:,} Python objects tracked by the collector")
    print(f"    reads served: {backend.reads}")


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["paint", "refresh", "keys", "memory", "all", "_paint"])
    parser.add_argument("path", nargs="?", default="benchmarks/out/big.json")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--presses", type=int, default=20)
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--refreshes", type=int, default=1000)
    parser.add_argument("--move", type=float, default=2.0, help="cluster seconds a refresh moves the clock on")
    parser.add_argument("--switch", type=int, default=0, help="show another view every N refreshes (0: never)")
    args = parser.parse_args(argv)
    if args.what == "_paint":
        paint_child(args.path)
        return
    if args.what != "memory" and not Path(args.path).exists():
        raise SystemExit(f"{args.path}: make it with `python benchmarks/gen_big_snapshot.py {args.path}`")
    if args.what in ("paint", "all"):
        paint(args.path, args.runs)
    if args.what in ("refresh", "all"):
        refresh(args.path, max(args.runs, 5))
    if args.what in ("keys", "all"):
        keys(args.path, args.presses)
    if args.what in ("memory", "all"):
        memory(args.jobs, args.refreshes, args.move, args.switch)


if __name__ == "__main__":
    main(sys.argv[1:])
