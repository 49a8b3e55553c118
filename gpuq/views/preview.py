"""A preview: the victims gpuq's policy would choose for a request, why each candidate was chosen
or spared, the GPU-hours at risk, and beside it what the native scheduler would do.

The words and cells (`verdict`, `request_summary`, `victim_rows`, `spared_rows`, `native_rows`,
`native_summary`) are shared by `gpuq preview` and the console's Preview view, so both say the same.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from gpuq.model import PreviewRequest, Snapshot
from gpuq.service import Cluster, NativePlan, Preview
from gpuq.views.changes import format_number, format_priority

if TYPE_CHECKING:
    from gpuq.policy.plan import Candidate

__all__ = [
    "NativeRow",
    "PreviewView",
    "SparedRow",
    "Verdict",
    "VictimRow",
    "native_heading",
    "native_rows",
    "native_summary",
    "preview_view",
    "request_summary",
    "spared_rows",
    "verdict",
    "victim_rows",
    "what_differs",
]

#: PREVIEW_VICTIMS' cells: ID, NODES, GPUS, GPU-H LOST, COST, EFF PRIO
VictimRow = tuple[str, tuple[str, ...], str, str, str, str]
#: PREVIEW_SPARED's cells: ID, REASON, DETAIL
SparedRow = tuple[str, str, str]
#: PREVIEW_NATIVE's cells: ID, NODES, GPUS, PRIO, REASON
NativeRow = tuple[str, tuple[str, ...], str, str, str]


class PreviewView(msgspec.Struct, frozen=True):
    preview: Preview
    #: "job 1234" or "a 4-GPU request"
    who: str
    gpu_hours_at_risk: float
    #: where gpuq's plan and the native scheduler's disagree, in words (None: they agree, or no native)
    differs: str | None


def what_differs(preview: Preview) -> str | None:
    """Where the two plans pick different victims, and why: for a job only the native scheduler
    would preempt, why gpuq's policy spares it (exempt, preempted N times in 24 h, too young,
    the GPU-hours it would lose since its last checkpoint or start); for one only gpuq's policy
    would preempt, what the native scheduler says it does instead."""
    native = preview.native
    if native is None:
        return None
    ours = {v.job_id for v in preview.plan.victims}
    theirs = {v.id for v in native.victims}
    if ours == theirs:
        return None
    only_ours, only_theirs = sorted(ours - theirs), sorted(theirs - ours)
    spared = {s.job_id: s for s in preview.plan.spared}
    parts = []
    if only_theirs:
        also = ", ".join(_spared_why(j, spared.get(j)) for j in only_theirs)
        parts.append(f"the native scheduler would also preempt {also}")
    if only_ours:
        instead = f" (the native scheduler: {native.notes[0]})" if native.notes and not native.victims else ""
        parts.append(f"gpuq's policy would also preempt {', '.join(only_ours)}{instead}")
    return "; ".join(parts)


def _spared_why(job_id: str, spared: Candidate | None) -> str:
    if spared is None:
        return job_id
    why = [spared.detail or spared.reason.value]
    if spared.gpu_seconds_lost > 0:
        why.append(f"it would lose {spared.gpu_seconds_lost / 3600:.2f} GPU-hours since its last checkpoint or start")
    return f"{job_id} (gpuq spares it: {'; '.join(why)})"


def preview_view(cluster: Cluster, request: PreviewRequest, snapshot: Snapshot | None = None) -> PreviewView:
    preview = cluster.preview(request, snapshot)
    return from_preview(preview)


def from_preview(preview: Preview) -> PreviewView:
    request = preview.plan.request
    who = f"job {request.job_id}" if request.job_id else f"a {request.gpus}-GPU request"
    return PreviewView(preview, who, preview.plan.gpu_seconds_at_risk / 3600, what_differs(preview))


class Verdict(msgspec.Struct, frozen=True):
    """The preview's answer in one line: `head` (the part a front end colours) then `text`."""

    #: "never" (can never be met), "fits" (starts now), "preempts", "blocked" (not now)
    kind: str
    head: str
    text: str


def verdict(view: PreviewView) -> Verdict:
    plan, who = view.preview.plan, view.who
    if not plan.feasible:
        return Verdict("never", "never feasible:", f" {who} {plan.blocked or 'cannot be placed on this cluster'}")
    if plan.fits_without_preemption:
        return Verdict("fits", "fits without preemption", f": {who} can start now on {', '.join(plan.nodes)}")
    if plan.would_preempt:
        return Verdict(
            "preempts", f"would preempt {len(plan.victims)} job(s)",
            f" on {', '.join(plan.nodes)} for {who} (effective priority {format_priority(plan.effective_priority)}): "
            f"frees {plan.freed_gpus} GPUs, loses {view.gpu_hours_at_risk:.2f} GPU-hours, "
            f"cost {format_number(round(plan.total_cost, 2))}",
        )  # fmt: skip
    return Verdict("blocked", "would not preempt now", f": {plan.blocked or 'no eligible victims'}")


def request_summary(view: PreviewView) -> str:
    """What was asked: "job 1704: 4 GPUs, class batch, priority 114 (effective 120.5), tenant t"."""
    plan = view.preview.plan
    request = plan.request
    parts = [f"{request.gpus} GPU{'' if request.gpus == 1 else 's'}"]
    if request.job_class:
        parts.append(f"class {request.job_class}")
    if request.urgent:
        parts.append("urgent")
    priority = "the class's default priority" if request.priority is None else f"priority {request.priority}"
    parts.append(f"{priority} (effective {format_priority(plan.effective_priority)})")
    if request.tenant:
        parts.append(f"tenant {request.tenant}")
    return f"{view.who}: {', '.join(parts)}"


def request_notes(view: PreviewView) -> tuple[str, ...]:
    """Lines a preview says first, as the CLI's `preview` does: how the native scheduler's
    priority for the request was found (`PreviewRequest.priority_note`: what was estimated).
    Outside text, as given: a front end shows it as data (`visible`)."""
    note = view.preview.plan.request.priority_note
    return (f"note: {note}",) if note else ()


def victim_rows(view: PreviewView) -> list[VictimRow]:
    return [(v.job_id, tuple(v.nodes), str(v.gpus), f"{v.gpu_seconds_lost / 3600:.2f}",
             format_number(round(v.cost, 2)), format_priority(v.effective_priority))
            for v in view.preview.plan.victims]  # fmt: skip


def spared_rows(view: PreviewView) -> list[SparedRow]:
    return [(s.job_id, s.reason.value, s.detail) for s in view.preview.plan.spared]


def native_heading(native: NativePlan) -> str:
    """Whose plan it is: "native scheduler", or "native scheduler (Kueue)" where Kueue decides."""
    return f"native scheduler ({native.scheduler})" if native.scheduler else "native scheduler"


def native_summary(native: NativePlan) -> str:
    """The native plan in words: `would preempt 102 on gpu-02`, or `would not preempt`."""
    ids = ", ".join(v.id for v in native.victims) or "nothing"
    return (f"would {'preempt ' + ids if native.would_preempt else 'not preempt'}"
            + (f" on {', '.join(native.nodes)}" if native.nodes else ""))  # fmt: skip


def native_rows(native: NativePlan) -> list[NativeRow]:
    return [(v.id, tuple(v.nodes), str(v.gpus), "-" if v.priority is None else str(v.priority), v.reason)
            for v in native.victims]  # fmt: skip
