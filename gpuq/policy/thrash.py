"""The thrash guard: from what a run's preemptions were, is the policy churning its jobs?

Judged after the fact, over a list of preemptions (a replay's, the policy lab's, a cluster's
ledger), never in the simulator's loop. Four signs, each against `ThrashLimits`:

- *over the cap*: a job preempted more than `per_day` times within some 24 h window;
- *too soon*: a job preempted again less than `min_runtime_s` after its previous preemption
  (so the run in between was shorter than the minimum runtime);
- *taking turns*: two jobs that each preempted the other, `turns` times or more in all within
  some 24 h window (a slow rotation over days, as aging hands GPUs back and forth, is not thrash);
- *work lost*: GPU-time lost to preemption above `lost_share` of the work done (GPU-time
  spent working, kept or lost), where the work done is known.

The limits are the policy's own protections, and where the policy has none, gpuq's defaults'
(`limits_for`): a policy without a daily cap is still told that its jobs are preempted more
often than a sane cap would allow.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from gpuq.model import DAY_S
from gpuq.policy.config import DEFAULT_POLICY, Policy
from gpuq.timefmt import format_duration

__all__ = ["JobThrash", "PairThrash", "Thrash", "ThrashLimits", "detect", "limits_for"]

#: jobs and pairs a `Thrash` names, worst first
WORST: Final = 5
#: GPU-time lost above this share of the work done is thrashing
LOST_SHARE: Final = 0.10


@dataclass(frozen=True, slots=True)
class ThrashLimits:
    per_day: int
    min_runtime_s: float
    lost_share: float = LOST_SHARE
    turns: int = 4


def limits_for(policy: Policy) -> ThrashLimits:
    """The policy's daily cap and minimum runtime, each gpuq's default where the policy has none."""
    return ThrashLimits(policy.max_preemptions_per_day or DEFAULT_POLICY.max_preemptions_per_day,
                        policy.min_runtime_s or DEFAULT_POLICY.min_runtime_s)  # fmt: skip


@dataclass(frozen=True, slots=True)
class JobThrash:
    job: str
    preemptions: int
    #: the most in any 24 h window
    most_in_a_day: int
    #: preemptions less than the minimum runtime after the job's previous one
    too_soon: int
    lost_gpu_s: float


@dataclass(frozen=True, slots=True)
class PairThrash:
    first: str
    second: str
    #: times `first` preempted `second`, and the other way round (in all)
    first_over_second: int
    second_over_first: int

    @property
    def turns(self) -> int:
        return self.first_over_second + self.second_over_first


@dataclass(frozen=True, slots=True)
class Thrash:
    """What the guard found; `flagged` says whether any sign showed."""

    limits: ThrashLimits
    preemptions: int
    #: jobs over the cap or preempted too soon, and their counts (all of them)
    over_cap: int
    too_soon: int
    pairs_taking_turns: int
    lost_gpu_s: float
    #: None: not known (a cluster's ledger), so the lost share is not judged
    work_gpu_s: float | None
    #: the worst flagged jobs and pairs (at most `WORST` each)
    jobs: tuple[JobThrash, ...] = ()
    pairs: tuple[PairThrash, ...] = ()
    #: the preemptions looked at are the latest of more (a bounded log)
    partial: bool = False
    #: the jobs that lost the most GPU-time (at most `WORST`), named when too much was lost
    losers: tuple[JobThrash, ...] = ()

    @property
    def lost_share(self) -> float | None:
        if self.work_gpu_s is None or self.work_gpu_s <= 0:
            return None
        return self.lost_gpu_s / self.work_gpu_s

    @property
    def too_much_lost(self) -> bool:
        share = self.lost_share
        return share is not None and share > self.limits.lost_share

    @property
    def flagged(self) -> bool:
        return bool(self.over_cap or self.too_soon or self.pairs_taking_turns or self.too_much_lost)

    def signs(self) -> list[str]:
        """Each sign that showed, as a phrase (`summary` joins them)."""
        limits = self.limits
        out = []
        if self.over_cap:
            worst = [j for j in self.jobs if j.most_in_a_day > limits.per_day]
            named = ", ".join(f"{j.job} {j.most_in_a_day}×" for j in worst)
            out.append(f"{self.over_cap:,} job(s) preempted more than {limits.per_day}× in 24 h"
                       + (f" ({named})" if named else ""))  # fmt: skip
        if self.too_soon:
            worst = [j for j in self.jobs if j.too_soon]
            named = ", ".join(f"{j.job} {j.too_soon}×" for j in worst)
            out.append(f"{self.too_soon:,} job(s) preempted again within {format_duration(limits.min_runtime_s)}"
                       + (f" ({named})" if named else ""))  # fmt: skip
        if self.pairs_taking_turns:
            named = ", ".join(f"{p.first}/{p.second} {p.turns}×" for p in self.pairs)
            out.append(f"{self.pairs_taking_turns:,} pair(s) taking turns ({named})")
        if self.too_much_lost:
            named = ", ".join(f"{j.job} {j.lost_gpu_s / 3600:,.1f} GPU-h" for j in self.losers)
            out.append(f"{self.lost_share:.0%} of the work lost (over {limits.lost_share:.0%})"
                       + (f", most by {named}" if named else ""))  # fmt: skip
        return out

    def summary(self) -> str:
        """One line: every sign, or "" when none showed."""
        if not self.flagged:
            return ""
        scope = f" (judged on the latest {self.preemptions:,} preemptions)" if self.partial else ""
        return "thrashing: " + "; ".join(self.signs()) + scope

    def to_dict(self) -> dict[str, Any]:
        return {
            "flagged": self.flagged,
            "preemptions": self.preemptions,
            "over_cap": self.over_cap,
            "too_soon": self.too_soon,
            "pairs_taking_turns": self.pairs_taking_turns,
            "lost_gpu_s": self.lost_gpu_s,
            "work_gpu_s": self.work_gpu_s,
            "lost_share": self.lost_share,
            "partial": self.partial,
            "limits": {
                "per_day": self.limits.per_day,
                "min_runtime_s": self.limits.min_runtime_s,
                "lost_share": self.limits.lost_share,
                "turns": self.limits.turns,
            },  # fmt: skip
            "jobs": [
                {
                    "job": j.job,
                    "preemptions": j.preemptions,
                    "most_in_a_day": j.most_in_a_day,
                    "too_soon": j.too_soon,
                    "lost_gpu_s": j.lost_gpu_s,
                }
                for j in self.jobs
            ],  # fmt: skip
            "pairs": [[p.first, p.second, p.first_over_second, p.second_over_first] for p in self.pairs],
            "losers": [
                {
                    "job": j.job,
                    "preemptions": j.preemptions,
                    "most_in_a_day": j.most_in_a_day,
                    "too_soon": j.too_soon,
                    "lost_gpu_s": j.lost_gpu_s,
                }
                for j in self.losers
            ],  # fmt: skip
        }

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> Thrash:
        lim = raw["limits"]
        work = raw.get("work_gpu_s")
        return cls(
            ThrashLimits(int(lim["per_day"]), float(lim["min_runtime_s"]), float(lim["lost_share"]), int(lim["turns"])),
            int(raw["preemptions"]), int(raw["over_cap"]), int(raw["too_soon"]), int(raw["pairs_taking_turns"]),
            float(raw["lost_gpu_s"]), None if work is None else float(work),
            _jobs(raw.get("jobs", ())),
            tuple(PairThrash(str(a), str(b), int(x), int(y)) for a, b, x, y in raw.get("pairs", ())),
            bool(raw.get("partial", False)),
            _jobs(raw.get("losers", ())),
        )  # fmt: skip


def _jobs(raw: Iterable[Mapping[str, Any]]) -> tuple[JobThrash, ...]:
    return tuple(JobThrash(str(j["job"]), int(j["preemptions"]), int(j["most_in_a_day"]), int(j["too_soon"]),
                           float(j["lost_gpu_s"])) for j in raw)  # fmt: skip


def _most_in_a_day(times: list[float]) -> int:
    best = low = 0
    for high, t in enumerate(times):
        while times[low] <= t - DAY_S:
            low += 1
        best = max(best, high - low + 1)
    return best


def detect(
    preemptions: Iterable[tuple[float, str, str | None, float]],
    limits: ThrashLimits,
    *,
    work_gpu_s: float | None = None,
    lost_gpu_s: float | None = None,
    partial: bool = False,
) -> Thrash:
    """The guard over `preemptions`, each (time in seconds, victim, preemptor or None, GPU-seconds
    lost), in any order. `lost_gpu_s`: the run's whole loss where it is known better than the sum
    of the preemptions' (graceful drains lose work too); `work_gpu_s`: the work done, or None."""
    times: defaultdict[str, list[float]] = defaultdict(list)
    lost: defaultdict[str, float] = defaultdict(float)
    by: defaultdict[tuple[str, str], list[float]] = defaultdict(list)
    total_lost = 0.0
    count = 0
    for t, victim, preemptor, gpu_s in preemptions:
        count += 1
        times[victim].append(t)
        lost[victim] += gpu_s
        total_lost += gpu_s
        if preemptor is not None and preemptor != victim:
            by[(preemptor, victim)].append(t)
    every: list[JobThrash] = []
    for job, seen in times.items():
        seen.sort()
        soon = sum(1 for a, b in zip(seen, seen[1:], strict=False) if b - a < limits.min_runtime_s)
        every.append(JobThrash(job, len(seen), _most_in_a_day(seen), soon, lost[job]))
    flagged = [j for j in every if j.most_in_a_day > limits.per_day or j.too_soon]
    over_cap = sum(1 for j in flagged if j.most_in_a_day > limits.per_day)
    too_soon = sum(1 for j in flagged if j.too_soon)
    flagged.sort(key=lambda j: (-j.most_in_a_day, -j.too_soon, -j.preemptions, j.job))
    losers = heapq.nsmallest(WORST, (j for j in every if j.lost_gpu_s > 0), key=lambda j: (-j.lost_gpu_s, j.job))
    pairs = []
    for (a, b), there in by.items():
        back = by.get((b, a))
        # (a slow rotation over days is not thrash: the turns must fall within one day)
        if (
            a < b
            and back
            and len(there) + len(back) >= limits.turns
            and _most_in_a_day(sorted(there + back)) >= limits.turns
        ):
            pairs.append(PairThrash(a, b, len(there), len(back)))
    pairs.sort(key=lambda p: (-p.turns, p.first, p.second))
    return Thrash(limits, count, over_cap, too_soon, len(pairs), total_lost if lost_gpu_s is None else lost_gpu_s,
                  work_gpu_s, tuple(flagged[:WORST]), tuple(pairs[:WORST]), partial, tuple(losers))  # fmt: skip
