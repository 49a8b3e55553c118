"""`sort_rows`: several keys in turn, `-key` descending, ties to the earlier tie time then the
job id (never the rows' order), classes by rank; checked against a plain comparison sort written
independently, under both tie times (Slurm's submit time, gpuq's queued-since time)."""

from __future__ import annotations

import functools
from typing import Any

import numpy  # noqa: F401  # (the paced sort sorts with numpy once it is imported)
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuq.errors import BadInput
from gpuq.model import JobState, job_id_key
from gpuq.policy.order import TieField
from gpuq.views import queue as q
from tests.factories import make_job
from tests.properties import examples

RANKS = {"urgent": 1000, "normal": 100, "low": 10}


#: ids of every shape: plain numbers (sorted as numbers), array tasks, leading zeros, text, and
#: numbers too long for a float
_IDS = st.one_of(
    st.integers(1, 40).map(str),
    st.sampled_from(["7", "007", "12_1", "12_2", "12_10", "a1", "job-3", "999999999999999", "1234567890123456"]),
)
TIES: list[TieField] = ["submit_time", "queued_since"]


def _row(job_id: str, eff: float, submit: float, gpus: int, cls: str, user: str,
         eligible: float | None = None, tie: TieField = "queued_since") -> q.QueueRow:  # fmt: skip
    """A pending row whose tie time is `tie` of its job (as `queue_rows` gives it)."""
    job = make_job(job_id, "n", user, "t", cls, 1, JobState.PENDING, submit, gpus, eligible_time=eligible)
    return q.QueueRow(job, None, eff, 0, 0, q.SlaStatus.NONE, getattr(job, tie))


def _value(row: q.QueueRow, name: str) -> Any:
    if name == "class":
        return -RANKS.get(row.job.job_class, 0), row.job.job_class
    return {"effective": row.effective_priority, "gpus": row.job.gpus, "user": row.job.user,
            "submit": row.job.submit_time}[name]  # fmt: skip


def _reference(rows: list[q.QueueRow], keys: tuple[q.SortKey, ...], reverse: bool, tie: TieField) -> list[str]:
    def compare(a: q.QueueRow, b: q.QueueRow) -> int:
        pairs = [(_value(a, name), _value(b, name), descending) for name, descending in keys]
        pairs.append((getattr(a.job, tie), getattr(b.job, tie), False))
        pairs.append((job_id_key(a.job.id), job_id_key(b.job.id), False))
        for x, y, descending in pairs:
            if x != y:
                smaller = -1 if x < y else 1
                return -smaller if descending != reverse else smaller
        return 0

    return [r.job.id for r in sorted(rows, key=functools.cmp_to_key(compare))]


#: rows as (id, effective, submit, gpus, class, user, eligible), with many ties
_SPECS = st.lists(
    st.tuples(_IDS, st.sampled_from([1.0, 5.0, 9.5]), st.sampled_from([10.0, 20.0, 30.0]), st.integers(1, 3),
              st.sampled_from(["urgent", "normal", "low", "adhoc"]), st.sampled_from(["ann", "bo"]),
              st.sampled_from([None, 5.0, 25.0])),
    max_size=25, unique_by=lambda spec: spec[0],
)  # fmt: skip
Spec = tuple[str, float, float, int, str, str, float | None]

_KEYS = st.lists(
    st.tuples(st.sampled_from(["effective", "gpus", "user", "class"]), st.booleans()),
    min_size=1,
    max_size=3,
    unique_by=lambda k: k[0],
).map(lambda ks: tuple(q.SortKey(n, d) for n, d in ks))


@settings(max_examples=examples(300), deadline=None)
@given(_SPECS, _KEYS, st.booleans(), st.sampled_from(TIES), st.sampled_from(["as drawn", "up", "down"]))
def test_sort_matches_a_plain_comparison_sort(
    specs: list[Spec], keys: tuple[q.SortKey, ...], reverse: bool, tie: TieField, listed: str
) -> None:
    """Rows listed as drawn, or by id up or down (as snapshots list them: the id pass's quick
    paths), sort as the comparison sort does."""
    built = [_row(*spec, tie=tie) for spec in specs]
    if listed != "as drawn":
        built.sort(key=lambda r: job_id_key(r.job.id), reverse=listed == "down")
    got = list(built)
    q.sort_rows(got, keys, reverse, RANKS)
    assert [r.job.id for r in got] == _reference(built, keys, reverse, tie)


