"""What the policy lab shows: the strategies side by side (`lab_table`: one row per measure, one
column per strategy) and one job's life under each strategy (`job_timeline`), from a
`gpuq.service.policylab.LabResult`.

The timeline is read from each replay's event log (`ReplayResult.log`: time, event, job, other,
and the work the step lost, as the simulator booked it); the sum over every job equals the
replay's lost GPU-hours (tests/views/test_policylab.py holds it to that).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from gpuq.model import job_id_key
from gpuq.policy.config import Mode
from gpuq.service.policylab import STRATEGIES, LabResult, LabSettings
from gpuq.textsafe import visible
from gpuq.timefmt import format_duration
from gpuq.trace.record import TraceJob

if TYPE_CHECKING:
    from gpuq.replay.model import LogEntry, ReplayResult

__all__ = [
    "LIFE_COLUMNS",
    "MAX_STEPS",
    "METRICS",
    "JobTimeline",
    "LabRow",
    "Metric",
    "Step",
    "StrategyLife",
    "format_gpu_hours",
    "job_order",
    "job_timeline",
    "lab_table",
    "preempted_count",
    "settings_line",
]

#: the columns of `StrategyLife.cells`, and whether each is a number (right-aligned)
LIFE_COLUMNS: Final = (("WAIT", True), ("PREEMPTED", True), ("LOST GPU-h", True), ("END", False),
                       ("IT PREEMPTED", True))  # fmt: skip
#: the most steps of one strategy a timeline lists (a job that flaps is preempted hundreds of times)
MAX_STEPS: Final = 60


@dataclass(frozen=True, slots=True)
class Metric:
    label: str
    value: Callable[[ReplayResult], float]
    format: Callable[[float], str]
    #: a higher value is better (utilisation); otherwise lower is
    higher_is_better: bool = False
    #: shown only when some strategy has a non-zero value
    only_when_any: bool = False


def _pct(x: float) -> str:
    return f"{x * 100:.1f}%"


def format_gpu_hours(x: float) -> str:
    return f"{x:,.2f}" if abs(x) < 10 else f"{x:,.1f}"


def _count(x: float) -> str:
    return f"{int(x):,}"


def _breaches(r: ReplayResult) -> float:
    return float(sum(c.sla_breaches for c in r.classes.values()))


def _lost_share(r: ReplayResult) -> float:
    """The share of the work lost, where the guard finds it too much (else 0: not shown)."""
    thrash = r.thrash
    return (thrash.lost_share or 0.0) if thrash is not None and thrash.too_much_lost else 0.0


METRICS: Final[tuple[Metric, ...]] = (
    Metric("Utilisation", lambda r: r.utilisation, _pct, higher_is_better=True),
    Metric("Useful utilisation", lambda r: r.useful_utilisation, _pct, higher_is_better=True),
    Metric("Mean wait", lambda r: r.wait.mean_s, format_duration),
    Metric("P95 wait", lambda r: r.wait.p95_s, format_duration),
    Metric("SLA breaches", _breaches, _count),
    Metric("Preemptions", lambda r: float(r.preemptions), _count),
    Metric("Lost GPU-h", lambda r: r.lost_gpu_hours, format_gpu_hours),
    Metric("Checkpoint overhead GPU-h", lambda r: r.checkpoint_overhead_gpu_hours, format_gpu_hours),
    Metric("Jobs cancelled", lambda r: float(r.cancelled), _count, only_when_any=True),
    Metric("Jobs unfinished", lambda r: float(r.unfinished), _count, only_when_any=True),
    # the thrash guard (`gpuq.policy.thrash`), against the policy's protections or gpuq's defaults'
    Metric("Thrash: jobs over the daily cap", lambda r: float(r.thrash.over_cap) if r.thrash else 0.0, _count,
           only_when_any=True),
    Metric("Thrash: preempted again too soon", lambda r: float(r.thrash.too_soon) if r.thrash else 0.0, _count,
           only_when_any=True),
    Metric("Thrash: pairs taking turns", lambda r: float(r.thrash.pairs_taking_turns) if r.thrash else 0.0, _count,
           only_when_any=True),
    Metric("Thrash: lost share of the work", _lost_share, _pct, only_when_any=True),
)


@dataclass(frozen=True, slots=True)
class LabRow:
    """One measure across the strategies: the cells (in `STRATEGIES` order), the raw values, and
    which cells hold the best value (none when every strategy is equal)."""

    label: str
    cells: tuple[str, ...]
    values: tuple[float, ...]
    best: tuple[bool, ...]


def lab_table(result: LabResult) -> tuple[LabRow, ...]:
    rows = []
    for metric in METRICS:
        values = tuple(metric.value(r) for r in result.results)
        if metric.only_when_any and not any(values):
            continue
        pick = max if metric.higher_is_better else min
        target = pick(values)
        shown = tuple(metric.format(v) for v in values)
        same = len(set(shown)) == 1
        best = tuple(not same and metric.format(v) == metric.format(target) for v in values)
        rows.append(LabRow(metric.label, shown, values, best))
    return tuple(rows)


def settings_line(settings: LabSettings) -> tuple[tuple[str, str], ...]:
    """The four settings as (name, value) pairs, as the lab shows them."""
    interval = settings.checkpoint_interval_s
    return (
        ("Δ", f"{settings.delta:g}"),
        ("grace", format_duration(settings.grace_period_s)),
        ("checkpoint", format_duration(interval) if interval > 0 else "off"),
        ("SLA", f"×{settings.sla_factor:g}"),
    )


# -- one job's life


@dataclass(frozen=True, slots=True)
class Step:
    at_s: float  # seconds since the job's submit
    event: str  # the log's: submit, start, preempt, drain, finish, cancel
    other: str | None  # the job it was preempted for
    lost_gpu_s: float  # work this step lost (a preemption; a drain whose restore was cut short)
    text: str  # what happened, in words (without the time)

    @property
    def when(self) -> str:
        return f"+{format_duration(self.at_s)}"


@dataclass(frozen=True, slots=True)
class StrategyLife:
    strategy: str
    steps: tuple[Step, ...]
    #: steps left out past `MAX_STEPS`
    more: int
    wait_s: float | None  # first start − submit; None: it never started
    preemptions: int
    lost_gpu_s: float
    #: "finished", "cancelled" or "unfinished"
    outcome: str
    outcome_at_s: float | None
    #: jobs this one preempted
    preempted_others: int

    def cells(self) -> tuple[str, str, str, str, str]:
        """The timeline's summary row (`LIFE_COLUMNS`): wait, preemptions, lost GPU-h, how it
        ended, how many jobs it preempted."""
        wait = "never" if self.wait_s is None else format_duration(self.wait_s)
        end = self.outcome if self.outcome_at_s is None else f"{self.outcome} +{format_duration(self.outcome_at_s)}"
        others = f"{self.preempted_others:,} job{'' if self.preempted_others == 1 else 's'}"
        return wait, f"{self.preemptions:,}×", format_gpu_hours(self.lost_gpu_s / 3600), end, others

    @property
    def summary(self) -> str:
        wait = "never started" if self.wait_s is None else f"waited {format_duration(self.wait_s)}"
        lost = format_gpu_hours(self.lost_gpu_s / 3600)
        end = self.outcome if self.outcome_at_s is None else f"{self.outcome} +{format_duration(self.outcome_at_s)}"
        return f"{wait} · preempted {self.preemptions}× · lost {lost} GPU-h · {end}"


@dataclass(frozen=True, slots=True)
class JobTimeline:
    job_id: str
    gpus: int
    job_class: str
    duration_s: float
    submit_s: float  # since the trace's first submit
    lives: tuple[StrategyLife, ...]  # in `STRATEGIES` order

    @property
    def heading(self) -> str:
        return (f"job {visible(self.job_id)} · {self.gpus} GPU{'s' if self.gpus != 1 else ''} · "
                f"{visible(self.job_class)} · runs {format_duration(self.duration_s)} · "
                f"submitted at +{format_duration(self.submit_s)}")  # fmt: skip


def job_order(result: LabResult) -> tuple[str, ...]:
    """Every replayed job, the most preempted first (summed over the strategies), then in id
    order: the order the operator steps the timeline through."""
    counts: Counter[str] = Counter()
    for r in result.results:
        counts.update(job for _, event, job, _, _ in r.log if event == "preempt")
    ids = {job for _, event, job, _, _ in result.results[0].log if event == "submit"} if result.results else set()
    return tuple(sorted(ids, key=lambda j: (-counts[j], job_id_key(j))))


def preempted_count(result: LabResult) -> int:
    """How many jobs were preempted at least once under some strategy."""
    return len({job for r in result.results for _, event, job, _, _ in r.log if event == "preempt"})


def job_timeline(result: LabResult, job_id: str) -> JobTimeline | None:
    """The job's steps under each strategy; None for a job the replays did not run."""
    job = result.trace.by_id.get(job_id)
    if job is None:
        return None
    lives = []
    submit_s: float | None = None
    for strategy, r in zip(STRATEGIES, result.results, strict=True):
        entries = [e for e in r.log if e[2] == job_id or (e[3] == job_id and e[1] == "preempt")]
        own = [e for e in entries if e[2] == job_id]
        if not own:
            return None
        if submit_s is None:
            submit_s = own[0][0]
        others = sum(1 for e in entries if e[2] != job_id)
        lives.append(_life(strategy, own, others, job, result.settings))
    return JobTimeline(job_id, job.gpus, job.job_class or "normal", job.duration_s, submit_s or 0.0, tuple(lives))


