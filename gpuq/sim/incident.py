"""What a first look at the demo must show: an incident an operator can work on.

A fresh demo cluster is opened on the first moment (on a fixed step from the end of its warm-up)
at which all of these hold, so a new user sees the console's reason to exist at any wall-clock
hour, and the same seed always opens on the same moment:

- jobs are pending for GPUs;
- a class is near its SLA (P95 of waits, pending jobs counted, at 80% of its target or past it);
- a preemption happened in the last hour;
- one of the most urgent pending jobs would preempt if it were tried now (the head of the
  queue is stuck, the scheduler tries no one behind it: "whose GPUs would it take?").
"""

from __future__ import annotations

from gpuq.model import JobState, Snapshot
from gpuq.policy.config import Policy
from gpuq.policy.engine import plan_preemption, request_for_job
from gpuq.policy.order import pending_order
from gpuq.sla import class_verdict, sla_report

__all__ = ["RECENT_S", "TOP_PENDING", "shows_incident"]
#: a preemption this recent counts
RECENT_S = 3600.0
#: how many of the top pending jobs the overview shows (and this looks at)
TOP_PENDING = 5


def shows_incident(snapshot: Snapshot, policy: Policy) -> bool:
    """Whether `snapshot` shows everything the module docstring lists."""
    now = snapshot.now
    pending = [job for job in snapshot.jobs if job.state is JobState.PENDING]
    if not pending:
        return False
    if not any(now - event.time.timestamp() < RECENT_S for event in snapshot.preemption_events):
        return False
    report = sla_report(snapshot, policy, now)
    if not any(class_verdict(s) in ("breach", "at_risk") for s in report.classes.values()):
        return False
    top = sorted(pending, key=pending_order(snapshot, policy, now))[:TOP_PENDING]
    return any(plan_preemption(snapshot, policy, request_for_job(job), now).would_preempt for job in top)
