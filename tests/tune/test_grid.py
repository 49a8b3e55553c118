"""`--grid` parsing, the points' order and ids, and each key landing on its policy or replay field."""

from __future__ import annotations

from types import MappingProxyType

import pytest

from gpuq.errors import BadInput
from gpuq.policy.config import ClassPolicy, Mode, Policy
from gpuq.replay.model import CheckpointModel, ReplayConfig
from gpuq.tune.grid import KEYS, MAX_POINTS, apply_point, parse_axis, parse_grid

ISSUE_GRID = ("delta=0,50,100", "checkpoint_interval=10m,30m", "min_runtime=0,10m")


def test_the_issues_grid_has_twelve_points_in_a_stable_order() -> None:
    grid = parse_grid(ISSUE_GRID)
    assert grid.keys == ("delta", "checkpoint_interval", "min_runtime")
    assert grid.axes[1].values == (600.0, 1800.0)
    points = grid.points()
    assert len(points) == grid.size == 12
    assert [p.id for p in points] == [f"p{i:02d}" for i in range(1, 13)]
    assert [p.index for p in points] == list(range(12))
    # the last axis varies fastest
    assert points[0].values == (("delta", 0.0), ("checkpoint_interval", 600.0), ("min_runtime", 0.0))
    assert points[1].values == (("delta", 0.0), ("checkpoint_interval", 600.0), ("min_runtime", 600.0))
    assert points[2].values == (("delta", 0.0), ("checkpoint_interval", 1800.0), ("min_runtime", 0.0))
    assert points[11].values == (("delta", 100.0), ("checkpoint_interval", 1800.0), ("min_runtime", 600.0))
    assert points[5].label == "delta=50 checkpoint_interval=10m min_runtime=10m"
    assert parse_grid(ISSUE_GRID).points() == points  # the same grid, the same points


def test_ids_widen_with_the_grid() -> None:
    points = parse_grid(["delta=" + ",".join(str(i) for i in range(120))]).points()
    assert points[0].id == "p001" and points[-1].id == "p120"


def test_values_of_every_kind() -> None:
    grid = parse_grid(["strategy=cancel,graceful", "max_preemptions_per_day=0,3", "grace_period=90s,1h30m",
                       "checkpoint_cost=30,1m", "max_wait.batch=2h", "aging_rate=0.5", "delta=1e2"])  # fmt: skip
    values = {a.key: a.values for a in grid.axes}
    assert values["strategy"] == (Mode.CANCEL, Mode.GRACEFUL)
    assert values["max_preemptions_per_day"] == (0, 3) and all(
        type(v) is int for v in values["max_preemptions_per_day"]
    )
    assert values["grace_period"] == (90.0, 5400.0)
    assert values["checkpoint_cost"] == (30.0, 60.0)
    assert values["max_wait.batch"] == (7200.0,)
    assert values["delta"] == (100.0,)
    shown = {a.key: [a.shown(v) for v in a.values] for a in grid.axes}
    assert shown["grace_period"] == ["90s", "1h30m"]
    assert shown["strategy"] == ["cancel", "graceful"]
    assert shown["max_preemptions_per_day"] == ["0", "3"]


