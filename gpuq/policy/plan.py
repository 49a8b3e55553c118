"""What the policy engine answers: a `Plan` with a `Candidate` (and its reason) per job examined."""

from __future__ import annotations

from typing import Any

import msgspec

from gpuq.model import PreviewRequest
from gpuq.policy.rules import Reason

__all__ = ["Candidate", "Plan", "Reason"]


class Candidate(msgspec.Struct, frozen=True):
    job_id: str
    reason: Reason
    detail: str
    nodes: tuple[str, ...]
    gpus: int
    gpu_seconds_lost: float
    cost: float
    effective_priority: float

    def to_dict(self) -> dict[str, Any]:
        if self.reason is Reason.CHOSEN:
            return {
                "id": self.job_id,
                "nodes": list(self.nodes),
                "gpus": self.gpus,
                "gpu_seconds_lost": round(self.gpu_seconds_lost, 3),
                "cost": round(self.cost, 3),
                "effective_priority": self.effective_priority,
                "reason": self.reason.value,
                "detail": self.detail,
            }
        return {"id": self.job_id, "reason": self.reason.value, "detail": self.detail}


class Plan(msgspec.Struct, frozen=True):
    request: PreviewRequest
    effective_priority: float
    feasible: bool
    fits_without_preemption: bool
    would_preempt: bool
    nodes: tuple[str, ...]
    victims: tuple[Candidate, ...]
    spared: tuple[Candidate, ...]
    freed_gpus: int
    total_cost: float
    blocked: str | None = None
    notes: tuple[str, ...] = ()

    @property
    def gpu_seconds_at_risk(self) -> float:
        """The GPU-seconds of work the chosen victims would lose."""
        return sum(v.gpu_seconds_lost for v in self.victims)

    def to_dict(self) -> dict[str, Any]:
        """The `gpuq preview -o json` document (stable interface)."""
        return {
            "would_preempt": self.would_preempt,
            "fits_without_preemption": self.fits_without_preemption,
            "feasible": self.feasible,
            "request": {
                "job_id": self.request.job_id,
                "gpus": self.request.gpus,
                "priority": self.request.priority,
                "priority_note": self.request.priority_note,
                "class": self.request.job_class,
                "tenant": self.request.tenant,
                "urgent": self.request.urgent,
                "effective_priority": self.effective_priority,
            },
            "nodes": list(self.nodes),
            "victims": [v.to_dict() for v in self.victims],
            "spared": [s.to_dict() for s in self.spared],
            "freed_gpus": self.freed_gpus,
            "total_cost": round(self.total_cost, 3),
            "blocked": self.blocked,
            "notes": list(self.notes),
        }
