"""A `gpuq.snapshot/v1` history as a trace: jobs followed across snapshots taken over time.

The snapshots come from a directory of snapshot files (read in file-name order, each decoded by
the model's own codec, `gpuq.model.codec.read_snapshot_file`), from one snapshot file, or from
an incident recording's frames (`gpuq.service.tracing` opens those). Each job is followed by
its id:

- submit: the job's `submit_time`; start: its `start_time`, else the first snapshot that saw
  it holding GPUs (running, suspended, completing);
- end: its `end_time` once it is seen finished, else the last snapshot that saw it (a job that
  leaves the listing ended by then); duration: end − start (0 for a job never started, unless
  the snapshot carries its `duration_s`);
- a job still listed by the last snapshot ends there with `end_time` None and its last state;
- class, priority, user, tenant, name, GPUs and checkpoint interval: as last seen.

Jobs are yielded as they end, so the trace is in order of ending, not of submission. Only the
jobs still live are held, plus the ids of finished jobs the latest snapshot still lists (so a
finished job that lingers in the listing is yielded once).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from gpuq.errors import BadInput, NotFound
from gpuq.model import ACTIVE_STATES, Job, JobState, Snapshot
from gpuq.model.codec import read_snapshot_file
from gpuq.textsafe import visible
from gpuq.trace.record import TraceError, TraceJob, trace_job_of

__all__ = ["FINISHED_STATES", "follow_snapshots", "read_snapshots", "snapshot_files"]

#: states after which a job does not run again
FINISHED_STATES = frozenset({JobState.COMPLETED, JobState.FAILED, JobState.CANCELLED, JobState.TIMEOUT})


@dataclass(slots=True)
class _Seen:
    job: Job
    first_running: float | None
    last_seen: float


def snapshot_files(path: str) -> list[Path]:
    """The snapshot files of `path` (a directory: its ``*.json`` files in name order; a file:
    itself). NotFound for a missing path; BadInput for a directory without any."""
    source = Path(path)
    if source.is_dir():
        try:
            files = sorted(p for p in source.iterdir() if p.suffix == ".json" and p.is_file())
        except OSError as exc:
            raise BadInput(f"{visible(path)}: cannot list the snapshots ({exc.strerror})") from None
        if not files:
            raise BadInput(f"{visible(path)}: no snapshot files (*.json) here")
        return files
    if not os.path.exists(path):
        raise NotFound(f"{visible(path)}: no such trace file or directory")
    return [source]


def read_snapshots(path: str) -> Iterator[TraceJob]:
    """The jobs of a snapshot directory (or one snapshot file) followed across its snapshots."""
    files = snapshot_files(path)
    return follow_snapshots((read_snapshot_file(f) for f in files), path)


def follow_snapshots(snapshots: Iterable[Snapshot], source: str, *, id_prefix: str = "") -> Iterator[TraceJob]:
    """The jobs of `snapshots` (oldest first), each yielded once, as it ends (module docstring).
    TraceError when a snapshot was taken before the one before it (the `line` is its index)."""
    live: dict[str, _Seen] = {}
    finished: set[str] = set()  # finished jobs the latest snapshot still lists
    previous: float | None = None
    active, done = ACTIVE_STATES, FINISHED_STATES
    for index, snapshot in enumerate(snapshots, 1):
        now = snapshot.taken_at.timestamp()
        if previous is not None and now < previous:
            raise TraceError(source, index, f"snapshot {index} was taken before the one before it "
                             "(snapshots must be in time order: name the files so)")  # fmt: skip
        previous = now
        listed: set[str] = set()
        still_finished: set[str] = set()
        for job in snapshot.jobs:
            jid = job.id
            listed.add(jid)
            if jid in finished:
                still_finished.add(jid)
                continue
            seen = live.get(jid)
            running = now if job.state in active else None
            if seen is None:
                seen = live[jid] = _Seen(job, running, now)
            else:
                seen.job, seen.last_seen = job, now
                if seen.first_running is None:
                    seen.first_running = running
            if job.state in done:
                del live[jid]
                still_finished.add(jid)
                yield _trace_job(seen, id_prefix, ended=True)
        for jid in [j for j in live if j not in listed]:
            yield _trace_job(live.pop(jid), id_prefix, ended=True)
        finished = still_finished
    for seen in live.values():
        yield _trace_job(seen, id_prefix, ended=False)


def _trace_job(seen: _Seen, prefix: str, *, ended: bool) -> TraceJob:
    job = seen.job
    start = job.start_time.timestamp() if job.start_time is not None else seen.first_running
    end: float | None
    if job.end_time is not None:
        end = job.end_time.timestamp()
    elif start is not None:
        end = max(seen.last_seen, start)
    else:
        end = None
    duration = max(0.0, end - start) if start is not None and end is not None else job.duration_s or 0.0
    checkpoints = (job.last_checkpoint_time.timestamp(),) if job.last_checkpoint_time is not None else ()
    return trace_job_of(job, duration_s=duration, start=start, end=end if ended or job.end_time is not None else None,
                        id_prefix=prefix, checkpoints=checkpoints)  # fmt: skip
