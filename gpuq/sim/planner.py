"""The bridge from the simulator to the policy engine.

The simulator asks one question — "which running jobs should go so that this blocked job can
start?" — through a `Planner`, a plain callable. The default one is the policy engine itself, so
what `gpuq preview` says is what the simulated scheduler does; tests can pass their own. (For
single-node requests the simulator has an equivalent shortcut, `gpuq.sim.victims`.)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from gpuq.model import Job, Snapshot
from gpuq.policy.config import Policy

__all__ = ["Decision", "Planner", "engine_planner"]

_NO_DETAILS: Mapping[str, str] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Decision:
    """The victims to preempt and the nodes the job would run on; `fits` when none are needed."""

    victims: tuple[str, ...]
    nodes: tuple[str, ...] = ()
    fits: bool = False
    details: Mapping[str, str] = field(default_factory=lambda: _NO_DETAILS)  # shared, read-only


#: (snapshot, policy, the blocked job, now) -> a decision, or None when nothing may be preempted now
Planner = Callable[[Snapshot, Policy, Job, float], "Decision | None"]


def engine_planner(snapshot: Snapshot, policy: Policy, job: Job, now: float) -> Decision | None:
    """Ask `gpuq.policy.engine.plan_preemption` for the job's own request."""
    from gpuq.policy import engine  # imported on first use: the engine is the heavier module

    plan = engine.plan_preemption(snapshot, policy, engine.request_for_job(job), now)
    if plan.fits_without_preemption:
        return Decision((), tuple(plan.nodes), fits=True)
    if not plan.would_preempt or not plan.victims:
        return None
    return Decision(
        tuple(v.job_id for v in plan.victims),
        tuple(plan.nodes),
        details=MappingProxyType({v.job_id: v.detail for v in plan.victims}),
    )