def _life(strategy: str, entries: Sequence[LogEntry], others: int, job: TraceJob,
          settings: LabSettings) -> StrategyLife:  # fmt: skip
    """The job's steps as its replay logged them, each with the work it lost (the simulator's own
    figure, `ReplayResult.log`)."""
    graceful = Mode(strategy) is Mode.GRACEFUL and settings.grace_period_s > 0
    submit = entries[0][0]
    steps: list[Step] = []
    first_start: float | None = None
    run_start = 0.0
    kept = False  # whether a stop so far kept any of the work its run did
    lost_total = 0.0
    preemptions = 0
    outcome, outcome_at = "unfinished", None
    for t, event, _, other, lost in entries:
        if event == "submit":
            text = "submitted"
        elif event == "start":
            if first_start is None:
                first_start = t
                text = "started"
            else:
                text = "resumed from its checkpoint" if kept else "restarted from the beginning"
            run_start = t
        elif event == "preempt":
            preemptions += 1
            whom = f" for {visible(other)}" if other is not None else ""
            if graceful:
                text = f"signalled{whom}: {format_duration(settings.grace_period_s)} to save"
            else:
                kept = kept or lost < job.gpus * (t - run_start)
                cost = f"lost {format_gpu_hours(lost / 3600)} GPU-h" if lost else "nothing lost"
                text = f"preempted{whom}, {cost}"
        elif event == "drain":
            kept = kept or lost < job.gpus * (t - run_start)
            text = "saved and stopped" + (f", lost {format_gpu_hours(lost / 3600)} GPU-h" if lost else "")
        elif event == "finish":
            outcome, outcome_at = "finished", t - submit
            text = "finished"
        elif event == "cancel":
            outcome, outcome_at = "cancelled", t - submit
            text = "cancelled: its work is gone"
        else:  # (an event a later replay may add)
            text = visible(event)
        lost_total += lost
        steps.append(Step(t - submit, event, other, lost, text))
    wait = None if first_start is None else first_start - submit
    shown = tuple(steps[:MAX_STEPS])
    return StrategyLife(strategy, shown, len(steps) - len(shown), wait, preemptions, lost_total, outcome, outcome_at,
                        others)  # fmt: skip
