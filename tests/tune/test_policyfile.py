"""A policy written as TOML reads back (through the policy file loader) as the same `Policy`."""

from __future__ import annotations

import tomllib
from pathlib import Path
from types import MappingProxyType

import pytest

from gpuq.config import load_policy_file
from gpuq.policy.config import DEFAULT_POLICY, ClassPolicy, Mode, Policy, policy_from_mapping
from gpuq.tune.policyfile import policy_toml

RICH = Policy(
    delta=37.5, mode=Mode.GRACEFUL, grace_period_s=90.25, min_runtime_s=600.0, max_preemptions_per_day=3,
    default_checkpoint_interval_s=1234.5, urgent_priority=999_999, lost_work_weight=0.1, priority_weight=1e-7,
    default_aging_rate=2.5,
    classes=MappingProxyType({
        "batch": ClassPolicy(max_wait_s=7200.0),
        "urgent": ClassPolicy(target_p95_s=60.0, max_wait_s=300.0, aging_rate=0.0, preemptible=False),
        "a.b \"q\" é\x7f\x01": ClassPolicy(preemptible=True),
        "empty": ClassPolicy(),
    }),
    urgent_quota_default=8, urgent_quota=MappingProxyType({"team-a": 16, "dots.and space": 0}),
)  # fmt: skip


@pytest.mark.parametrize("policy", [DEFAULT_POLICY, RICH], ids=["defaults", "rich"])
def test_round_trip(policy: Policy, tmp_path: Path) -> None:
    text = policy_toml(policy, ["best point p07 (delta=50)", "a line with a \x1b control"])
    assert policy_from_mapping(tomllib.loads(text)) == policy
    path = tmp_path / "best.toml"
    path.write_text(text, encoding="utf-8")
    assert load_policy_file(path).policy == policy


def test_it_writes_every_field_and_readable_durations() -> None:
    text = policy_toml(RICH, ["hello"])
    assert text.startswith("# hello\n\n[preemption]\n")
    assert "min_runtime = 600.0  # 10m\n" in text
    assert "max_preemptions_per_day = 3\n" in text
    assert 'mode = "graceful"\n' in text
    # every key a policy file knows, in its section
    data = tomllib.loads(policy_toml(DEFAULT_POLICY))
    assert set(data) == {"preemption", "victim_cost", "aging", "urgent_quota"}
    assert set(data["preemption"]) == {"delta", "mode", "grace_period", "min_runtime", "max_preemptions_per_day",
                                       "default_checkpoint_interval", "checkpoint_cost", "restore_cost",
                                       "urgent_priority"}  # fmt: skip
