"""The parameter grid of a tuning run: `--grid KEY=V1,V2,…` parsed, its points, and each point
applied to a replay's configuration.

Every key names one knob of the policy (`gpuq.policy.config.Policy`) or of the replay
(`gpuq.replay.model.ReplayConfig`, its `CheckpointModel`); `KEYS` lists them. Values are checked
as a policy file's are (the same ranges, the same duration forms: ``90s``, ``10m``, ``2h``), so a
grid never holds a point that a policy file could not.

The points are the cartesian product of the axes in the order the axes were given, the last axis
varying fastest, each axis's values in the order given; a point's id (``p01`` …) is its place in
that order, the same on every run of the same grid (and on every task of a Slurm job array).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from enum import Enum
from types import MappingProxyType
from typing import Any

from gpuq.errors import BadInput
from gpuq.policy.config import ClassPolicy, Mode, PolicyKeyError, policy_from_mapping
from gpuq.replay.model import ReplayConfig
from gpuq.textsafe import visible
from gpuq.timefmt import format_duration, parse_duration

__all__ = [
    "KEYS",
    "MAX_POINTS",
    "Axis",
    "Grid",
    "Point",
    "Value",
    "apply_point",
    "parse_grid",
    "valid_keys",
]

#: a grid value: a number (a duration in seconds, Δ, a weight), a whole number, or a strategy
Value = float | int | Mode

#: more points than this is a typo (an extra value on each of several axes), not a sweep
MAX_POINTS = 10_000
_MAX_VALUES = 1_000


class _Kind(Enum):
    NUMBER = "a number"
    WHOLE = "a whole number"
    DURATION = "a duration (seconds, or e.g. 90s, 10m, 2h)"
    MODE = "one of " + ", ".join(m.value for m in Mode)


@dataclass(frozen=True, slots=True)
class _Key:
    kind: _Kind
    #: where the value lands: the policy file's dotted key (checked by its parser), or None for
    #: the replay's own knobs (checkpoint costs)
    policy_key: str | None
    help: str


#: every grid key: its kind, the policy file key it sets, and what it means (`max_wait.CLASS`:
#: one class's wait before aging starts, for a class named after the dot)
KEYS: Mapping[str, _Key] = MappingProxyType({
    "delta": _Key(_Kind.NUMBER, "preemption.delta", "priority gap a preemption needs (Δ)"),
    "min_runtime": _Key(_Kind.DURATION, "preemption.min_runtime", "run time before a job may be preempted"),
    "grace_period": _Key(_Kind.DURATION, "preemption.grace_period", "time a graceful victim gets to save"),
    "max_preemptions_per_day": _Key(_Kind.WHOLE, "preemption.max_preemptions_per_day",
                                    "daily cap of preemptions per job (0: none)"),
    "checkpoint_interval": _Key(_Kind.DURATION, "preemption.default_checkpoint_interval",
                                "every job saves this often (0: never)"),
    "checkpoint_cost": _Key(_Kind.DURATION, "preemption.checkpoint_cost", "time one checkpoint save takes"),
    "restore_cost": _Key(_Kind.DURATION, "preemption.restore_cost", "time a restart takes to restore"),
    "strategy": _Key(_Kind.MODE, "preemption.mode", "how a victim is preempted"),
    "aging_rate": _Key(_Kind.NUMBER, "aging.default_rate", "priority points per minute past max_wait"),
    "lost_work_weight": _Key(_Kind.NUMBER, "victim_cost.lost_work_weight", "victim cost per GPU-second lost"),
    "priority_weight": _Key(_Kind.NUMBER, "victim_cost.priority_weight", "victim cost per priority point"),
    "max_wait.CLASS": _Key(_Kind.DURATION, "classes.CLASS.max_wait", "that class's wait before aging starts"),
})  # fmt: skip

_CLASS_KEY = "max_wait."
_NUMBER_RE = re.compile(r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$")
_WHOLE_RE = re.compile(r"^\d+$")


def valid_keys() -> str:
    """The keys as an error lists them."""
    return ", ".join(KEYS)


@dataclass(frozen=True, slots=True)
class Axis:
    """One `--grid` option: a key and its values, in the order given."""

    key: str
    values: tuple[Value, ...]

    @property
    def kind(self) -> _Kind:
        return _key_spec(self.key).kind

    def shown(self, value: Value) -> str:
        """A value as tables, ids and the points file show it (``10m``, ``50``, ``requeue``)."""
        return show_value(self.key, value)


def show_value(key: str, value: Value) -> str:
    kind = _key_spec(key).kind
    if isinstance(value, Mode):
        return value.value
    if kind is _Kind.DURATION:
        text = format_duration(float(value))
        # (format_duration rounds to whole seconds: a fractional value is shown as given)
        return text if parse_duration(text) == value else f"{value:g}s"
    if kind is _Kind.WHOLE:
        return str(int(value))
    return f"{value:g}"


@dataclass(frozen=True, slots=True)
class Point:
    """One combination of the grid's values: `values` in axis order."""

    index: int
    id: str
    values: tuple[tuple[str, Value], ...]

    def value(self, key: str) -> Value | None:
        for k, v in self.values:
            if k == key:
                return v
        return None

    @property
    def label(self) -> str:
        """``delta=50 checkpoint_interval=10m``: what the point sets."""
        return " ".join(f"{k}={show_value(k, v)}" for k, v in self.values)


