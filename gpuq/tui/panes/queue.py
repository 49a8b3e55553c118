"""The Queue view: every queued job of the cluster(s) in scope, sortable and filterable."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import repeat
from typing import Any, ClassVar

import msgspec
from textual import on
from textual.app import ComposeResult
from textual.binding import BindingType

from gpuq.tui.collector import untrack
from gpuq.tui.keymap import bindings
from gpuq.tui.panes.base import Pane, PaneContext, Selection
from gpuq.tui.statusline import hidden_columns
from gpuq.tui.widgets.table import TableData, ViewTable
from gpuq.views.columns import CONSOLE_QUEUE
from gpuq.views.groups import GroupRow, group_items
from gpuq.views.queue import QueueFilter, QueueRow, SortKey, queue_rows, sort_rows
from gpuq.views.queuecells import POD_MARK, SORT_BY_COLUMN, group_cells, group_tones, matches, queue_cells, queue_tones

__all__ = ["QueuePane", "QueueParams"]


class Row(msgspec.Struct, frozen=True, gc=False):
    """A combined view's row: the cluster's index and name with the queue row (or, grouped by
    owner, an owner's line) and the snapshot's time. A compute makes one per job, 200,000 on a
    large cluster: as tuples they set off a young collection every 700 of them, which stops the
    UI thread too; this struct is not tracked by the cyclic collector (nothing it holds refers
    back to it)."""

    index: int
    cluster: str
    item: QueueRow | GroupRow
    now: float


#: rows no longer shown are freed in a worker above this many (fewer are freed in no time)
FREE_AFTER = 5_000


@dataclass(frozen=True, slots=True)
class QueueParams:
    #: pending jobs first (what the operator is paged for), each state by effective priority
    sort: str = "STATE"
    descending: bool = False
    #: the pods of one Job, JobSet or PyTorchJob under one line (`o`)
    grouped: bool = False


@dataclass(frozen=True, slots=True)
class QueueModel:
    rows: tuple[Row, ...]
    total: int
    params: QueueParams
    combined: bool
    #: id() of the rows shown under their owner's line
    pods: frozenset[int] = frozenset()
    #: only the first rows, shown while the rest are sorted (`PaneContext.early`)
    partial: bool = False


#: rows made between two pauses of the compute (`PaneContext.pause`)
_STEP = 16384


class QueuePane(Pane):
    view_id = "queue"
    title = "Queue"
    BINDINGS: ClassVar[list[BindingType]] = [*bindings("queue")]

    def __init__(self) -> None:
        super().__init__(id="pane-queue")
        self._params = QueueParams()
        self._total = 0
        self._shown = 0
        self._combined = False
        self._partial = False
        #: what the last model was computed from, and the model: a refresh that brings the very
        #: same snapshots (a snapshot file's does) is not computed again (worker thread)
        self._last: tuple[_Inputs, QueueModel] | None = None
        #: the model on screen (UI thread)
        self._model: QueueModel | None = None

    def compose(self) -> ComposeResult:
        yield ViewTable(CONSOLE_QUEUE, empty_text="no queued jobs", sortable=tuple(SORT_BY_COLUMN), id="queue-table")

    @property
    def table(self) -> ViewTable:
        return self.query_one("#queue-table", ViewTable)

    def params(self) -> QueueParams:
        return self._params

    def compute(self, ctx: PaneContext, params: Any) -> QueueModel:
        assert isinstance(params, QueueParams)
        inputs = _Inputs(tuple((i.index, i.snapshot) for i in ctx.items), params, ctx.filter, ctx.combined)
        last = self._last
        if last is not None and last[0].same(inputs):
            return last[1]
        primary = SortKey(SORT_BY_COLUMN.get(params.sort, "effective"), params.descending)
        # ties within the chosen column: the highest effective priority first
        keys = (primary,) if primary.name == "effective" else (primary, SortKey("effective", True))
        needle = ctx.filter.lower()
        rows: list[Row] = []
        total = 0
        pause = ctx.pause
        early = ctx.early if len(ctx.items) == 1 and not needle and not params.grouped else None
        for item in ctx.items:
            first = None
            if early is not None:
                first = partial(_first_screen, early, item.index, item.snapshot.cluster, item.snapshot.now, params)
            found = queue_rows(item.cluster, item.snapshot, QueueFilter(sort=keys), pause, first)
            total += len(found)
            if needle:
                found = [r for r in found if matches(r, needle)]
                pause()
            name, now = item.snapshot.cluster, item.snapshot.now
            for start in range(0, len(found), _STEP):
                rows.extend(map(Row, repeat(item.index), repeat(name), found[start : start + _STEP], repeat(now)))
                pause()
        if len(ctx.items) > 1:  # one order over every cluster's rows
            queue: list[QueueRow] = [r.item for r in rows]  # type: ignore[misc]  # (no groups yet)
            by_row = {id(r.item): r for r in rows}
            sort_rows(queue, keys, pause=pause)
            rows = [by_row[id(q)] for q in queue]
        pods: frozenset[int] = frozenset()
        if params.grouped:  # (after the filter and the order: a group stands where its first pod does)
            rows, pods = _grouped(rows)
        # (a tuple of untracked structs, which no collection then walks: gpuq.tui.collector)
        shown = tuple(rows)
        untrack(shown, pause)
        model = QueueModel(shown, total, params, ctx.combined, pods)
        self._last = (inputs, model)
        return model

    def show(self, model: Any) -> None:
        assert isinstance(model, QueueModel)
        self._total, self._shown, self._combined = model.total, len(model.rows), model.combined
        self._partial = model.partial
        spec = CONSOLE_QUEUE
        if not model.combined:  # the CLUSTER column only where several are shown
            from gpuq.views.columns import TableSpec

            spec = TableSpec(spec.name, spec.columns[1:], spec.header)

        offset = 0 if model.combined else 1

        pods = model.pods

        def cells(row: Row) -> Sequence[str]:
            item = row.item
            if isinstance(item, GroupRow):
                return group_cells(item, row.cluster)[offset:]
            found = queue_cells(item, row.now, row.cluster)
            if id(row) in pods:
                found = (found[0], POD_MARK + found[1], *found[2:])
            return found[offset:]

        def tones(row: Row) -> Sequence[str | None]:
            item = row.item
            return (None, *(group_tones(item) if isinstance(item, GroupRow) else queue_tones(item)))[offset:]

        previous, self._model = self._model, model
        self.table.set_data(TableData(spec, model.rows, cells, _key, tones,  # type: ignore[arg-type]
                                      sorted_by=model.params.sort, descending=model.params.descending))  # fmt: skip
        old = previous.rows if previous is not None else None
        if old is not None and old is not model.rows and previous is not self._last_model() and len(old) > FREE_AFTER:
            # Freeing 200,000 rows at once holds the interpreter ~0.1 s: once the new rows are on
            # screen, a worker frees the old a slice at a time, so keys and frames go on meanwhile.
            pause = self.app.gate.pause  # type: ignore[attr-defined]
            self.call_after_refresh(self.run_worker, partial(_free, [old], pause), thread=True, group="queue-free",
                                    exit_on_error=False, description="free the previous queue rows")  # fmt: skip

    def _last_model(self) -> QueueModel | None:
        last = self._last
        return last[1] if last is not None else None

    def selection(self) -> Selection | None:
        row = self.table.cursor_row()
        if row is None or isinstance(row.item, GroupRow):  # (an owner's line is no job to act on)
            return None
        return Selection(row.index, row.item.job.id)

    def action_toggle_group(self) -> None:
        current = self._params
        self._params = QueueParams(current.sort, current.descending, not current.grouped)
        self.app.recompute()  # type: ignore[attr-defined]

    def status(self) -> str:
        hidden = self.table.hidden
        if self._partial:
            shown = f"{self._total} jobs, the first {self._shown} shown while the rest are sorted"
        elif self._shown != self._total:
            shown = f"{self._shown} of {self._total} jobs"
        else:
            shown = f"{self._total} jobs"
        more = hidden_columns(hidden)
        return shown + more

    @on(ViewTable.SortAsked)
    def _sort(self, event: ViewTable.SortAsked) -> None:
        event.stop()
        current = self._params
        if event.column is None:
            self._params = QueueParams(current.sort, not current.descending)
        elif event.column != current.sort:
            # numbers read best largest first, names alphabetically
            self._params = QueueParams(event.column, event.column not in ("ID", "USER", "TENANT", "STATE"))
        else:
            self._params = QueueParams(current.sort, not current.descending)
        self.app.recompute()  # type: ignore[attr-defined]  # (now: a test or a key that follows sees it under way)


def _first_screen(early: Callable[[QueueModel], None], index: int, cluster: str, now: float, params: QueueParams,
                  top: list[QueueRow], total: int) -> None:  # fmt: skip
    """Hand the first rows (`queue_rows`' `first`) to the console as a provisional model."""
    early(QueueModel(tuple(Row(index, cluster, row, now) for row in top), total, params, False, partial=True))


def _key(row: Row) -> str:
    item = row.item
    return f"{row.index}/owner:{item.owner}" if isinstance(item, GroupRow) else f"{row.index}/{item.job.id}"


def _grouped(rows: list[Row]) -> tuple[list[Row], frozenset[int]]:
    """The rows with the pods of each owner (per cluster) under one line; which rows are pods."""
    pods: set[int] = set()

    def owner_of(row: Row) -> tuple[int, str] | None:
        owner = row.item.job.owner  # type: ignore[union-attr]  # (rows are all jobs before grouping)
        return None if owner is None else (row.index, owner)

    def group_of(owner: Any, members: list[Row]) -> Row:
        pods.update(id(p) for p in members)
        first = members[0]
        return Row(first.index, first.cluster, GroupRow.of(owner[1], [p.item for p in members]), first.now)  # type: ignore[misc]

    return group_items(rows, owner_of, group_of), frozenset(pods)


@dataclass(frozen=True, slots=True)
class _Inputs:
    """What a queue model is computed from: the snapshots (compared by identity), the sort, the
    filter and whether the view is combined."""

    snapshots: tuple[tuple[int, Any], ...]
    params: QueueParams
    filter: str
    combined: bool

    def same(self, other: _Inputs) -> bool:
        if (self.params, self.filter, self.combined) != (other.params, other.filter, other.combined):
            return False
        mine, theirs = self.snapshots, other.snapshots
        if len(mine) != len(theirs):
            return False
        return all(a[0] == b[0] and a[1] is b[1] for a, b in zip(mine, theirs, strict=True))


def _free(box: list[tuple[Row, ...]], pause: Callable[[], None]) -> None:
    """Drop rows nothing shows any more, a slice at a time (worker thread), stepping aside after
    a key as the compute does. (`box` holds the last reference to their tuple: taken out here, it
    goes at once, the rows a slice at a time from the list.)"""
    rows = list(box.pop())
    while rows:
        del rows[-2000:]
        pause()
