"""A `Policy` written as the policy TOML that `--policy FILE` reads (`gpuq.config.load_policy_file`,
`gpuq.policy.config.policy_from_mapping`): every field, so the file means the same whatever the
defaults become. Numbers are written exactly (durations in seconds, with the readable form as a
comment), and `policy_from_mapping` of the text gives the same `Policy` back.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from gpuq.policy.config import Policy
from gpuq.timefmt import format_duration

__all__ = ["policy_toml"]

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(name: str) -> str:
    """A TOML key: bare when it can be, else a basic string."""
    return name if _BARE_KEY.match(name) else _string(name)


def _string(text: str) -> str:
    # JSON's escapes are TOML's; TOML also wants DEL escaped
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def _number(value: float) -> str:
    return repr(float(value))


def _duration(key: str, seconds: float) -> str:
    return f"{key} = {_number(seconds)}  # {format_duration(seconds)}"


def _comment(line: str) -> str:
    # a comment holds no control characters (TOML refuses them there)
    return "# " + "".join(c if c.isprintable() else "?" for c in line)


def policy_toml(policy: Policy, comments: Iterable[str] = ()) -> str:
    """The policy as TOML text; `comments` go first, one `#` line each."""
    lines = [_comment(c) for c in comments]
    if lines:
        lines.append("")
    lines += [
        "[preemption]",
        f"delta = {_number(policy.delta)}",
        f"mode = {_string(policy.mode.value)}",
        _duration("grace_period", policy.grace_period_s),
        _duration("min_runtime", policy.min_runtime_s),
        f"max_preemptions_per_day = {int(policy.max_preemptions_per_day)}",
        _duration("default_checkpoint_interval", policy.default_checkpoint_interval_s),
        _duration("checkpoint_cost", policy.checkpoint_cost_s),
        _duration("restore_cost", policy.restore_cost_s),
        f"urgent_priority = {int(policy.urgent_priority)}",
        "",
        "[victim_cost]",
        f"lost_work_weight = {_number(policy.lost_work_weight)}",
        f"priority_weight = {_number(policy.priority_weight)}",
        "",
        "[aging]",
        f"default_rate = {_number(policy.default_aging_rate)}",
    ]
    for name in sorted(policy.classes):
        override = policy.classes[name]
        lines += ["", f"[classes.{_key(name)}]"]
        if override.target_p95_s is not None:
            lines.append(_duration("target_p95", override.target_p95_s))
        if override.max_wait_s is not None:
            lines.append(_duration("max_wait", override.max_wait_s))
        if override.aging_rate is not None:
            lines.append(f"aging_rate = {_number(override.aging_rate)}")
        if override.preemptible is not None:
            lines.append(f"preemptible = {'true' if override.preemptible else 'false'}")
    lines += ["", "[urgent_quota]", f"default = {int(policy.urgent_quota_default)}"]
    lines += [f"{_key(tenant)} = {int(policy.urgent_quota[tenant])}" for tenant in sorted(policy.urgent_quota)]
    return "\n".join(lines) + "\n"
