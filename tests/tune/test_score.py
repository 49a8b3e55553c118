"""The weighted score and its normalisations (hand-computed), the ranking's order and ties, the
Pareto front (against a brute-force check), and `--weights`."""

from __future__ import annotations

import dataclasses
import random

import pytest

from gpuq.errors import BadInput
from gpuq.tune.grid import parse_grid
from gpuq.tune.score import DEFAULT_WEIGHTS, Weights, pareto_front, parse_weights, rank, served_utilisation
from tests.tune.helpers import result


def _points(n: int):  # noqa: ANN202 - test helper
    return parse_grid(["delta=" + ",".join(str(i) for i in range(n))]).points()


def test_score_by_hand() -> None:
    a = result(0.8, 100.0, 0.5)
    b = result(0.6, 50.0, 0.0)
    c = result(0.5, 200.0, 1.0)
    ranking = rank(_points(3), [a, b, c], Weights(1.0, 0.5, 0.2))
    assert (ranking.norms.wait_s, ranking.norms.preemptions_per_job) == (200.0, 1.0)
    by_id = {r.point.id: r for r in ranking.rows}
    # A: 0.8 − 0.5·(100/200) − 0.2·(0.5/1) = 0.45; B: 0.6 − 0.5·0.25 − 0 = 0.475; C: 0.5 − 0.5 − 0.2 = −0.2
    assert by_id["p01"].score == pytest.approx(0.45)
    assert by_id["p02"].score == pytest.approx(0.475)
    assert by_id["p03"].score == pytest.approx(-0.2)
    assert (by_id["p01"].u, by_id["p01"].t_wait, by_id["p01"].f_preempt) == (0.8, 0.5, 0.5)
    assert [r.point.id for r in ranking.rows] == ["p02", "p01", "p03"]
    assert [r.rank for r in ranking.rows] == [1, 2, 3]
    assert ranking.best.point.id == "p02"
    # C is worse than A on all three objectives; A and B each win one
    assert {r.point.id for r in ranking.rows if r.pareto} == {"p01", "p02"}
    assert [r.point.id for r in ranking.by_index()] == ["p01", "p02", "p03"]


def test_weights_change_the_winner() -> None:
    a, b = result(0.8, 100.0, 0.5), result(0.6, 50.0, 0.0)
    assert rank(_points(2), [a, b], Weights(1, 0, 0)).best.point.id == "p01"
    assert rank(_points(2), [a, b], Weights(0, 1, 0)).best.point.id == "p02"
    assert rank(_points(2), [a, b], Weights(1, 0.5, 0.2)).best.point.id == "p02"


def test_uses_useful_utilisation_not_the_raw_one() -> None:
    wasteful = result(0.5, 10.0, 0.0, utilisation=0.99)  # busy re-running lost work
    honest = result(0.6, 10.0, 0.0, utilisation=0.6)
    assert rank(_points(2), [wasteful, honest], Weights(1, 0, 0)).best.point.id == "p02"


def test_jobs_thrown_away_count_against_utilisation() -> None:
    # cancelling victims: 3 of 10 jobs never finish, so the rest wait less; U is scaled by 7/10
    cancelling = dataclasses.replace(result(0.8, 20.0, 0.3), cancelled=3)
    requeueing = result(0.7, 40.0, 0.3)
    ranking = rank(_points(2), [cancelling, requeueing], Weights(1, 0.1, 0))
    assert served_utilisation(cancelling) == pytest.approx(0.56)
    assert {r.point.id: round(r.u, 6) for r in ranking.rows} == {"p01": 0.56, "p02": 0.7}
    assert ranking.best.point.id == "p02"  # without the share p01 would win: 0.8 - 0.05 > 0.7 - 0.1
    assert served_utilisation(dataclasses.replace(requeueing, unfinished=5)) == pytest.approx(0.35)


def test_nothing_waited_nothing_preempted() -> None:
    ranking = rank(_points(2), [result(0.3), result(0.7)], DEFAULT_WEIGHTS)
    assert (ranking.norms.wait_s, ranking.norms.preemptions_per_job) == (0.0, 0.0)
    assert [(r.t_wait, r.f_preempt) for r in ranking.rows] == [(0.0, 0.0), (0.0, 0.0)]
    assert [r.score for r in ranking.rows] == [0.7, 0.3]


def test_equal_scores_keep_the_grid_order_and_identical_points_share_the_front() -> None:
    same = [result(0.5, 10.0, 0.1) for _ in range(3)]
    ranking = rank(_points(3), same, DEFAULT_WEIGHTS)
    assert [r.point.id for r in ranking.rows] == ["p01", "p02", "p03"]
    assert all(r.pareto for r in ranking.rows)
    # and the same input always ranks the same
    assert rank(_points(3), same, DEFAULT_WEIGHTS) == ranking


def test_pareto_edges() -> None:
    results = [
        result(0.5, 10.0, 0.1),  # 0: front
        result(0.5, 10.0, 0.2),  # 1: equal on two, worse on one: dominated by 0
        result(0.4, 5.0, 0.1),   # 2: worse U, better wait: front
        result(0.5, 10.0, 0.1),  # 3: a tie with 0: front
        result(0.4, 5.0, 0.3),   # 4: dominated by 2
        result(0.9, 99.0, 9.0),  # 5: best U alone: front
    ]  # fmt: skip
    assert pareto_front(results) == frozenset({0, 2, 3, 5})


def _brute_front(objectives: list[tuple[float, float, float]]) -> set[int]:
    def dominates(q: tuple[float, float, float], p: tuple[float, float, float]) -> bool:
        return q[0] >= p[0] and q[1] <= p[1] and q[2] <= p[2] and q != p

    return {i for i, p in enumerate(objectives) if not any(dominates(q, p) for q in objectives)}


def test_pareto_front_equals_the_brute_force_definition() -> None:
    rng = random.Random(12)
    for _ in range(200):
        n = rng.randint(1, 25)
        # few distinct values, so ties and equal coordinates are common
        objectives = [(rng.randint(0, 4) / 4, float(rng.randint(0, 4)), rng.randint(0, 3) / 3) for _ in range(n)]
        results = [result(u, w, f) for u, w, f in objectives]
        assert pareto_front(results) == _brute_front(objectives), objectives


def test_parse_weights() -> None:
    assert parse_weights(None) == DEFAULT_WEIGHTS == Weights(1.0, 0.5, 0.2)
    assert parse_weights("alpha=2,beta=0.25,gamma=0") == Weights(2.0, 0.25, 0.0)
    assert parse_weights("gamma=1") == Weights(1.0, 0.5, 1.0)
    assert parse_weights(" beta = 1e-1 ") == Weights(1.0, 0.1, 0.2)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("delta=1", "expected alpha=A,beta=B,gamma=C (keys: alpha, beta, gamma), got 'delta=1'"),
        ("alpha", "got 'alpha'"),
        ("alpha=1,alpha=2", "alpha given twice"),
        ("beta=-1", "beta must be a number from 0 to 1e+06, got '-1'"),
        ("beta=nan", "got 'nan'"),
        ("beta=inf", "got 'inf'"),
        ("gamma=1e9", "got '1e9'"),
        ("alpha=0,beta=0,gamma=0", "every weight is 0"),
    ],
)
def test_bad_weights(text: str, message: str) -> None:
    with pytest.raises(BadInput) as caught:
        parse_weights(text)
    assert message in str(caught.value) and str(caught.value).startswith("--weights ")


def test_rank_refuses_mismatched_input() -> None:
    with pytest.raises(ValueError, match="2 points, 1 results"):
        rank(_points(2), [result()], DEFAULT_WEIGHTS)