def test_default_is_effective_descending_then_the_tie_time_then_the_id() -> None:
    def rows(tie: TieField) -> list[q.QueueRow]:
        specs = [("5", 5.0, 30.0, None), ("4", 9.0, 20.0, None), ("3", 5.0, 10.0, 40.0), ("12", 5.0, 30.0, None),
                 ("2", 5.0, 30.0, None)]  # fmt: skip
        return [_row(i, eff, submit, 1, "low", "a", eligible, tie=tie) for i, eff, submit, eligible in specs]

    queued = rows("queued_since")
    q.sort_rows(queued)
    assert [r.job.id for r in queued] == ["4", "2", "5", "12", "3"]
    submitted = rows("submit_time")
    q.sort_rows(submitted)  # (3 was submitted first: Slurm's tie-break)
    assert [r.job.id for r in submitted] == ["4", "3", "2", "5", "12"]
    q.sort_rows(submitted, reverse=True)
    assert [r.job.id for r in submitted] == ["12", "5", "2", "3", "4"]


def test_class_sorts_by_rank_not_by_name() -> None:
    rows = [_row(str(i), 1.0, float(i), 1, c, "a") for i, c in enumerate(["low", "urgent", "normal"])]
    q.sort_rows(rows, (q.SortKey("class", False),), class_ranks=RANKS)
    assert [r.job.job_class for r in rows] == ["urgent", "normal", "low"]
    q.sort_rows(rows, (q.SortKey("class", True),), class_ranks=RANKS)
    assert [r.job.job_class for r in rows] == ["low", "normal", "urgent"]


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ((), q.DEFAULT_SORT),
        (("wait",), (q.SortKey("wait", False),)),
        (("+wait",), (q.SortKey("wait", False),)),
        (("-wait",), (q.SortKey("wait", True),)),
        (("class,-wait", "id"), (q.SortKey("class", False), q.SortKey("wait", True), q.SortKey("id", False))),
        ((" user , -gpus ",), (q.SortKey("user", False), q.SortKey("gpus", True))),
    ],
)
def test_parse_sort(given: tuple[str, ...], expected: tuple[q.SortKey, ...]) -> None:
    assert q.parse_sort(given) == expected


@pytest.mark.parametrize("bad", ["nosuch", "-", "--wait", "wait,,nosuch", "Wait"])
def test_parse_sort_refuses_unknown_keys(bad: str) -> None:
    with pytest.raises(BadInput, match="--sort: unknown key"):
        q.parse_sort([bad])


@settings(max_examples=examples(300), deadline=None)
@given(_SPECS, _KEYS, st.booleans(), st.sampled_from(TIES), st.integers(1, 6))
def test_the_paced_sort_gives_the_same_order(
    specs: list[Spec], keys: tuple[q.SortKey, ...], reverse: bool, tie: TieField, chunk: int
) -> None:
    """With a `pause` (the console's worker), the rows are sorted aside in steps (numpy's stable
    argsort, keys as timestamps or ranks): the same order as the plain comparison sort, and the
    pause is called between the steps."""
    built = [_row(*spec, tie=tie) for spec in specs]
    got = list(built)
    pauses: list[int] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(q, "SORT_CHUNK", chunk)
        patch.setattr(q, "KEY_STEP", chunk)
        q.sort_rows(got, keys, reverse, RANKS, pause=lambda: pauses.append(1))
    assert [r.job.id for r in got] == _reference(built, keys, reverse, tie)
    assert len(pauses) >= len(keys)
    if len(built) > chunk:
        assert len(pauses) > 2 * len(keys)  # (the keys, the order and the rows each in steps)


def _state_row(job_id: str, eff: float, submit: float, gpus: int, state: JobState,
               eligible: float | None = None, tie: TieField = "queued_since") -> q.QueueRow:  # fmt: skip
    job = make_job(job_id, "n", "u", "t", "normal", 1, state, submit, gpus, eligible_time=eligible)
    return q.QueueRow(job, None, eff, 0, 0, q.SlaStatus.NONE, getattr(job, tie))


