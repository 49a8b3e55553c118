"""The fast two-pass "effective" sort gives exactly the documented key order."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gpuq.model import JobState
from gpuq.views import queue as q
from tests.factories import make_job


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from([1.0, 5.0, 9.5]), st.sampled_from([10.0, 20.0, 30.0])), max_size=30),
    st.booleans(),
)
def test_two_pass_sort_matches_key_order(rows: list[tuple[float, float]], reverse: bool) -> None:
    built = [
        q.QueueRow(make_job(str(i), "n", "u", "t", "c", 1, JobState.PENDING, submit, 1), None, eff, 0, 0,
                   q.SlaStatus.NONE)
        for i, (eff, submit) in enumerate(rows)
    ]
    key, descending = q.SORT_KEYS["effective"]
    expected = sorted(built, key=key, reverse=descending != reverse)
    got = list(built)
    q.sort_rows(got, "effective", reverse)
    assert [r.job.id for r in got] == [r.job.id for r in expected]
