"""Label selectors matched against an object's labels, in the apiserver's grammar."""

from __future__ import annotations

import pytest

from gpuq.backends.kubernetes.selector import parse_selector
from gpuq.errors import BadInput

LABELS = {"team": "a", "kueue.x-k8s.io/queue-name": "team-b-queue", "tier": "gpu"}


@pytest.mark.parametrize(("selector", "matches"), [
    ("", True),
    ("team=a", True),
    ("team==a", True),
    ("team!=a", False),
    ("team=b", False),
    ("team", True),
    ("!team", False),
    ("!absent", True),
    ("absent!=x", True),
    ("team=a,tier=gpu", True),
    ("team=a,tier=cpu", False),
    ("kueue.x-k8s.io/queue-name in (team-b-queue,team-b-batch)", True),
    ("kueue.x-k8s.io/queue-name notin (team-b-queue, team-b-batch),team=a", False),
    ("tier in (cpu),team=a", False),
    ("absent notin (x)", True),
])  # fmt: skip
def test_selectors_match_as_the_apiserver_does(selector: str, matches: bool) -> None:
    assert parse_selector(selector)(LABELS) is matches


def test_an_unreadable_selector_is_bad_input() -> None:
    with pytest.raises(BadInput, match="label selector"):
        parse_selector("team in a,b)")