@dataclass(frozen=True, slots=True)
class Grid:
    axes: tuple[Axis, ...]

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(a.key for a in self.axes)

    @property
    def size(self) -> int:
        size = 1
        for axis in self.axes:
            size *= len(axis.values)
        return size

    def points(self) -> tuple[Point, ...]:
        """Every point, in the grid's stable order (the last axis varies fastest)."""
        width = max(2, len(str(self.size)))
        combos = itertools.product(*(a.values for a in self.axes))
        return tuple(
            Point(i, f"p{i + 1:0{width}d}", tuple(zip(self.keys, combo, strict=True))) for i, combo in enumerate(combos)
        )


def _key_spec(key: str) -> _Key:
    if key.startswith(_CLASS_KEY):
        return KEYS["max_wait.CLASS"]
    return KEYS[key]


def _check_key(key: str, option: str) -> None:
    if key.startswith(_CLASS_KEY):
        name = key[len(_CLASS_KEY) :]
        if not name.strip() or name != name.strip():
            raise BadInput(f"{option}: give the class after the dot, e.g. max_wait.batch=1h,4h")
        return
    if key not in KEYS or key == "max_wait.CLASS":
        raise BadInput(f"{option}: unknown key '{visible(key)}' (valid: {valid_keys()})")


def _parse_value(key: str, text: str, option: str) -> Value:
    spec = _key_spec(key)
    shown = visible(text)
    raw: Any
    if spec.kind is _Kind.MODE:
        if text not in {m.value for m in Mode}:
            raise BadInput(f"{option}: '{shown}' is not {spec.kind.value}")
        return Mode(text)
    if spec.kind is _Kind.DURATION:
        raw = text  # the policy parser takes duration strings itself
        if spec.policy_key is None:  # the replay's own knob: the same forms and bound
            try:
                return parse_duration(text, maximum=3650 * 86400.0)
            except ValueError as exc:
                raise BadInput(f"{option}: {exc}") from None
    elif spec.kind is _Kind.WHOLE:
        if not _WHOLE_RE.match(text):
            raise BadInput(f"{option}: '{shown}' is not {spec.kind.value}")
        raw = int(text)
    else:
        if not _NUMBER_RE.match(text):
            raise BadInput(f"{option}: '{shown}' is not {spec.kind.value}")
        raw = float(text)
    assert spec.policy_key is not None  # noqa: S101 - every other kind sets a policy key
    dotted = spec.policy_key.replace("CLASS", key[len(_CLASS_KEY) :]) if key.startswith(_CLASS_KEY) else spec.policy_key
    checked = _through_policy(key, dotted, raw, option)
    return int(checked) if spec.kind is _Kind.WHOLE else float(checked)


def _through_policy(key: str, dotted: str, raw: Any, option: str) -> float:
    """`raw` checked by the policy file's own parser at `dotted` (its ranges and duration rules),
    as the number the policy would hold."""
    head, *middle, last = dotted.split(".")
    table: dict[str, Any] = {last: raw}
    for part in reversed(middle):
        table = {part: table}
    try:
        policy = policy_from_mapping({head: table})
    except PolicyKeyError as exc:
        raise BadInput(f"{option}: {exc.problem}") from None
    held = policy.classes[middle[0]].max_wait_s if head == "classes" else getattr(policy, _POLICY_FIELDS[key])
    assert held is not None  # noqa: S101 - just set
    return float(held)


