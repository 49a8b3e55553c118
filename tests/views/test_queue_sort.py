"""`sort_rows`: several keys in turn, `-key` descending, ties to the earliest submitted, classes
by rank; checked against a plain comparison sort written independently."""

from __future__ import annotations

import functools
from typing import Any

import numpy  # noqa: F401  # (the paced sort sorts with numpy once it is imported)
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuq.errors import BadInput
from gpuq.model import JobState
from gpuq.views import queue as q
from tests.factories import make_job
from tests.properties import examples

RANKS = {"urgent": 1000, "normal": 100, "low": 10}


def _row(i: int, eff: float, submit: float, gpus: int, cls: str, user: str) -> q.QueueRow:
    job = make_job(str(i), "n", user, "t", cls, 1, JobState.PENDING, submit, gpus)
    return q.QueueRow(job, None, eff, 0, 0, q.SlaStatus.NONE)


def _value(row: q.QueueRow, name: str) -> Any:
    if name == "class":
        return -RANKS.get(row.job.job_class, 0), row.job.job_class
    return {"effective": row.effective_priority, "gpus": row.job.gpus, "user": row.job.user,
            "submit": row.job.submit_time}[name]  # fmt: skip


def _reference(rows: list[q.QueueRow], keys: tuple[q.SortKey, ...], reverse: bool) -> list[str]:
    order = {id(r): n for n, r in enumerate(rows)}

    def compare(a: q.QueueRow, b: q.QueueRow) -> int:
        for name, descending in (*keys, q.SortKey("submit", False)):
            x, y = _value(a, name), _value(b, name)
            if x != y:
                smaller = -1 if x < y else 1
                return -smaller if descending != reverse else smaller
        return order[id(a)] - order[id(b)]  # stable: the snapshot's order

    return [r.job.id for r in sorted(rows, key=functools.cmp_to_key(compare))]


#: rows as (effective, submit, gpus, class, user), with many ties
_SPECS = st.lists(
    st.tuples(st.sampled_from([1.0, 5.0, 9.5]), st.sampled_from([10.0, 20.0, 30.0]), st.integers(1, 3),
              st.sampled_from(["urgent", "normal", "low", "adhoc"]), st.sampled_from(["ann", "bo"])),
    max_size=25,
)  # fmt: skip

_KEYS = st.lists(
    st.tuples(st.sampled_from(["effective", "gpus", "user", "class"]), st.booleans()), min_size=1, max_size=3,
    unique_by=lambda k: k[0],
).map(lambda ks: tuple(q.SortKey(n, d) for n, d in ks))


@settings(max_examples=examples(300), deadline=None)
@given(_SPECS, _KEYS, st.booleans())
def test_sort_matches_a_plain_comparison_sort(
    specs: list[tuple[float, float, int, str, str]], keys: tuple[q.SortKey, ...], reverse: bool
) -> None:
    built = [_row(i, *spec) for i, spec in enumerate(specs)]
    got = list(built)
    q.sort_rows(got, keys, reverse, RANKS)
    assert [r.job.id for r in got] == _reference(built, keys, reverse)


def test_default_is_effective_descending_then_earliest_submitted() -> None:
    rows = [_row(0, 5.0, 30.0, 1, "low", "a"), _row(1, 9.0, 20.0, 1, "low", "a"), _row(2, 5.0, 10.0, 1, "low", "a")]
    q.sort_rows(rows)
    assert [r.job.id for r in rows] == ["1", "2", "0"]


def test_class_sorts_by_rank_not_by_name() -> None:
    rows = [_row(i, 1.0, float(i), 1, c, "a") for i, c in enumerate(["low", "urgent", "normal"])]
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
@given(_SPECS, _KEYS, st.booleans(), st.integers(1, 6))
def test_the_paced_sort_gives_the_same_order(
    specs: list[tuple[float, float, int, str, str]], keys: tuple[q.SortKey, ...], reverse: bool, chunk: int
) -> None:
    """With a `pause` (the console's worker), the rows are sorted aside in steps (numpy's stable
    argsort, keys as timestamps or ranks): the same order as the plain comparison sort, and the
    pause is called between the steps."""
    built = [_row(i, *spec) for i, spec in enumerate(specs)]
    got = list(built)
    pauses: list[int] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(q, "SORT_CHUNK", chunk)
        patch.setattr(q, "KEY_STEP", chunk)
        q.sort_rows(got, keys, reverse, RANKS, pause=lambda: pauses.append(1))
    assert [r.job.id for r in got] == _reference(built, keys, reverse)
    assert len(pauses) >= len(keys)
    if len(built) > chunk:
        assert len(pauses) > 2 * len(keys)  # (the keys, the order and the rows each in steps)


def _state_row(i: int, eff: float, submit: float, gpus: int, state: JobState) -> q.QueueRow:
    job = make_job(str(i), "n", "u", "t", "normal", 1, state, submit, gpus)
    return q.QueueRow(job, None, eff, 0, 0, q.SlaStatus.NONE)


_NUMERIC = st.lists(
    st.tuples(st.sampled_from(["effective", "gpus", "state", "priority", "wait"]), st.booleans()), min_size=1,
    max_size=3, unique_by=lambda k: k[0],
).map(lambda ks: tuple(q.SortKey(n, d) for n, d in ks))  # fmt: skip


@settings(max_examples=examples(300), deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from([1.0, 5.0, 9.5]), st.sampled_from([10.0, 20.0, 30.0]), st.integers(1, 3),
                       st.sampled_from([JobState.PENDING, JobState.RUNNING, JobState.SUSPENDED])), max_size=30),
    _NUMERIC, st.integers(1, 8),
)  # fmt: skip
def test_the_first_rows_are_the_first_of_the_whole_sort(
    specs: list[tuple[float, float, int, JobState]], keys: tuple[q.SortKey, ...], count: int
) -> None:
    """`first_rows` (the console's first screen, ahead of the sort) gives exactly what the full
    sort puts first, ties included (submit time, then the rows' order)."""
    built = [_state_row(i, *spec) for i, spec in enumerate(specs)]
    whole = list(built)
    q.sort_rows(whole, keys)
    first = q.first_rows(built, keys, count)
    assert first is not None
    assert [r.job.id for r in first] == [r.job.id for r in whole[:count]]


@pytest.mark.parametrize("name", ["id", "user", "tenant", "class", "submit", "preemptions"])
def test_the_first_rows_are_left_to_the_sort_where_a_key_is_no_number(name: str) -> None:
    rows = [_row(i, 1.0, float(i), 1, "low", "a") for i in range(3)]
    assert q.first_rows(rows, (q.SortKey(name, False),), 2) is None
    assert q.first_rows(rows, (q.SortKey("effective", True),), 2, reverse=True) is None


def test_the_first_rows_are_left_to_the_sort_where_a_value_is_nan() -> None:
    """The sorts' order among NaNs is their own: `first_rows` does not guess it."""
    rows = [_state_row(i, eff, float(i), 1, JobState.PENDING) for i, eff in enumerate([1.0, float("nan"), 3.0])]
    assert q.first_rows(rows, (q.SortKey("effective", True),), 1) is None
    assert q.first_rows(rows, (q.SortKey("gpus", True), q.SortKey("effective", True)), 1) is None
    assert [r.job.id for r in q.first_rows(rows[::2], (q.SortKey("effective", True),), 1) or []] == ["2"]
