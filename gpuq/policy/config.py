"""The preemption policy as data, built from a decoded TOML table (`policy_from_mapping`).

Pure: files are read by `gpuq.config` (`load_policy_file`), which turns a `PolicyKeyError` into
an error naming the file, the line and the key, e.g.
``policy.toml:4: preemption.mode: 'kill' is not one of cancel, requeue, …``.
Durations accept seconds or strings like ``90s``, ``10m``, ``2h``.

Every number is checked against what can exist: finite (TOML has ``inf`` and ``nan``), within
a range the error states (`_RANGES`), and whole where a count or a priority is meant
(``urgent_priority = 0.5`` is refused, not truncated).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any

from gpuq.model import MAX_PRIORITY, JobClass
from gpuq.timefmt import format_duration, parse_duration

__all__ = [
    "DEFAULT_POLICY",
    "UNGUARDED_POLICY",
    "ClassPolicy",
    "Mode",
    "PolicyKeyError",
    "Policy",
    "policy_from_mapping",
]


class Mode(StrEnum):
    CANCEL = "cancel"
    REQUEUE = "requeue"
    SUSPEND = "suspend"
    GRACEFUL = "graceful"


@dataclass(frozen=True, slots=True)
class ClassPolicy:
    """Overrides of one class's SLA and preemptibility; None keeps the snapshot's value."""

    target_p95_s: float | None = None
    max_wait_s: float | None = None
    aging_rate: float | None = None
    preemptible: bool | None = None


@dataclass(frozen=True, slots=True)
class Policy:
    """gpuq's policy; the defaults are a starting point a site could run unchanged (README,
    "Policy file"). Replayed on a public-shaped trace at full load (`benchmarks/bench_defaults.py`)
    they preempt 0.37 times per job and lose 1% of the work, where Δ 0 without protections
    preempted 18 times per job and lost 37%. Why each:"""

    #: anti-jitter: a gap worth 5 minutes of aging (10 points a minute) or less never preempts, so
    #: jobs aging side by side do not take turns; the classes' own gaps (9 from batch to low
    #: excepted) still do
    delta: float = 50.0
    #: a requeued victim restarts from its last checkpoint (`default_checkpoint_interval`)
    mode: Mode = Mode.REQUEUE
    #: graceful: time to finish an iteration and save (the notes' "sew the last stitch")
    grace_period_s: float = 300.0
    #: a (re)started job runs this long before it may be preempted: its restore and first
    #: interval's work are not thrown away at once
    min_runtime_s: float = 1800.0
    #: no job is preempted more than this in any 24 h ("a job is preempted at most K times a day")
    max_preemptions_per_day: int = 3
    #: a job that reports no checkpoints is assumed to save hourly, as training jobs do
    default_checkpoint_interval_s: float = 3600.0
    #: what a save and a restore cost in a replay (`CheckpointModel` may say otherwise): a
    #: preemption is never free, so graceful and requeue are ranked on what they really cost
    checkpoint_cost_s: float = 60.0
    restore_cost_s: float = 120.0
    urgent_priority: int = 1_000_000
    lost_work_weight: float = 1.0
    priority_weight: float = 0.0
    default_aging_rate: float = 10.0
    classes: Mapping[str, ClassPolicy] = field(default_factory=lambda: MappingProxyType({}))
    urgent_quota_default: int = 0
    urgent_quota: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))

    def resolve_class(self, base: JobClass | None, name: str) -> JobClass:
        """The snapshot's class with this policy's overrides applied."""
        cls = base or JobClass(name=name)
        override = self.classes.get(name)
        if override is None:
            return cls
        return JobClass(
            name=cls.name,
            priority=cls.priority,
            preemptible=cls.preemptible if override.preemptible is None else override.preemptible,
            target_p95_s=cls.target_p95_s if override.target_p95_s is None else override.target_p95_s,
            max_wait_s=cls.max_wait_s if override.max_wait_s is None else override.max_wait_s,
            may_preempt=cls.may_preempt,  # (the cluster's rule: no policy file changes it)
        )

    def aging_rate(self, class_name: str) -> float:
        override = self.classes.get(class_name)
        if override is not None and override.aging_rate is not None:
            return override.aging_rate
        return self.default_aging_rate

    def tenant_urgent_quota(self, tenant: str) -> int:
        """GPUs the tenant may hold at manual-urgent priority; 0 means unlimited
        (`rules.over_urgent_quota` applies it)."""
        return self.urgent_quota.get(tenant, self.urgent_quota_default)


DEFAULT_POLICY = Policy()
#: no protections at all (Δ 0, no minimum runtime, no daily cap, no default checkpoints, free
#: checkpoints): gpuq's defaults before 12-07, which thrash at high load; for comparisons and tests
#: of one mechanism alone
UNGUARDED_POLICY = Policy(delta=0.0, min_runtime_s=0.0, max_preemptions_per_day=0, default_checkpoint_interval_s=0.0,
                          checkpoint_cost_s=0.0, restore_cost_s=0.0)  # fmt: skip

_SECTIONS = {"preemption", "victim_cost", "classes", "urgent_quota", "aging"}
_PREEMPTION_KEYS = {
    "delta",
    "mode",
    "grace_period",
    "min_runtime",
    "max_preemptions_per_day",
    "default_checkpoint_interval",
    "checkpoint_cost",
    "restore_cost",
    "urgent_priority",
}
_VICTIM_KEYS = {"lost_work_weight", "priority_weight"}
_CLASS_KEYS = {"target_p95", "max_wait", "aging_rate", "preemptible"}

#: the longest duration a policy sets (a grace period, a minimum runtime, an SLA target)
MAX_POLICY_DURATION_S = 3650 * 86400.0
#: (lowest, highest) of each number, by the key's last part: priorities and their rates as far as
#: a float counts them exactly, weights so that a cost (GPU-seconds × weight) stays finite,
#: a preemption cap and an urgent quota as large as any cluster could use
_RANGES: dict[str, tuple[float, float]] = {
    "delta": (0, MAX_PRIORITY),
    "urgent_priority": (1, MAX_PRIORITY),
    "max_preemptions_per_day": (0, 1_000_000),
    "lost_work_weight": (0, 1e9),
    "priority_weight": (0, 1e9),
    "default_rate": (0, MAX_PRIORITY),
    "aging_rate": (0, MAX_PRIORITY),
    "urgent_quota": (0, 100_000_000),
}


class PolicyKeyError(Exception):
    """A bad key or value in a policy table; `key` is the dotted key, for file:line errors."""

    def __init__(self, key: str, problem: str) -> None:
        super().__init__(problem)
        self.key = key
        self.problem = problem


def _shown(value: Any) -> str:
    """A value for an error message (an integer of thousands of digits is not printed whole)."""
    if isinstance(value, int) and value.bit_length() > 128:
        return f"an integer of about {int(value.bit_length() * 0.30103)} digits"
    text = repr(value)
    return text if len(text) <= 40 else text[:36] + "…"


def _number(
    table: Mapping[str, Any], key: str, dotted: str, *, whole: bool = False, kind: str | None = None
) -> float | None:
    """The number at `key`, finite and within its `_RANGES` entry (`kind`, else `key`), whole
    when `whole`."""
    if key not in table:
        return None
    value = table[key]
    low, high = _RANGES[kind or key]
    bounds = f"from {low:,.0f} to {high:,.0f}" if high < 1e15 else f"from {low:,.0f} to 2^53"
    what = "a whole number" if whole else "a number"
    if isinstance(value, bool) or not isinstance(value, int | float) or (whole and isinstance(value, float)):
        raise PolicyKeyError(dotted, f"expected {what} {bounds}, got {_shown(value)}")
    if not low <= value <= high:  # (NaN fails this too)
        raise PolicyKeyError(dotted, f"must be {what} {bounds}, got {_shown(value)}")
    return float(value)


def _duration(table: Mapping[str, Any], key: str, dotted: str) -> float | None:
    if key not in table:
        return None
    try:
        return parse_duration(table[key], maximum=MAX_POLICY_DURATION_S)
    except ValueError as exc:
        text = str(exc)
        if "at most" not in text:
            text += f" (at most {format_duration(MAX_POLICY_DURATION_S)})"
        raise PolicyKeyError(dotted, text) from None


def _unknown(table: Mapping[str, Any], allowed: set[str], prefix: str) -> None:
    for key in table:
        if key not in allowed:
            raise PolicyKeyError(f"{prefix}{key}", f"unknown key (allowed: {', '.join(sorted(allowed))})")


def _table(raw: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = raw.get(key, {})
    if not isinstance(value, dict):
        raise PolicyKeyError(key, f"expected a table [{key}], got {_shown(value)}")
    return value


def policy_from_mapping(raw: Mapping[str, Any]) -> Policy:
    """Build a Policy from decoded TOML; raises `PolicyKeyError` (converted by callers) on bad values."""
    _unknown(raw, _SECTIONS, "")
    pre = _table(raw, "preemption")
    _unknown(pre, _PREEMPTION_KEYS, "preemption.")
    cost = _table(raw, "victim_cost")
    _unknown(cost, _VICTIM_KEYS, "victim_cost.")
    aging = _table(raw, "aging")
    _unknown(aging, {"default_rate"}, "aging.")
    kwargs: dict[str, Any] = {}

    def put(name: str, value: Any) -> None:
        if value is not None:
            kwargs[name] = value

    put("delta", _number(pre, "delta", "preemption.delta"))
    if "mode" in pre:
        mode = pre["mode"]
        if not isinstance(mode, str) or mode not in {m.value for m in Mode}:
            raise PolicyKeyError("preemption.mode", f"{_shown(mode)} is not one of {', '.join(m.value for m in Mode)}")
        kwargs["mode"] = Mode(mode)
    put("grace_period_s", _duration(pre, "grace_period", "preemption.grace_period"))
    put("min_runtime_s", _duration(pre, "min_runtime", "preemption.min_runtime"))
    cap = _number(pre, "max_preemptions_per_day", "preemption.max_preemptions_per_day", whole=True)
    if cap is not None:
        kwargs["max_preemptions_per_day"] = int(cap)
    put(
        "default_checkpoint_interval_s",
        _duration(pre, "default_checkpoint_interval", "preemption.default_checkpoint_interval"),
    )
    put("checkpoint_cost_s", _duration(pre, "checkpoint_cost", "preemption.checkpoint_cost"))
    put("restore_cost_s", _duration(pre, "restore_cost", "preemption.restore_cost"))
    urgent = _number(pre, "urgent_priority", "preemption.urgent_priority", whole=True)
    if urgent is not None:
        kwargs["urgent_priority"] = int(urgent)
    put("lost_work_weight", _number(cost, "lost_work_weight", "victim_cost.lost_work_weight"))
    put("priority_weight", _number(cost, "priority_weight", "victim_cost.priority_weight"))
    put("default_aging_rate", _number(aging, "default_rate", "aging.default_rate"))

    classes: dict[str, ClassPolicy] = {}
    for name, table in _table(raw, "classes").items():
        prefix = f"classes.{name}."
        if not isinstance(table, dict):
            raise PolicyKeyError(f"classes.{name}", f"expected a table [classes.{name}], got {_shown(table)}")
        _unknown(table, _CLASS_KEYS, prefix)
        preemptible = table.get("preemptible")
        if preemptible is not None and not isinstance(preemptible, bool):
            raise PolicyKeyError(prefix + "preemptible", f"expected true or false, got {_shown(preemptible)}")
        classes[name] = ClassPolicy(
            target_p95_s=_duration(table, "target_p95", prefix + "target_p95"),
            max_wait_s=_duration(table, "max_wait", prefix + "max_wait"),
            aging_rate=_number(table, "aging_rate", prefix + "aging_rate"),
            preemptible=preemptible,
        )
    kwargs["classes"] = MappingProxyType(classes)

    quota: dict[str, int] = {}
    default_quota = 0
    for tenant, value in _table(raw, "urgent_quota").items():
        dotted = f"urgent_quota.{tenant}"
        value = int(_number({tenant: value}, tenant, dotted, whole=True, kind="urgent_quota") or 0)
        if tenant == "default":
            default_quota = value
        else:
            quota[tenant] = value
    kwargs["urgent_quota_default"] = default_quota
    kwargs["urgent_quota"] = MappingProxyType(quota)
    return Policy(**kwargs)