def parse_axis(spec: str) -> Axis:
    """One ``KEY=V1,V2,…``; BadInput naming the option and, for an unknown key, the valid ones."""
    option = f"--grid {visible(spec)}"
    key, sep, rest = spec.partition("=")
    key = key.strip()
    if not sep or not key:
        raise BadInput(f"{option}: expected KEY=V1,V2,… (keys: {valid_keys()})")
    _check_key(key, option)
    texts = [t.strip() for t in rest.split(",")]
    if not rest.strip() or any(not t for t in texts):
        raise BadInput(f"{option}: an empty value (give values separated by commas, e.g. {key}=0,50)")
    if len(texts) > _MAX_VALUES:
        raise BadInput(f"{option}: {len(texts)} values (at most {_MAX_VALUES})")
    values: list[Value] = []
    for text in texts:
        value = _parse_value(key, text, option)
        if value in values:
            raise BadInput(f"{option}: '{visible(text)}' is the same value as one given before it")
        values.append(value)
    return Axis(key, tuple(values))


def parse_grid(specs: Sequence[str]) -> Grid:
    """The grid of the `--grid` options, in order; BadInput for a bad one, a key given twice, no
    axis at all, or more than `MAX_POINTS` points."""
    if not specs:
        raise BadInput(f"give at least one --grid KEY=V1,V2,… (keys: {valid_keys()})")
    axes: list[Axis] = []
    for spec in specs:
        axis = parse_axis(spec)
        if any(a.key == axis.key for a in axes):
            raise BadInput(f"--grid {visible(axis.key)} given twice: give all its values in one --grid")
        axes.append(axis)
    grid = Grid(tuple(axes))
    if grid.size > MAX_POINTS:
        raise BadInput(f"the grid has {grid.size:,} points (at most {MAX_POINTS:,}): give fewer values")
    return grid


def apply_point(base: ReplayConfig, point: Point) -> ReplayConfig:
    """`base` with the point's values set (`dataclasses.replace`).

    `checkpoint_interval` sets both the interval every job saves at in the replay and the
    policy's default interval (the victim cost then counts the same work as lost, and a policy
    file written from the point carries it); `strategy` sets the policy's mode and the replay's
    strategy; `checkpoint_cost` and `restore_cost` set the policy's costs and the replay's."""
    policy = base.policy
    checkpoint = base.checkpoint
    strategy = base.strategy
    policy_changes: dict[str, Any] = {}
    classes: dict[str, ClassPolicy] | None = None
    for key, value in point.values:
        if key == "checkpoint_interval":
            policy_changes["default_checkpoint_interval_s"] = float(value)
            checkpoint = replace(checkpoint, interval_s=float(value))
        elif key == "checkpoint_cost":
            policy_changes["checkpoint_cost_s"] = float(value)
            checkpoint = replace(checkpoint, save_cost_s=float(value))
        elif key == "restore_cost":
            policy_changes["restore_cost_s"] = float(value)
            checkpoint = replace(checkpoint, restore_cost_s=float(value))
        elif key == "strategy":
            assert isinstance(value, Mode)  # noqa: S101 - parse_axis made it one
            policy_changes["mode"] = value
            strategy = value
        elif key.startswith(_CLASS_KEY):
            classes = dict(policy.classes) if classes is None else classes
            name = key[len(_CLASS_KEY) :]
            classes[name] = replace(classes.get(name, ClassPolicy()), max_wait_s=float(value))
        else:
            policy_changes[_POLICY_FIELDS[key]] = int(value) if key == "max_preemptions_per_day" else float(value)
    if classes is not None:
        policy_changes["classes"] = MappingProxyType(classes)
    return replace(base, policy=replace(policy, **policy_changes), checkpoint=checkpoint, strategy=strategy)


#: the Policy field each plain policy key sets
_POLICY_FIELDS = {
    "delta": "delta",
    "min_runtime": "min_runtime_s",
    "grace_period": "grace_period_s",
    "max_preemptions_per_day": "max_preemptions_per_day",
    "checkpoint_interval": "default_checkpoint_interval_s",
    "checkpoint_cost": "checkpoint_cost_s",
    "restore_cost": "restore_cost_s",
    "aging_rate": "default_aging_rate",
    "lost_work_weight": "lost_work_weight",
    "priority_weight": "priority_weight",
}