def test_every_key_lands_on_its_field() -> None:
    base = ReplayConfig(
        policy=Policy(delta=5, classes=MappingProxyType({"urgent": ClassPolicy(target_p95_s=60.0)})),
        checkpoint=CheckpointModel(save_cost_s=1.0, restore_cost_s=2.0, interval_s=None), nodes=4, gpus_per_node=2,
    )  # fmt: skip
    grid = parse_grid(["delta=50", "min_runtime=10m", "grace_period=2m", "max_preemptions_per_day=4",
                       "checkpoint_interval=20m", "checkpoint_cost=45s", "restore_cost=3m", "strategy=cancel",
                       "aging_rate=2", "lost_work_weight=3", "priority_weight=0.25", "max_wait.batch=1h",
                       "max_wait.urgent=5m"])  # fmt: skip
    config = apply_point(base, grid.points()[0])
    p = config.policy
    assert (p.delta, p.min_runtime_s, p.grace_period_s, p.max_preemptions_per_day) == (50.0, 600.0, 120.0, 4)
    assert p.default_checkpoint_interval_s == 1200.0 and config.checkpoint.interval_s == 1200.0
    assert (config.checkpoint.save_cost_s, config.checkpoint.restore_cost_s) == (45.0, 180.0)
    assert (p.checkpoint_cost_s, p.restore_cost_s) == (45.0, 180.0)  # (a policy file written from it keeps them)
    assert p.mode is Mode.CANCEL and config.strategy is Mode.CANCEL
    assert (p.default_aging_rate, p.lost_work_weight, p.priority_weight) == (2.0, 3.0, 0.25)
    assert p.classes["batch"] == ClassPolicy(max_wait_s=3600.0)
    assert p.classes["urgent"] == ClassPolicy(target_p95_s=60.0, max_wait_s=300.0)  # its target kept
    assert (config.nodes, config.gpus_per_node) == (4, 2)
    # nothing else moved, and the base is untouched
    assert p.urgent_priority == base.policy.urgent_priority
    assert base.policy.delta == 5 and base.checkpoint.interval_s is None and "batch" not in base.policy.classes


def test_a_point_leaves_unnamed_knobs_as_the_base_has_them() -> None:
    base = ReplayConfig(policy=Policy(delta=7, mode=Mode.GRACEFUL), strategy=Mode.GRACEFUL)
    config = apply_point(base, parse_grid(["min_runtime=0,1m"]).points()[1])
    assert config.policy.delta == 7 and config.strategy is Mode.GRACEFUL and config.policy.min_runtime_s == 60.0


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("foo=1", "unknown key 'foo' (valid: delta, min_runtime"),
        ("delta", "expected KEY=V1,V2,…"),
        ("=1,2", "expected KEY=V1,V2,…"),
        ("delta=", "an empty value"),
        ("delta=0,,50", "an empty value"),
        ("delta=abc", "'abc' is not a number"),
        ("delta=nan", "'nan' is not a number"),
        ("delta=-1", "must be a number from 0"),
        ("max_preemptions_per_day=1.5", "'1.5' is not a whole number"),
        ("min_runtime=10x", "not a duration"),
        ("min_runtime=-5", "not a duration"),
        ("checkpoint_cost=soon", "not a duration"),
        ("strategy=kill", "'kill' is not one of cancel, requeue, suspend, graceful"),
        ("checkpoint_interval=10m,600", "'600' is the same value as one given before it"),
        ("max_wait.=1h", "give the class after the dot"),
        ("delta=1\x1b[2J", "'1\\x1b[2J' is not a number"),
    ],
)
def test_bad_axes_are_refused_clearly(spec: str, message: str) -> None:
    with pytest.raises(BadInput) as caught:
        parse_axis(spec)
    assert message in str(caught.value)
    assert str(caught.value).startswith("--grid ")
    assert "\x1b" not in str(caught.value)


def test_an_unknown_key_lists_every_valid_one() -> None:
    with pytest.raises(BadInput) as caught:
        parse_grid(["checkpoint=10m"])
    for key in KEYS:
        assert key in str(caught.value)


def test_grid_level_errors() -> None:
    with pytest.raises(BadInput, match="give at least one --grid"):
        parse_grid([])
    with pytest.raises(BadInput, match="--grid delta given twice"):
        parse_grid(["delta=0", "min_runtime=0", "delta=50"])
    too_many = ",".join(str(i) for i in range(101))
    with pytest.raises(BadInput, match=f"at most {MAX_POINTS:,}"):
        parse_grid([f"delta={too_many}", f"aging_rate={too_many}"])
