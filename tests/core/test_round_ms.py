"""`round_ms`: the very float `round(x, 3)` gives (queue -o json and CSV write waits with it)."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from gpuq.timefmt import round_ms
from tests.properties import examples

#: waits as the views make them: any non-negative float, and some of every other kind
_ANY = st.floats(min_value=0.0, max_value=1e9, allow_nan=False) | st.floats(allow_nan=False)


@settings(max_examples=examples(2000), deadline=None)
@given(_ANY)
def test_round_ms_is_round_to_three_places(x: float) -> None:
    assert math.copysign(1.0, round_ms(x)) == math.copysign(1.0, round(x, 3))
    assert round_ms(x) == round(x, 3)


@settings(max_examples=examples(2000), deadline=None)
@given(st.integers(0, 10**10), st.sampled_from([0.0, 0.5, 0.4999, 0.5001, 0.49999999, 0.50000001, 1e-9]),
       st.sampled_from([-1, 0, 1]))  # fmt: skip
def test_round_ms_near_ties_and_boundaries(millis: int, part: float, nudge: int) -> None:
    """Values at, beside and a float's width from the half-millisecond ties, up to ~115 days and
    beyond (where `round` itself answers)."""
    x = (millis + part) / 1000.0
    x = math.nextafter(x, math.inf) if nudge > 0 else math.nextafter(x, 0.0) if nudge < 0 else x
    assert round_ms(x) == round(x, 3)
