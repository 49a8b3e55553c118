"""The Preemptions view: totals per tenant and class, the jobs preempted (with what is left of the
daily cap), and the live log of preemptions, newest first.

"Live": a preemption that arrives with a refresh is marked (`new`) for that refresh and the next
(`NEW_FOR`); what was there when the view was first shown is history, not news. The marks follow
the snapshots, not the recomputes: a filter or a sort marks nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.widgets import Static

from gpuq.model import job_id_key
from gpuq.textsafe import visible
from gpuq.tui.panes.base import Pane, PaneContext, Selection
from gpuq.tui.statusline import hidden_columns
from gpuq.tui.widgets.table import TableData, ViewTable
from gpuq.views.columns import CONSOLE_PREEMPTION_EVENTS, CONSOLE_PREEMPTION_JOBS, TableSpec
from gpuq.views.ledgercells import (
    JOB_SORT,
    event_cells,
    event_tones,
    job_cells,
    job_tones,
    row_matches,
    totals_line,
)
from gpuq.views.preemptions import (
    CapState,
    LedgerEvent,
    LedgerRow,
    LedgerTotals,
    cap_state,
    daily_cap,
    ledger_thrash,
    ledger_totals,
    ledger_view,
    near_cap,
)

__all__ = ["NEW_FOR", "PreemptionsModel", "PreemptionsPane", "PreemptionsParams"]

#: refreshes a new preemption stays marked
NEW_FOR = 2
#: one event, the same from refresh to refresh: (cluster index, time, victim, preemptor)
EventKey = tuple[int, float, str, str]


@dataclass(frozen=True, slots=True)
class JobRow:
    index: int
    cluster: str
    row: LedgerRow
    cap: CapState


@dataclass(frozen=True, slots=True)
class EventRow:
    index: int
    cluster: str
    event: LedgerEvent
    now: float
    key: EventKey


@dataclass(frozen=True, slots=True)
class PreemptionsParams:
    #: None: the ledger's order (most preempted in 24 h first)
    sort: str | None = None
    descending: bool = True


@dataclass(frozen=True, slots=True)
class PreemptionsModel:
    jobs: list[JobRow]
    events: list[EventRow]
    totals: LedgerTotals
    #: per cluster shown: (name, daily cap, queued jobs capped now, queued jobs one away, their ids)
    caps: list[tuple[str, int, int, int, list[str]]]
    #: per cluster index: the snapshot's instant and every event key in it (unfiltered)
    seen: dict[int, tuple[float, frozenset[EventKey]]]
    total_jobs: int
    total_events: int
    params: PreemptionsParams
    combined: bool
    #: per cluster shown whose preemptions thrash: (name, the guard's line)
    thrash: list[tuple[str, str]] = field(default_factory=list)


#: the jobs table's sort keys, by column
_SORT_KEYS: dict[str, Callable[[JobRow], Any]] = {
    "ID": lambda r: job_id_key(r.row.job.id), "USER": lambda r: r.row.job.user,
    "TENANT": lambda r: r.row.job.tenant, "CLASS": lambda r: r.row.job.job_class,
    "STATE": lambda r: r.row.job.state.value, "24H": lambda r: r.row.last_24h, "TOTAL": lambda r: r.row.total,
    "LAST": lambda r: -r.row.since_last_s, "CAP LEFT": lambda r: (r.cap.left is None, r.cap.left or 0),
}  # fmt: skip


class PreemptionsPane(Pane):
    view_id = "preemptions"
    title = "Preemptions"

    COMPONENT_CLASSES: ClassVar[set[str]] = {"pre--near"}
    DEFAULT_CSS = """
    PreemptionsPane { layout: vertical; }
    PreemptionsPane > #pre-totals {
        height: auto; max-height: 3; background: $panel; color: $foreground; text-wrap: nowrap; text-overflow: ellipsis;
    }
    PreemptionsPane > .pre--near { color: $gpuq-sla-risk; text-style: bold; }
    PreemptionsPane > .pre-label { height: 1; color: $primary; text-style: bold; }
    PreemptionsPane > ViewTable { height: 1fr; min-height: 3; }
    """

    def __init__(self) -> None:
        super().__init__(id="pane-preemptions")
        self._params = PreemptionsParams()
        self._status = ""
        #: per cluster index: the last snapshot instant shown, its event keys, and its refresh count
        self._seen: dict[int, tuple[float, frozenset[EventKey], int]] = {}
        #: event key -> the refresh count of its cluster when it first appeared
        self._fresh: dict[EventKey, int] = {}

    def compose(self) -> ComposeResult:
        yield Static(id="pre-totals")
        yield Static(Text("Jobs preempted · CAP LEFT: preemptions before the daily cap protects the job"),
                     classes="pre-label", id="pre-jobs-label")  # fmt: skip
        yield ViewTable(CONSOLE_PREEMPTION_JOBS, empty_text="no job was preempted", sortable=JOB_SORT, id="pre-jobs")
        yield Static(Text("Preemption log, newest first (cluster time)"), classes="pre-label", id="pre-events-label")
        yield ViewTable(CONSOLE_PREEMPTION_EVENTS, empty_text="no preemption events", id="pre-events")

    @property
    def jobs_table(self) -> ViewTable:
        return self.query_one("#pre-jobs", ViewTable)

    @property
    def events_table(self) -> ViewTable:
        return self.query_one("#pre-events", ViewTable)

    def params(self) -> PreemptionsParams:
        return self._params

    # -- worker thread

    def compute(self, ctx: PaneContext, params: Any) -> PreemptionsModel:
        assert isinstance(params, PreemptionsParams)
        needle = ctx.filter.lower()
        jobs: list[JobRow] = []
        events: list[EventRow] = []
        every_row: list[LedgerRow] = []
        caps = []
        seen: dict[int, tuple[float, frozenset[EventKey]]] = {}
        total_jobs = total_events = 0
        thrash: list[tuple[str, str]] = []
        for item in ctx.items:
            snap, name = item.snapshot, item.snapshot.cluster
            now = snap.now
            view = ledger_view(snap)
            cap = daily_cap(item.cluster)
            every_row.extend(view.jobs)
            total_jobs += len(view.jobs)
            total_events += len(view.events)
            for r in view.jobs:
                row = JobRow(item.index, name, r, cap_state(r.job, cap, now))
                if not needle or row_matches(job_cells(r, row.cap, name), needle):
                    jobs.append(row)
            keys = []
            for e in view.events:
                key = (item.index, e.time.timestamp(), e.victim, e.preemptor or "")
                keys.append(key)
                if not needle or row_matches(event_cells(e, now, name), needle):
                    events.append(EventRow(item.index, name, e, now, key))
            seen[item.index] = (now, frozenset(keys))
            near = near_cap(item.cluster, snap)
            capped = [j.id for j, s in near if s.capped]
            close = [j.id for j, s in near if not s.capped]
            caps.append((name, cap, len(capped), len(close), close))
            verdict = ledger_thrash(item.cluster, snap)
            if verdict.flagged:
                thrash.append((name, verdict.summary()))
        if params.sort is not None:
            jobs.sort(key=_SORT_KEYS[params.sort], reverse=params.descending)
        elif len(ctx.items) > 1:
            jobs.sort(key=lambda r: (-r.row.last_24h, -r.row.total, r.cluster, job_id_key(r.row.job.id)))
        if len(ctx.items) > 1:
            events.sort(key=lambda r: (-r.key[1], r.cluster, job_id_key(r.event.victim)))
        return PreemptionsModel(jobs, events, ledger_totals(every_row), caps, seen, total_jobs, total_events, params,
                                ctx.combined, thrash)  # fmt: skip

    # -- UI thread

    def _mark_new(self, seen: dict[int, tuple[float, frozenset[EventKey]]]) -> dict[int, int]:
        """Which events are news: those in a snapshot that were not in the one before. Returns each
        cluster's refresh count."""
        counts = {}
        for index, (instant, keys) in seen.items():
            before = self._seen.get(index)
            if before is None:  # the first look: all history
                self._seen[index] = (instant, keys, 0)
            elif before[0] != instant:
                count = before[2] + 1
                for key in keys - before[1]:
                    self._fresh[key] = count
                self._seen[index] = (instant, keys, count)
            counts[index] = self._seen[index][2]
        self._fresh = {k: c for k, c in self._fresh.items() if counts.get(k[0], c) - c < NEW_FOR}
        return counts

    def show(self, model: Any) -> None:
        assert isinstance(model, PreemptionsModel)
        counts = self._mark_new(model.seen)
        fresh = self._fresh
        offset = 0 if model.combined else 1
        jobs_spec, events_spec = CONSOLE_PREEMPTION_JOBS, CONSOLE_PREEMPTION_EVENTS
        if not model.combined:  # the CLUSTER column only where several are shown
            jobs_spec = TableSpec(jobs_spec.name, jobs_spec.columns[1:], jobs_spec.header)
            events_spec = TableSpec(events_spec.name, events_spec.columns[1:], events_spec.header)

        def jcells(r: JobRow) -> Sequence[str]:
            return job_cells(r.row, r.cap, r.cluster)[offset:]

        def jtones(r: JobRow) -> Sequence[str | None]:
            return job_tones(r.row, r.cap)[offset:]

        def ecells(r: EventRow) -> Sequence[str]:
            return event_cells(r.event, r.now, r.cluster)[offset:]

        def etones(r: EventRow) -> Sequence[str | None]:
            key = r.key
            new = key in fresh and counts.get(key[0], 0) - fresh[key] < NEW_FOR
            return event_tones(new)[offset:]

        p = model.params
        self.jobs_table.set_data(TableData(jobs_spec, model.jobs, jcells, _job_key, jtones,  # type: ignore[arg-type]
                                           sorted_by=p.sort, descending=p.descending))  # fmt: skip
        self.events_table.set_data(TableData(events_spec, model.events, ecells, _event_key, etones))  # type: ignore[arg-type]
        self.query_one("#pre-totals", Static).update(self._totals(model))
        new = sum(1 for r in model.events if r.key in fresh)
        shown = (
            f"{len(model.jobs)} of {model.total_jobs}" if len(model.jobs) != model.total_jobs else str(model.total_jobs)
        )
        self._status = f"{shown} jobs · {model.total_events} events" + (f" ({new} new)" if new else "")

    def _totals(self, model: PreemptionsModel) -> Text:
        tenants, classes = totals_line(model.totals.tenants, model.totals.classes)
        caps = []
        for name, cap, capped, close, ids in model.caps:
            where = f"{name}: " if model.combined else ""
            if cap <= 0:
                caps.append(f"{where}no daily cap")
                continue
            text = f"{where}daily cap {cap}/24h: {capped} queued jobs capped, {close} one away"
            if ids:
                text += f": {', '.join(ids[:8])}{', …' if len(ids) > 8 else ''}"
            caps.append(text)
        out = Text(no_wrap=True, overflow="ellipsis")
        out.append(visible(tenants))
        out.append("\n")
        out.append(visible(classes))
        out.append("\n")
        near = any(capped or close for _, cap, capped, close, _ in model.caps if cap > 0)
        out.append(visible(" · ".join(caps)), style=self.get_component_rich_style("pre--near") if near else "")
        for name, line in model.thrash:
            where = f"{name}: " if model.combined else ""
            out.append(" · ")
            out.append(visible(where + line), style=self.get_component_rich_style("pre--near"))
        return out

    def selection(self) -> Selection | None:
        if self.events_table.has_focus:
            event = self.events_table.cursor_row()
            return Selection(event.index, event.event.victim) if event is not None else None
        row = self.jobs_table.cursor_row()
        return Selection(row.index, row.row.job.id) if row is not None else None

    def status(self) -> str:
        hidden = {*self.jobs_table.hidden, *self.events_table.hidden}
        more = hidden_columns(hidden)
        return self._status + more

    @on(ViewTable.SortAsked, "#pre-jobs")
    def _sort(self, event: ViewTable.SortAsked) -> None:
        event.stop()
        current = self._params
        if event.column is None:
            self._params = PreemptionsParams(current.sort or "24H", not current.descending)
        elif event.column != current.sort:
            # counts read best largest first, names alphabetically
            self._params = PreemptionsParams(event.column, event.column in ("24H", "TOTAL", "LAST"))
        else:
            self._params = PreemptionsParams(current.sort, not current.descending)
        self.app.recompute()  # type: ignore[attr-defined]  # (now: a test or a key that follows sees it under way)

    @on(ViewTable.SortAsked, "#pre-events")
    def _log_order(self, event: ViewTable.SortAsked) -> None:
        event.stop()  # a log stays newest first
        self.app.notify("the preemption log stays newest first; the jobs table above sorts (s, S)", timeout=3)


def _job_key(row: JobRow) -> str:
    return f"{row.index}/{row.row.job.id}"


def _event_key(row: EventRow) -> str:
    index, t, victim, by = row.key
    return f"{index}/{t}/{victim}/{by}"
