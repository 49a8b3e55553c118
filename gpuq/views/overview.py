"""The overview, the 3 a.m. screen: capacity, the SLA per class counting jobs still waiting, the
pending jobs that rank highest with what each would preempt, and the latest preemptions."""

from __future__ import annotations

from collections import Counter
from datetime import datetime

import msgspec

from gpuq.model import JobState, Snapshot
from gpuq.policy.engine import free_gpus
from gpuq.policy.order import pending_order
from gpuq.policy.rules import effective_priority
from gpuq.service import Cluster
from gpuq.sla import WaitStats
from gpuq.views.preemptions import LedgerEvent, preemption_events

__all__ = ["Capacity", "OverviewView", "TopPending", "overview_view"]


class Capacity(msgspec.Struct, frozen=True):
    total: int
    busy: int
    free: int
    #: on nodes that are down or draining
    unavailable: int

    @property
    def busy_share(self) -> float:
        usable = self.total - self.unavailable
        return self.busy / usable if usable > 0 else 0.0


class TopPending(msgspec.Struct, frozen=True):
    id: str
    gpus: int
    job_class: str
    tenant: str
    effective_priority: float
    wait_s: float | None
    fits_now: bool
    would_preempt: bool
    victims: tuple[str, ...]
    blocked: str | None


class OverviewView(msgspec.Struct, frozen=True):
    cluster: str
    backend: str
    taken_at: datetime
    capacity: Capacity
    #: job counts by state, in state-name order
    jobs: dict[str, int]
    #: per class, in name order
    sla: dict[str, WaitStats]
    top_pending: tuple[TopPending, ...]
    recent_preemptions: tuple[LedgerEvent, ...]


def overview_view(cluster: Cluster, snapshot: Snapshot, *, top: int = 5) -> OverviewView:
    now = snapshot.now
    usable = {n.name for n in snapshot.nodes if n.state.takes_work}
    total = sum(n.gpus for n in snapshot.nodes)
    free = sum(free_gpus(snapshot).values())
    unavailable = sum(n.gpus for n in snapshot.nodes if n.name not in usable)
    states = Counter(job.state.value for job in snapshot.jobs)
    report = cluster.sla(snapshot, None)
    # Jobs waiting for GPUs: a CPU-only job (Slurm without --gres) competes for none.
    pending = [j for j in snapshot.jobs if j.state is JobState.PENDING and j.gpus > 0]
    ranked = sorted(pending, key=pending_order(snapshot, cluster.policy, now))[:top]
    top_rows = []
    for job in ranked:
        # gpuq's own plan only: asking the native scheduler for each would make this screen slow.
        plan = cluster.preview(cluster.job_request(job.id, snapshot), snapshot, native=False).plan
        top_rows.append(
            TopPending(
                id=job.id,
                gpus=job.gpus,
                job_class=job.job_class,
                tenant=job.tenant,
                effective_priority=effective_priority(job, cluster.resolved_class(snapshot, job.job_class),
                                                      cluster.policy, now),
                wait_s=job.wait_s(now),
                fits_now=plan.fits_without_preemption,
                would_preempt=plan.would_preempt,
                victims=tuple(v.job_id for v in plan.victims),
                blocked=plan.blocked,
            )
        )
    return OverviewView(
        cluster=snapshot.cluster,
        backend=snapshot.backend,
        taken_at=snapshot.taken_at,
        capacity=Capacity(total, total - unavailable - free, free, unavailable),
        jobs=dict(sorted(states.items())),
        sla=dict(sorted(report.classes.items())),
        top_pending=tuple(top_rows),
        recent_preemptions=tuple(preemption_events(snapshot)[:top]),
    )
