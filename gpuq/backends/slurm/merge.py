"""Join the live queue with accounting: original submit times, preemption times, the ledger,
and finished jobs (for SLA percentiles) that squeue no longer shows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from msgspec.structs import replace

from gpuq.backends.slurm.jobs import NO_ALLOCATION, ClassKey, class_of
from gpuq.backends.slurm.sacct import AcctRecord
from gpuq.backends.slurm.values import moment
from gpuq.model import Job, JobState, PreemptionEvent

__all__ = ["merge_history"]

_FINAL = frozenset({JobState.COMPLETED, JobState.FAILED, JobState.CANCELLED, JobState.PREEMPTED, JobState.TIMEOUT})


def _at(epoch: float) -> datetime:
    found = moment(epoch)
    assert found is not None
    return found


def merge_history(
    jobs: list[Job],
    records: Iterable[AcctRecord],
    class_key: ClassKey,
    preempt_modes: Mapping[str, str] | None = None,
) -> tuple[list[Job], list[PreemptionEvent]]:
    """Return the queue's jobs enriched from sacct, plus finished jobs, plus preemption events."""
    runs: dict[str, list[AcctRecord]] = {}
    for rec in records:
        runs.setdefault(rec.id, []).append(rec)
    events: list[PreemptionEvent] = []
    for jid, recs in runs.items():
        recs.sort(key=lambda r: r.start or r.submit or 0.0)
        for rec in recs:
            if rec.preempted and rec.end is not None:
                lost = rec.gpus * max(0.0, rec.end - (rec.start or rec.end))
                mode = "requeue" if rec.raw_state.startswith(("PREEMPTED", "REQUEUED")) else "cancel"
                if rec.raw_state.startswith("PREEMPTED") and preempt_modes:
                    mode = preempt_modes.get(rec.qos or rec.partition or "", mode)
                events.append(PreemptionEvent(_at(rec.end), jid, None, rec.gpus, lost, mode, rec.raw_state))
    out: list[Job] = []
    live = set()
    for job in jobs:
        live.add(job.id)
        recs = runs.get(job.id, [])
        if not recs:
            out.append(job)
            continue
        submits = [r.submit for r in recs if r.submit is not None]
        times = {_at(t) for t in {r.end for r in recs if r.preempted and r.end is not None}}
        changes: dict[str, Any] = {}
        if submits and min(submits) < job.submit_time.timestamp():
            # A requeue reset squeue's SubmitTime; sacct's first run keeps the original. EligibleTime
            # stays squeue's: the start of the current wait (the run before it is not queue time).
            changes["submit_time"] = _at(min(submits))
        if times:
            changes["preemption_times"] = tuple(sorted(set(job.preemption_times) | times))
        out.append(replace(job, **changes) if changes else job)
    for jid, recs in runs.items():
        if jid in live:
            continue
        last = recs[-1]
        if last.state not in _FINAL:
            continue  # still queued elsewhere (or not visible in squeue): not a finished job
        ended = tuple(sorted({_at(r.end) for r in recs if r.preempted and r.end is not None}))
        first = recs[0]
        # The SLA wait of a finished job: first eligibility to its first start.
        started = next((r for r in recs if r.start is not None), None)
        out.append(
            Job(
                id=jid,
                name=last.name,
                user=last.user,
                tenant=last.account or last.user,
                job_class=class_of(class_key, last.qos, last.partition),
                priority=last.priority,
                state=last.state,
                submit_time=_at(first.submit or last.submit or 0.0),
                eligible_time=moment(first.eligible),
                start_time=moment(started.start) if started else None,
                end_time=moment(last.end),
                gpus=last.gpus,
                allocation=NO_ALLOCATION,
                preemption_times=ended,
                last_checkpoint_time=None,
                exempt_until=None,
                account=last.account,
                partition=last.partition,
                qos=last.qos,
            )
        )
    return out, sorted(events, key=lambda e: e.time)
