"""The thrash guard (`gpuq.policy.thrash`) on hand-made preemption lists: each sign alone, the
limits it judges against, and its round trip through a result document."""

from __future__ import annotations

from dataclasses import replace

from gpuq.policy.config import DEFAULT_POLICY, UNGUARDED_POLICY
from gpuq.policy.thrash import Thrash, ThrashLimits, detect, limits_for

H = 3600.0
LIMITS = ThrashLimits(per_day=3, min_runtime_s=1800.0)


def test_calm_preemptions_show_no_sign() -> None:
    # three jobs preempted a few times each, hours apart, by different jobs, little lost
    events = [(0.0, "a", "x", 10.0), (5 * H, "a", "y", 10.0), (2 * H, "b", "x", 5.0), (30 * H, "b", "z", 5.0)]
    thrash = detect(events, LIMITS, work_gpu_s=1000.0)
    assert not thrash.flagged and thrash.summary() == ""
    assert (thrash.over_cap, thrash.too_soon, thrash.pairs_taking_turns, thrash.jobs) == (0, 0, 0, ())
    assert thrash.lost_share == 30.0 / 1000.0


def test_a_job_over_the_daily_cap_is_named_worst_first() -> None:
    events = [(i * H, "busy", None, 0.0) for i in range(5)]  # 5 in 5 hours
    events += [(i * 9 * H, "slow", None, 0.0) for i in range(5)]  # 5, but never 4 in a day
    events += [(i * H, "four", None, 0.0) for i in range(4)]
    thrash = detect(events, LIMITS)
    assert thrash.over_cap == 2 and thrash.flagged
    assert [(j.job, j.most_in_a_day, j.preemptions) for j in thrash.jobs] == [("busy", 5, 5), ("four", 4, 4)]
    assert "2 job(s) preempted more than 3× in 24 h (busy 5×, four 4×)" in thrash.summary()


def test_a_job_preempted_again_within_the_minimum_runtime() -> None:
    thrash = detect([(0.0, "a", None, 0.0), (600.0, "a", None, 0.0), (10 * H, "b", None, 0.0),
                     (11 * H, "b", None, 0.0)], LIMITS)  # fmt: skip
    assert thrash.too_soon == 1 and thrash.over_cap == 0
    assert [(j.job, j.too_soon) for j in thrash.jobs] == [("a", 1)]
    assert "1 job(s) preempted again within 30m (a 1×)" in thrash.summary()


def test_pairs_taking_turns_within_a_day() -> None:
    turns = [(0.0, "a", "b", 0.0), (H, "b", "a", 0.0), (2 * H, "a", "b", 0.0), (3 * H, "b", "a", 0.0)]
    # the same four turns spread over four days: a slow rotation, not thrash
    slow = [(0.0, "c", "d", 0.0), (30 * H, "d", "c", 0.0), (60 * H, "c", "d", 0.0), (90 * H, "d", "c", 0.0)]
    # one way only, however often: not turns
    one_way = [(i * H, "e", "f", 0.0) for i in range(2)]
    thrash = detect(turns + slow + one_way, replace(LIMITS, per_day=10))
    assert thrash.pairs_taking_turns == 1
    (pair,) = thrash.pairs
    assert (pair.first, pair.second, pair.first_over_second, pair.second_over_first, pair.turns) == ("a", "b", 2, 2, 4)
    assert "1 pair(s) taking turns (a/b 4×)" in thrash.summary()


def test_work_lost_above_its_share() -> None:
    events = [(0.0, "a", None, 50 * H), (10 * H, "b", None, 60 * H)]
    lossy = detect(events, LIMITS, work_gpu_s=1000 * H)
    assert lossy.too_much_lost and lossy.flagged  # 11% > 10%
    assert [j.job for j in lossy.losers] == ["b", "a"]
    assert "11% of the work lost (over 10%), most by b 60.0 GPU-h, a 50.0 GPU-h" in lossy.summary()
    assert not detect(events, LIMITS, work_gpu_s=1200 * H).flagged  # 9%
    # the run's own total wins over the preemptions' sum (graceful drains lose work too)
    assert detect(events, LIMITS, work_gpu_s=1000 * H, lost_gpu_s=20 * H).lost_share == 0.02
    unknown = detect(events, LIMITS)  # a cluster's ledger: no work figure, no judgement on it
    assert unknown.lost_share is None and not unknown.flagged


def test_limits_are_the_policy_s_protections_else_the_defaults() -> None:
    assert limits_for(replace(UNGUARDED_POLICY, max_preemptions_per_day=5, min_runtime_s=60.0)) == ThrashLimits(5, 60.0)
    unguarded = limits_for(UNGUARDED_POLICY)
    assert unguarded.per_day == DEFAULT_POLICY.max_preemptions_per_day > 0
    assert unguarded.min_runtime_s == DEFAULT_POLICY.min_runtime_s > 0


def test_a_verdict_survives_its_document() -> None:
    events = [(i * 60.0, "a", "b" if i % 2 else None, 7.0) for i in range(6)] + [(30.0, "b", "a", 1.0)]
    thrash = detect(events, LIMITS, work_gpu_s=10.0, partial=True)
    assert thrash.flagged and thrash.partial
    assert Thrash.from_dict(thrash.to_dict()) == thrash
    assert thrash.summary().endswith("(judged on the latest 7 preemptions)")
