"""A cache of sacct records by time window, so a refresh does not re-read the whole history.

The first read covers ``[now - window, now]``; later reads only ``[last read - overlap, now]``
and replace what they cover. Records whose run ended before the window are dropped. A read
younger than ``ttl_s`` is reused without asking sacct at all. ``to_json``/``load_json`` let the
backend keep the cache between gpuq invocations (see `diskcache`).

An older read may still stand in for a new one when the caller shows only the live queue
(`stand_in_reason`): what sacct adds to a queued job (`merge.merge_history`) is its original
submit time and the end times of its preempted/requeued runs, and a job only gets such a run by
being requeued (its RestartCnt grows) or, preempted by cancelling, passes COMPLETING on its way
out. So with every job's RestartCnt no higher than the cached read accounted for
(`note_queue`), and every suspended/completing job already shown so by the cached read, a new
read would change nothing the live queue shows.

Thread safety: a snapshot may refresh the cache while an action, in another thread, expires it.
Every method takes the cache's lock; `refresh` releases it while sacct runs, and a read that an
`expire` overtook keeps its records but leaves the cache expired, so the change the action made
is still asked for at the next refresh.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from gpuq.backends.slurm.sacct import SACCT_FIELDS, SACCT_FIELDS_QOSRAW, AcctRecord
from gpuq.model import Job, JobState

__all__ = ["HistoryCache", "sacct_args"]

#: Jobs can reach slurmdbd a few seconds late; re-read this much of the last window.
OVERLAP_S = 600.0

#: States in which squeue's SubmitTime is the time of the job's last requeue, if any (Slurm resets
#: it when a requeued job has finished COMPLETING; RestartCnt grows at the requeue itself).
_SUBMIT_RESET = frozenset({JobState.PENDING, JobState.RUNNING, JobState.SUSPENDED})


def sacct_args(start: float, end: float | None = None, *, qos_ids: bool = False) -> list[str]:
    """``sacct`` for all users' allocations (no steps), every run of requeued jobs (-D); with
    ``qos_ids`` the QOS column is QOSRAW (one slurmdbd round trip fewer, see `SACCT_FIELDS_QOSRAW`)."""
    fmt = "%Y-%m-%dT%H:%M:%S"  # sacct reads local time
    args = ["sacct", "-n", "-P", "-X", "-D", "-a", "-S", datetime.fromtimestamp(start).strftime(fmt)]
    args += ["-E", datetime.fromtimestamp(end).strftime(fmt) if end else "now"]
    args += ["-o", ",".join(SACCT_FIELDS_QOSRAW if qos_ids else SACCT_FIELDS)]
    return args


class HistoryCache:
    def __init__(self, window_s: float, ttl_s: float = 0.0) -> None:
        self.window_s = window_s
        self.ttl_s = ttl_s
        self.read_until: float | None = None
        #: when sacct was last asked; None after `expire` (the next refresh asks, incrementally)
        self.fresh_at: float | None = None
        self._records: dict[tuple[str, float | None], AcctRecord] = {}
        self.reads = 0  # how many sacct calls were made (tests check the cache works)
        #: RestartCnt per queued job (those above 0) that the read at `accounted_at` holds the
        #: requeued runs of (`note_queue`); None: no queue read recorded with this sacct read
        self.accounted: dict[str, int] | None = None
        self.accounted_at: float | None = None
        self._lock = threading.Lock()
        #: how many times `expire` was called: a read it overtook does not count as fresh
        self._expiries = 0

    def due(self, now: float) -> bool:
        """Whether `refresh` at ``now`` would ask sacct (no read yet, expired, or past the TTL)."""
        with self._lock:
            return self._due(now)

    def _due(self, now: float) -> bool:
        return not (self.read_until is not None and self.fresh_at is not None and 0 <= now - self.fresh_at < self.ttl_s)

    def records(self) -> list[AcctRecord]:
        """The cached records, as the last `refresh` returned them (no sacct call)."""
        with self._lock:
            return list(self._records.values())

    def note_queue(self, jobs: Sequence[Job], restarts: Mapping[str, int], *, read_at: float | None = None) -> None:
        """Record, with the read just made, the RestartCnt it accounts for per queued job (squeue's
        ``jobs``/``restarts`` read beside it). A count is taken as accounted for when the read holds
        that many ended runs of the job, or when the job's last requeue (its reset SubmitTime) lies
        more than `OVERLAP_S` before the read (slurmdbd had it, or its runs are older than the
        window); otherwise (a requeue slurmdbd had not recorded yet, or one in the middle of
        COMPLETING) only the ended runs the read holds count, so the next queue read waits for sacct.

        ``read_at``: only if the latest read is the one made at that time and nothing was recorded
        for it yet (a snapshot records the queue read beside its own sacct read, no other)."""
        with self._lock:
            if read_at is not None and (self.read_until != read_at or self.accounted_at == read_at):
                return
            self._note_queue(jobs, restarts)

    def _note_queue(self, jobs: Sequence[Job], restarts: Mapping[str, int]) -> None:
        if self.read_until is None:
            return
        settled = self.read_until - OVERLAP_S
        wanted = {jid for jid, count in restarts.items() if count > 0}
        ended: dict[str, int] = {}
        if wanted:
            for rec in self._records.values():
                if rec.end is not None and rec.id in wanted:
                    ended[rec.id] = ended.get(rec.id, 0) + 1
        accounted: dict[str, int] = {}
        for job in jobs:
            count = restarts.get(job.id, 0)
            if count <= 0:
                continue
            requeued_at = job.submit_time.timestamp()
            if ended.get(job.id, 0) >= count or (job.state in _SUBMIT_RESET and 0 < requeued_at < settled):
                accounted[job.id] = count
            elif ended.get(job.id):
                accounted[job.id] = ended[job.id]
        self.accounted = accounted
        self.accounted_at = self.read_until

    def stand_in_reason(
        self, jobs: Sequence[Job], restarts: Mapping[str, int], now: float, max_age_s: float
    ) -> str | None:
        """None when the cached records can stand in for the sacct read that is due, for a caller
        that shows only the queued jobs (not finished ones, not the preemption ledger); else why not.

        Every queued job must have a RestartCnt no higher than the cached read accounted for (0 for
        a job it did not see), a suspended job must be suspended in the cached read, and a
        completing job's last run must have ended there; the cached read must be at most
        ``max_age_s`` old and not expired by an action."""
        with self._lock:
            return self._stand_in_reason(jobs, restarts, now, max_age_s)

    def _stand_in_reason(
        self, jobs: Sequence[Job], restarts: Mapping[str, int], now: float, max_age_s: float
    ) -> str | None:
        if self.read_until is None:
            return "no sacct read yet"
        if self.fresh_at is None:
            return "an action since the cached sacct read"
        if self.accounted is None or self.accounted_at != self.read_until:
            return "no queue read recorded with the cached sacct read"
        age = now - self.read_until
        if not 0 <= age <= max_age_s:
            return f"the cached sacct read is {age:.0f}s old (history_max_age_s={max_age_s:g})"
        accounted = self.accounted
        for jid, count in restarts.items():
            if count > accounted.get(jid, 0):
                return f"job {jid} has RestartCnt {count}, the cached sacct read accounts for {accounted.get(jid, 0)}"
        latest: dict[str, AcctRecord] | None = None
        for job in jobs:
            state = job.state
            if state is not JobState.SUSPENDED and state is not JobState.COMPLETING:
                continue
            if latest is None:
                latest = self._latest_runs()
            rec = latest.get(job.id)
            if state is JobState.SUSPENDED and (rec is None or rec.state is not JobState.SUSPENDED):
                return f"job {job.id} is suspended, which the cached sacct read does not show"
            if state is JobState.COMPLETING and (rec is None or rec.end is None):
                return f"job {job.id} is completing, and the cached sacct read has no end for its run"
        return None

    def _latest_runs(self) -> dict[str, AcctRecord]:
        """Each job's last run in the cache (a run not started yet counts as the last)."""
        latest: dict[str, AcctRecord] = {}
        for rec in self._records.values():
            have = latest.get(rec.id)
            if have is None or (have.start is not None and (rec.start is None or rec.start > have.start)):
                latest[rec.id] = rec
        return latest

    def refresh(self, now: float, fetch: Callable[[float], Iterable[AcctRecord]]) -> list[AcctRecord]:
        """The records of the window at ``now``, asking sacct (``fetch(start)``) only when `due`.
        Nothing changes when ``fetch`` raises (a cancelled read leaves the cache as it was).
        ``fetch`` runs outside the lock: an action may `expire` the cache meanwhile."""
        with self._lock:
            if not self._due(now):
                return list(self._records.values())
            start = now - self.window_s if self.read_until is None else self.read_until - OVERLAP_S
            expiries = self._expiries
        fresh = list(fetch(start))
        with self._lock:
            self.reads += 1
            if self.read_until is not None and self.read_until > now:
                return list(self._records.values())  # a later read, from the same start, won the race
            self._merge(now, fresh)
            # An action expired the cache while sacct ran: its change may not be in this read.
            self.fresh_at = now if self._expiries == expiries else None
            return list(self._records.values())

    def _merge(self, now: float, fresh: list[AcctRecord]) -> None:
        seen = {r.id for r in fresh}
        # A run that was pending at the last read may have started since: drop old placeholders.
        for key in [k for k in self._records if k[0] in seen and k[1] is None]:
            del self._records[key]
        for rec in fresh:
            self._records[(rec.id, rec.start)] = rec
        horizon = now - self.window_s
        for key in [k for k, r in self._records.items() if r.end is not None and r.end < horizon]:
            del self._records[key]
        self.read_until = now
        self.accounted = self.accounted_at = None  # until `note_queue` says what this read accounts for

    def expire(self) -> None:
        """Make the next `refresh` ask sacct (still only since the last read) despite the TTL, also
        when a read under way when this is called finishes after it."""
        with self._lock:
            self.fresh_at = None
            self._expiries += 1

    # ------------------------------------------------------------------ persistence
    def to_json(self) -> dict[str, Any]:
        """A JSON-able form: the window, when it was read, the records (states by value), and the
        restart counts that read accounts for (`note_queue`), with the read they belong to."""
        with self._lock:
            return self._to_json()

    def _to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "window_s": self.window_s,
            "read_until": self.read_until,
            "fresh_at": self.fresh_at,
            "records": [[*r[:8], r.state.value, *r[9:]] for r in self._records.values()],
        }
        if self.accounted is not None:
            data["accounted"] = {"at": self.accounted_at, "restarts": dict(self.accounted)}
        return data

    def load_json(self, data: Any) -> bool:
        """Adopt a `to_json` form if it covers at least this cache's window; False (and no change)
        when it does not, or when it is not that form (a corrupt cache is just re-read)."""
        try:
            read_until = data["read_until"]
            fresh_at = data["fresh_at"]
            if float(data["window_s"]) < self.window_s or not isinstance(read_until, int | float):
                return False
            if fresh_at is not None and not isinstance(fresh_at, int | float):
                return False
            records: dict[tuple[str, float | None], AcctRecord] = {}
            width = len(AcctRecord._fields)
            for row in data["records"]:
                if not isinstance(row, list) or len(row) != width:
                    return False
                row[8] = JobState(row[8])
                rec = AcctRecord(*row)
                records[(rec.id, rec.start)] = rec
        except (KeyError, TypeError, ValueError, IndexError):
            return False
        with self._lock:
            self.read_until = float(read_until)
            self.fresh_at = None if fresh_at is None else float(fresh_at)
            self._records = records
            self.accounted, self.accounted_at = _accounted_from(data.get("accounted"))
        return True


def _accounted_from(raw: Any) -> tuple[dict[str, int] | None, float | None]:
    """The ``accounted`` part of `HistoryCache.to_json`; (None, None) when missing or malformed
    (the next queue read then waits for sacct, as without it)."""
    if not isinstance(raw, dict):
        return None, None
    at, counts = raw.get("at"), raw.get("restarts")
    if not isinstance(at, int | float) or isinstance(at, bool) or not isinstance(counts, dict):
        return None, None
    out: dict[str, int] = {}
    for jid, count in counts.items():
        if not isinstance(jid, str) or not isinstance(count, int) or isinstance(count, bool):
            return None, None
        out[jid] = count
    return out, float(at)
