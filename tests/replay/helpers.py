"""Shared pieces of the replay tests: trace builders, Hypothesis strategies, and an event-log
reader that rebuilds every run (start, end, GPUs held) from what the replay reported."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from hypothesis import strategies as st

from gpuq.policy.config import Mode
from gpuq.replay.model import ReplayConfig, ReplayResult
from gpuq.replay.run import ReplayEvent, replay
from gpuq.trace.record import TraceJob

#: time 0 of the traces: a fixed POSIX time (no dependence on today's date)
ORIGIN = 1_795_000_000.0
CLASSES = ("urgent", "high", "normal", "low", "batch")


def job(
    job_id: str, submit: float, duration: float, gpus: int = 1, *, cls: str | None = "normal",
    priority: int | None = None, interval: float | None = None, start: float | None = None,
) -> TraceJob:  # fmt: skip
    """A trace job submitted `submit` seconds after `ORIGIN` (a recorded `start` likewise)."""
    started = None if start is None else ORIGIN + start
    return TraceJob(job_id, ORIGIN + submit, duration, gpus, cls, priority, tenant="t", start_time=started,
                    checkpoint_interval_s=interval)  # fmt: skip


@st.composite
def traces(draw: st.DrawFn, max_jobs: int = 40, max_gpus: int = 16, interval: bool = True) -> list[TraceJob]:
    """Small traces: whole-second submit times and durations, GPUs up to `max_gpus`, classes and
    priorities mixed, a checkpoint interval on some jobs. The first job submits at 0."""
    count = draw(st.integers(1, max_jobs))
    out = []
    for i in range(count):
        submit = 0 if i == 0 else draw(st.integers(0, 20_000))
        out.append(job(
            str(i + 1), float(submit), float(draw(st.integers(0, 7200))), draw(st.integers(1, max_gpus)),
            cls=draw(st.sampled_from(CLASSES)), priority=draw(st.one_of(st.none(), st.integers(0, 1200))),
            interval=draw(st.sampled_from([None, 300.0, 900.0])) if interval else None,
        ))  # fmt: skip
    return out


@dataclass
class Run:
    job: str
    start: float
    gpus: int
    allocation: tuple[tuple[str, tuple[int, ...]], ...]
    end: float | None = None
    how: str = ""  # how it ended: finish, preempt, drain


@dataclass
class Log:
    """Every event a replay reported (`replay(on_event=…)`), and the runs rebuilt from them."""

    events: list[ReplayEvent] = field(default_factory=list)

    def runs(self, stops_at_signal: bool) -> list[Run]:
        """`stops_at_signal`: a preemption stops the run at once (every mode but graceful with a
        grace period, whose run ends at its "drain")."""
        open_runs: dict[str, Run] = {}
        done: list[Run] = []
        for e in self.events:
            if e.event == "start":
                assert e.job not in open_runs, f"job {e.job} started twice"
                open_runs[e.job] = Run(e.job, e.time_s, e.gpus, e.allocation)
            elif e.event == "finish" or e.event == "drain" or (e.event == "preempt" and stops_at_signal):
                run = open_runs.pop(e.job)
                run.end, run.how = e.time_s, e.event
                done.append(run)
        assert not open_runs, f"runs never ended: {sorted(open_runs)}"
        return done


def replay_logged(jobs: Sequence[TraceJob], config: ReplayConfig) -> tuple[ReplayResult, Log]:
    log = Log()
    return replay(jobs, config, on_event=log.events.append), log


def stops_at_signal(config: ReplayConfig) -> bool:
    mode = config.strategy or config.policy.mode
    return not (mode is Mode.GRACEFUL and config.policy.grace_period_s > 0)


def comparable(result: ReplayResult) -> dict[str, object]:
    """The result's document without its one measurement of wall time."""
    doc = result.to_dict()
    doc.pop("sim_wall_s")
    return doc
