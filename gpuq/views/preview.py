"""A preview: the victims gpuq's policy would choose for a request, why each candidate was chosen
or spared, the GPU-hours at risk, and beside it what the native scheduler would do."""

from __future__ import annotations

from dataclasses import dataclass

from gpuq.model import PreviewRequest, Snapshot
from gpuq.service import Cluster, Preview

__all__ = ["PreviewView", "preview_view", "what_differs"]


@dataclass(frozen=True, slots=True)
class PreviewView:
    preview: Preview
    #: "job 1234" or "a 4-GPU request"
    who: str
    gpu_hours_at_risk: float
    #: where gpuq's plan and the native scheduler's disagree, in words (None: they agree, or no native)
    differs: str | None


def what_differs(preview: Preview) -> str | None:
    native = preview.native
    if native is None:
        return None
    ours = {v.job_id for v in preview.plan.victims}
    theirs = {v.id for v in native.victims}
    if ours == theirs:
        return None
    only_ours, only_theirs = sorted(ours - theirs), sorted(theirs - ours)
    parts = []
    if only_theirs:
        parts.append(f"the native scheduler would also preempt {', '.join(only_theirs)}")
    if only_ours:
        parts.append(f"gpuq's policy would also preempt {', '.join(only_ours)}")
    return "; ".join(parts)


def preview_view(cluster: Cluster, request: PreviewRequest, snapshot: Snapshot | None = None) -> PreviewView:
    preview = cluster.preview(request, snapshot)
    return from_preview(preview)


def from_preview(preview: Preview) -> PreviewView:
    request = preview.plan.request
    who = f"job {request.job_id}" if request.job_id else f"a {request.gpus}-GPU request"
    return PreviewView(preview, who, preview.plan.gpu_seconds_at_risk / 3600, what_differs(preview))