_NUMERIC = st.lists(
    st.tuples(st.sampled_from(["effective", "gpus", "state", "priority", "wait"]), st.booleans()), min_size=1,
    max_size=3, unique_by=lambda k: k[0],
).map(lambda ks: tuple(q.SortKey(n, d) for n, d in ks))  # fmt: skip


@settings(max_examples=examples(300), deadline=None)
@given(
    st.lists(st.tuples(_IDS, st.sampled_from([1.0, 5.0, 9.5]), st.sampled_from([10.0, 20.0, 30.0]),
                       st.integers(1, 3), st.sampled_from([JobState.PENDING, JobState.RUNNING, JobState.SUSPENDED]),
                       st.sampled_from([None, 5.0, 25.0])),
             max_size=30, unique_by=lambda spec: spec[0]),
    _NUMERIC, st.integers(1, 8), st.sampled_from(TIES),
)  # fmt: skip
def test_the_first_rows_are_the_first_of_the_whole_sort(
    specs: list[tuple[str, float, float, int, JobState, float | None]], keys: tuple[q.SortKey, ...], count: int,
    tie: TieField,
) -> None:  # fmt: skip
    """`first_rows` (the console's first screen, ahead of the sort) gives exactly what the full
    sort puts first, ties included (the tie time, then the id)."""
    built = [_state_row(*spec, tie=tie) for spec in specs]
    whole = list(built)
    q.sort_rows(whole, keys)
    first = q.first_rows(built, keys, count)
    assert first is not None
    assert [r.job.id for r in first] == [r.job.id for r in whole[:count]]


@pytest.mark.parametrize("name", ["id", "user", "tenant", "class", "submit", "preemptions"])
def test_the_first_rows_are_left_to_the_sort_where_a_key_is_no_number(name: str) -> None:
    rows = [_row(str(i), 1.0, float(i), 1, "low", "a") for i in range(3)]
    assert q.first_rows(rows, (q.SortKey(name, False),), 2) is None
    assert q.first_rows(rows, (q.SortKey("effective", True),), 2, reverse=True) is None


def test_the_first_rows_are_left_to_the_sort_where_a_value_is_nan() -> None:
    """The sorts' order among NaNs is their own: `first_rows` does not guess it."""
    rows = [_state_row(str(i), eff, float(i), 1, JobState.PENDING) for i, eff in enumerate([1.0, float("nan"), 3.0])]
    assert q.first_rows(rows, (q.SortKey("effective", True),), 1) is None
    assert q.first_rows(rows, (q.SortKey("gpus", True), q.SortKey("effective", True)), 1) is None
    assert [r.job.id for r in q.first_rows(rows[::2], (q.SortKey("effective", True),), 1) or []] == ["2"]


_ID_TEXTS = st.one_of(
    st.text(st.sampled_from("0123456789_.-/ab\x00\x01\x02٣"), max_size=8),
    st.text(max_size=6),
    st.integers(0, 10**320).map(str),
    st.sampled_from(["0", "00", "007", "7", "1" + "0" * 299, "0" + "1" * 300, "a" + "9" * 300]),
)


@settings(max_examples=examples(1000), deadline=None)
@given(_ID_TEXTS, _ID_TEXTS)
def test_the_id_text_orders_as_the_job_id_key(a: str, b: str) -> None:
    """`_id_text` (the sort's key for ids that are no plain numbers) is `job_id_key`'s order."""
    ka, kb = job_id_key(a), job_id_key(b)
    ta, tb = q._id_text(_row(a, 1.0, 0.0, 1, "low", "u")), q._id_text(_row(b, 1.0, 0.0, 1, "low", "u"))
    assert (ka < kb, ka == kb) == (ta < tb, ta == tb)


def test_an_id_with_a_line_break_is_no_plain_number() -> None:
    """Ids are outside text: one holding a line break among plain numbers must neither pass for
    numbers (int() would fail on it) nor end the sort."""
    rows = [_row(i, 1.0, 10.0, 1, "low", "a") for i in ("10", "1\n2", "3")]
    q.sort_rows(rows)
    assert [r.job.id for r in rows] == sorted(["10", "1\n2", "3"], key=job_id_key)
