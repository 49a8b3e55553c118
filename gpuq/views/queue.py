"""The queue: one row per job with its wait, effective priority, preemption counts and SLA status."""

from __future__ import annotations

import heapq
import math
import operator
import re
import sys
from collections.abc import Callable, Sequence
from datetime import datetime
from enum import StrEnum
from functools import partial
from itertools import compress, islice
from typing import Any, NamedTuple

import msgspec

from gpuq.errors import BadInput
from gpuq.model import DAY_S, QUEUED_STATES, Job, JobClass, JobState, Snapshot, job_id_key
from gpuq.policy.kernel import effective_priority_of
from gpuq.policy.order import tie_field
from gpuq.service import Cluster
from gpuq.sla import AT_RISK_SHARE
from gpuq.views.pacing import no_pause, paced

__all__ = [
    "DEFAULT_SORT",
    "SLURM_STATES",
    "SORT_KEYS",
    "STATE_NAMES",
    "QueueFilter",
    "QueueRow",
    "QueueView",
    "SlaStatus",
    "SortKey",
    "first_rows",
    "parse_sort",
    "parse_states",
    "queue_view",
    "sla_status",
    "sort_rows",
]

STATE_NAMES = tuple(s.value for s in JobState)
#: each state's place in `STATE_NAMES` (the console sorts 200,000 rows by it on every refresh: a
#: lookup, not a search of the names through the enum's `value` property)
_STATE_RANK = {state: i for i, state in enumerate(JobState)}

_P, _R, _S, _CG = JobState.PENDING, JobState.RUNNING, JobState.SUSPENDED, JobState.COMPLETING
_CD, _CA, _F, _PR, _TO = JobState.COMPLETED, JobState.CANCELLED, JobState.FAILED, JobState.PREEMPTED, JobState.TIMEOUT
#: What `--state`/`-t` takes besides gpuq's names, as squeue's `-t` does: Slurm's compact codes
#: (PD, R, S, CG, ...) and its state names, read as gpuq/backends/slurm/jobs.py reads them from
#: Slurm (a view cannot import a backend; tests/views/test_queue_states.py checks the two agree).
SLURM_STATES: dict[str, JobState] = {
    "PD": _P, "PENDING": _P, "RQ": _P, "REQUEUED": _P, "RH": _P, "REQUEUE_HOLD": _P, "RF": _P, "REQUEUE_FED": _P,
    "SE": _P, "SPECIAL_EXIT": _P, "RESV_DEL_HOLD": _P,
    "R": _R, "RUNNING": _R, "CF": _R, "CONFIGURING": _R, "RS": _R, "RESIZING": _R,
    "S": _S, "SUSPENDED": _S, "ST": _S, "STOPPED": _S,
    "CG": _CG, "COMPLETING": _CG, "SI": _CG, "SIGNALING": _CG, "SO": _CG, "STAGE_OUT": _CG,
    "CD": _CD, "COMPLETED": _CD,
    "CA": _CA, "CANCELLED": _CA, "RV": _CA, "REVOKED": _CA,
    "F": _F, "FAILED": _F, "NF": _F, "NODE_FAIL": _F, "BF": _F, "BOOT_FAIL": _F, "OOM": _F, "OUT_OF_MEMORY": _F,
    "PR": _PR, "PREEMPTED": _PR,
    "TO": _TO, "TIMEOUT": _TO, "DL": _TO, "DEADLINE": _TO,
}  # fmt: skip


class SlaStatus(StrEnum):
    """How a job's wait stands against its class's P95 target."""

    OK = "ok"
    AT_RISK = "at_risk"
    BREACH = "breach"
    NONE = "none"  # the class has no target, or the job never waited


def sla_status(wait_s: float | None, target_p95_s: float | None) -> SlaStatus:
    if wait_s is None or target_p95_s is None:
        return SlaStatus.NONE
    if wait_s > target_p95_s:
        return SlaStatus.BREACH
    if wait_s >= AT_RISK_SHARE * target_p95_s:
        return SlaStatus.AT_RISK
    return SlaStatus.OK


class QueueRow(msgspec.Struct, frozen=True, gc=False):
    """A job with what every format shows beside it. 200,000 are built per call: a struct the
    cyclic garbage collector does not track (it refers only to an untracked `Job` and plain
    values), so the full collections those allocations would set off stay rare and short."""

    job: Job
    wait_s: float | None
    effective_priority: float
    preemptions: int
    preemptions_24h: int
    sla: SlaStatus
    #: what breaks ties of effective priority in its cluster's queue (`gpuq.policy.order.tie_time`:
    #: the submit time on Slurm, else the time it has been queued since); rows of several clusters
    #: sorted together keep each their own
    tie_time: datetime


class QueueFilter(msgspec.Struct, frozen=True):
    users: frozenset[str] = frozenset()
    tenants: frozenset[str] = frozenset()
    classes: frozenset[str] = frozenset()
    #: None: every state
    states: frozenset[JobState] | None = QUEUED_STATES
    min_gpus: int = 0
    sort: tuple[SortKey, ...] = ()  # () = DEFAULT_SORT
    reverse: bool = False

    @property
    def only_queued(self) -> bool:
        """Whether the rows are all queued jobs (no finished ones), which needs no ledger."""
        return self.states is not None and self.states <= QUEUED_STATES


class QueueView(msgspec.Struct, frozen=True):
    cluster: str
    taken_at: datetime
    now: float
    rows: list[QueueRow]
    #: rows before a limit was applied
    total: int


def parse_states(values: Sequence[str]) -> frozenset[JobState] | None:
    """``--state`` values (comma lists allowed, any case) -> states; none given: the queued ones;
    `all`: None. A value is a gpuq state name or one of Slurm's (`SLURM_STATES`: PD, R, S, CG…)."""
    names = [v.strip() for value in values for v in value.split(",") if v.strip()]
    if not names:
        return QUEUED_STATES  # what is waiting or holding GPUs
    found: set[JobState] = set()
    for name in names:
        lower = name.lower()
        if lower == "all":
            return None
        state = JobState(lower) if lower in STATE_NAMES else SLURM_STATES.get(name.upper())
        if state is None:
            raise BadInput(
                f"--state: unknown state {name!r} (one of {', '.join(STATE_NAMES)}, or all; "
                "or a Slurm code such as PD, R, S, CG)"
            )
        found.add(state)
    return frozenset(found)


class SortKey(NamedTuple):
    """One `--sort` key: a name of `SORT_KEYS`, ascending unless written `-name`."""

    name: str
    descending: bool


#: the queue's order unless --sort says otherwise: highest effective priority first
DEFAULT_SORT = (SortKey("effective", True),)


def parse_sort(values: Sequence[str]) -> tuple[SortKey, ...]:
    """``--sort`` values, comma lists or repeated (`class,-wait`): `key` or `+key` ascending,
    `-key` descending (squeue's `--sort`); none given: `DEFAULT_SORT`."""
    keys: list[SortKey] = []
    for value in values:
        for raw in value.split(","):
            text = raw.strip()
            if not text:
                continue
            descending = text.startswith("-")
            name = text[1:].strip() if text[:1] in "+-" else text
            if name not in SORT_KEYS:
                raise BadInput(
                    f"--sort: unknown key {text!r} (one of {', '.join(sorted(SORT_KEYS))}; -KEY for descending)"
                )
            keys.append(SortKey(name, descending))
    return tuple(keys) or DEFAULT_SORT


#: (in C: the console sorts 200,000 rows by it on every refresh)
_submit: Callable[[QueueRow], datetime] = operator.attrgetter("job.submit_time")
#: a row's tie time (kept on the row: read through the job, a property, it cost a third of a sort)
_tie: Callable[[QueueRow], datetime] = operator.attrgetter("tie_time")
_job_id: Callable[[QueueRow], str] = operator.attrgetter("job.id")


def _id_key(row: QueueRow) -> Any:
    return job_id_key(row.job.id)


def _id_number(row: QueueRow) -> int:
    return int(row.job.id)


def _class_rank(ranks: dict[str, int]) -> Callable[[QueueRow], Any]:
    """Sorts classes by rank: the highest priority first (urgent before batch), then by name."""

    def key(row: QueueRow) -> tuple[int, str]:
        name = row.job.job_class
        return -ranks.get(name, 0), name

    return key


#: `--sort` keys, each a plain value per row (one stable pass per key, no tuple per row: the
#: default order is two passes over 200,000 rows). "class" is filled in per snapshot (class rank).
SORT_KEYS: dict[str, Callable[[QueueRow], Any]] = {
    "effective": operator.attrgetter("effective_priority"),
    "priority": operator.attrgetter("job.priority"),
    "wait": lambda r: r.wait_s if r.wait_s is not None else -1.0,
    "gpus": operator.attrgetter("job.gpus"),
    "submit": _submit,
    "preemptions": lambda r: (r.preemptions_24h, r.preemptions),
    "id": _id_key,
    "user": operator.attrgetter("job.user"),
    "tenant": operator.attrgetter("job.tenant"),
    "class": _class_rank({}),
    "state": lambda r: _STATE_RANK[r.job.state],
}


def sort_rows(
    rows: list[QueueRow], keys: Sequence[SortKey] = DEFAULT_SORT, reverse: bool = False,
    class_ranks: dict[str, int] | None = None, pause: Callable[[], None] = no_pause,
) -> None:  # fmt: skip
    """Sort by `keys` in turn; ties go to the earlier tie time (`QueueRow.tie_time`), then gpuq's
    job-id order, never to the rows' order.
    `reverse` turns every direction round (ties included). `class_ranks`: class -> priority.
    `pause` is called between the passes (the console's worker steps aside there)."""
    # One stable pass per key, the least significant first: a quicker form of one sort by the
    # key (*keys, tie time, job_id_key), which under the default keys is the queue's order,
    # `gpuq.policy.order.pending_order` (tests/views/test_queue_order.py checks they agree).
    sort = rows.sort if pause is no_pause else partial(_paced_sort, rows, pause=pause)
    _sort_by_tie(rows, reverse, sort, pause)
    for name, descending in reversed(keys or DEFAULT_SORT):
        pause()
        key = _class_rank(class_ranks or {}) if name == "class" else SORT_KEYS[name]
        sort(key=key, reverse=descending != reverse)


#: the most digits of an id that `_sort_by_tie` sorts as a number: below 2**53, exact as the
#: floats `_paced_sort` sorts
_PLAIN_DIGITS = 15


def _plain_numbers(ids: list[str]) -> bool:
    """Whether every id is a plain number (ASCII digits, no leading zero, at most `_PLAIN_DIGITS`),
    which sorts as the number it is in `job_id_key`'s order. String methods over one joined text:
    C loops (a regular expression over 200,000 ids cost four times as much)."""
    if not ids:
        return True
    if min(map(len, ids)) == 0 or max(map(len, ids)) > _PLAIN_DIGITS:
        return False
    digits = "".join(ids)
    if not (digits.isascii() and digits.isdigit()):
        return False
    lines = "\n".join(ids)  # (only digits in it: the lines are the ids)
    return lines[0] != "0" and "\n0" not in lines


def _sort_by_tie(rows: list[QueueRow], reverse: bool, sort: Callable[..., None],
                 pause: Callable[[], None]) -> None:  # fmt: skip
    """`sort` by the tie time, then gpuq's job-id order (`job_id_key`), without a key
    per row where it can (200,000 keys cost more than the rest of the sort)."""
    ids = list(map(_job_id, rows))
    if _plain_numbers(ids):
        # Plain numbers (Slurm's, most snapshots'): by the number first, the same order; rows
        # already in it (a snapshot lists its jobs by id, up or down) are left or turned round.
        numbers = list(map(int, ids))
        if all(map(operator.lt if reverse else operator.gt, numbers, islice(numbers, 1, None))):
            rows.reverse()  # (distinct ids: the reverse of one order is the other)
        elif not all(map(operator.gt if reverse else operator.lt, numbers, islice(numbers, 1, None))):
            sort(key=_id_number, reverse=reverse)
        pause()
        sort(key=_tie, reverse=reverse)
        return
    # Other ids (Kubernetes' namespace/name): by the tie time, then only the runs of rows of one
    # tie time put in id order (most are one row long).
    sort(key=_tie, reverse=reverse)
    times = list(map(_tie, rows))
    runs: list[list[int]] = []
    for i in compress(range(1, len(rows)), map(operator.eq, times, islice(times, 1, None))):
        if runs and runs[-1][1] == i:
            runs[-1][1] = i + 1
        else:
            runs.append([i - 1, i + 1])
    pause()
    for first, end in runs:
        rows[first:end] = sorted(rows[first:end], key=_id_text, reverse=reverse)


_DIGIT_RUNS = re.compile(r"(\d+)")


def _id_text(row: QueueRow) -> str:
    """`job_id_key`'s order as one text (no tuples: nothing the cyclic collector tracks): each
    number as its digit count and digits, each text after \\x02 and ended by NUL (with NUL and
    \\x01 in it escaped), then NUL and the id. tests/views/test_queue_sort.py checks it against
    `job_id_key`."""
    job_id = row.job.id
    parts = []
    for chunk in _DIGIT_RUNS.split(job_id):
        if not chunk:
            continue
        if chunk.isdecimal():
            digits = str(int(chunk)) if len(chunk) < 300 else ""  # ("": too long, after every number)
            parts.append(f"\x01{chr(len(digits) or 300)}{digits}")
        else:
            if "\x00" in chunk or "\x01" in chunk:
                chunk = chunk.replace("\x01", "\x01\x02").replace("\x00", "\x01\x01")
            parts.append(f"\x02{chunk}\x00")
    parts.append(f"\x00{job_id}")
    return "".join(parts)


#: rows above which `_paced_sort` sorts aside (below, one sort is shorter than a frame)
SORT_CHUNK = 16384
#: rows whose keys `_paced_sort` computes between two pauses
KEY_STEP = 4096


def _paced_sort(rows: list[QueueRow], key: Callable[[QueueRow], Any], reverse: bool,
                pause: Callable[[], None]) -> None:  # fmt: skip
    """`rows.sort(key=key, reverse=reverse)` for a caller that must not hold the interpreter
    long (the console's worker), once numpy is imported: the keys computed `KEY_STEP` rows at a time with `pause`
    between, as numbers (a datetime as its timestamp, a text or tuple as its rank among the
    distinct values), sorted by numpy's stable argsort, which lets other threads run while it
    sorts, and the rows put in that order a step at a time. Stable as `list.sort` is, descending
    included: equal keys keep their order."""
    n = len(rows)
    np = sys.modules.get("numpy")
    if n <= SORT_CHUNK or np is None:
        # (numpy not imported yet: importing it here would hold up the console's first frame,
        # and the console imports it once that frame is out; the CLI never needs it)
        rows.sort(key=key, reverse=reverse)
        return

    values = np.empty(n, dtype=np.float64)
    others: list[Any] = []  # keys that are no numbers, ranked below
    for start in range(0, n, KEY_STEP):
        chunk = list(map(key, rows[start : start + KEY_STEP]))
        if isinstance(chunk[0], datetime):
            chunk = [k.timestamp() for k in chunk]
        if isinstance(chunk[0], int | float):
            values[start : start + len(chunk)] = chunk
        else:
            others.extend(chunk)
        pause()
    if others:
        ranks = {k: i for i, k in enumerate(sorted(set(others)))}
        for start in range(0, n, KEY_STEP):
            values[start : start + KEY_STEP] = [ranks[k] for k in others[start : start + KEY_STEP]]
            pause()
    order = np.argsort(-values if reverse else values, kind="stable")
    pause()
    before = rows[:]
    for start in range(0, n, KEY_STEP):
        rows[start : start + KEY_STEP] = [before[i] for i in order[start : start + KEY_STEP].tolist()]
        pause()


#: the keys that order by a number, as `first_rows` reads them (the others order by names)
_NUMERIC_KEYS: dict[str, Callable[[QueueRow], float]] = {
    name: SORT_KEYS[name] for name in ("effective", "priority", "wait", "gpus", "state")
}


def first_rows(rows: Sequence[QueueRow], keys: Sequence[SortKey], count: int,
               reverse: bool = False) -> list[QueueRow] | None:  # fmt: skip
    """The first `count` of `rows` in the order `sort_rows(rows, keys, reverse)` gives
    them, found without sorting them all (a console's first screen of a large queue need not wait
    for the whole sort). None where a key orders by names (id, user, tenant, class) or `reverse`
    turns the tie-breaks round: only the full sort orders those."""
    if reverse:
        return None
    levels: list[tuple[Callable[[QueueRow], float], bool]] = []
    for name, descending in keys or DEFAULT_SORT:
        number = _NUMERIC_KEYS.get(name)
        if number is None:
            return None
        levels.append((number, descending))
    chosen = _first_positions(rows, range(len(rows)), levels, count)
    if chosen is None:
        return None
    # The chosen rows put in the sort's order by the sort itself (a total order: the same among
    # these few rows as among all).
    top = [rows[i] for i in chosen]
    sort_rows(top, keys)
    return top


def _first_positions(rows: Sequence[QueueRow], positions: Sequence[int],
                     levels: Sequence[tuple[Callable[[QueueRow], float], bool]],
                     count: int) -> list[int] | None:  # fmt: skip
    """The positions of the first `count` of `rows` (at `positions`) by `levels` in turn, then
    the tie time, then the job id. One key per pass: the rows before the `count`-th one's
    value are in, those after it out, and only those that share its value go on to the next key
    (few, past the first keys). None on a value that is no number (NaN: the sorts' order among
    NaNs is their own)."""
    if count <= 0:
        return []
    if len(rows) <= count:
        return list(positions)
    if not levels:  # the tie-breaks: the tie time, then the id (a total order: the last pass)
        times = list(map(_tie, rows))
        last = heapq.nsmallest(count, times)[-1]
        earlier = list(compress(positions, [t < last for t in times]))
        at_last = [t == last for t in times]
        by_id = heapq.nsmallest(count - len(earlier), zip(compress(rows, at_last), compress(positions, at_last),
                                strict=True), key=lambda pair: job_id_key(pair[0].job.id))  # fmt: skip
        return earlier + [position for _, position in by_id]
    number, descending = levels[0]
    values = list(map(number, rows))
    if any(map(math.isnan, values)):
        return None
    cut = (heapq.nlargest if descending else heapq.nsmallest)(count, values)[-1]
    ahead = list(compress(positions, [v > cut for v in values] if descending else [v < cut for v in values]))
    tied = [v == cut for v in values]
    rest = _first_positions(list(compress(rows, tied)), list(compress(positions, tied)), levels[1:],
                            count - len(ahead))  # fmt: skip
    return None if rest is None else ahead + rest


#: jobs between two calls of `queue_rows`' `pause`
PAUSE_EVERY = 2048
#: `queue_rows`' `first`: how many rows it is handed ahead of the sort, and from how many rows
#: on (below, the whole sort is as quick)
FIRST_ROWS = 200
FIRST_AFTER = 20_000


def queue_rows(
    cluster: Cluster, snapshot: Snapshot, wanted: QueueFilter, pause: Callable[[], None] = no_pause,
    first: Callable[[list[QueueRow], int], None] | None = None,
) -> list[QueueRow]:  # fmt: skip
    """Filtered, sorted rows with the derived fields every format shows. `pause` is called
    every `PAUSE_EVERY` jobs and between the sorts (a long-running caller's chance to let
    another thread run: the console's worker steps aside there after a key). `first`, where
    given, is handed the first `FIRST_ROWS` rows and the number of rows before the rest are
    sorted (`first_rows`), when there are more than `FIRST_AFTER` and the order allows."""
    policy = cluster.policy
    now = snapshot.now
    day_ago = now - DAY_S
    urgent_priority = float(policy.urgent_priority)
    users, tenants, classes, states = wanted.users, wanted.tenants, wanted.classes, wanted.states
    min_gpus = wanted.min_gpus
    filtered = bool(users or tenants or classes or min_gpus)
    rows: list[QueueRow] = []
    append = rows.append
    # per class: (resolved class, max_wait, P95 target, its at-risk mark, aging rate)
    resolved: dict[str, tuple[JobClass, float | None, float | None, float, float]] = {}
    pending = JobState.PENDING
    ok, at_risk, breach, no_target = SlaStatus.OK, SlaStatus.AT_RISK, SlaStatus.BREACH, SlaStatus.NONE
    # This loop runs once per job, 200,000 times on a large cluster: it gives the kernel's
    # effective priority its numbers itself (as `rules.effective_priority` would: the wait so far
    # of a pending job, the wait up to the start of one that started), and keeps inline copies of
    # the wait (Job.wait_s) and `sla_status`, which tests/policy/test_rule_numbers.py checks.
    by_submit = tie_field(snapshot) == "submit_time"  # (Slurm's tie-break: `gpuq.policy.order`)
    jobs = snapshot.jobs
    for job in paced(jobs, pause, PAUSE_EVERY):
        state = job.state
        if states is not None and state not in states:
            continue
        if filtered and (
            (users and job.user not in users) or (tenants and job.tenant not in tenants)
            or (classes and job.job_class not in classes) or job.gpus < min_gpus
        ):  # fmt: skip
            continue
        found = resolved.get(job.job_class)
        if found is None:
            cls = cluster.resolved_class(snapshot, job.job_class)
            target = cls.target_p95_s
            found = resolved[job.job_class] = (
                cls, cls.max_wait_s, target, AT_RISK_SHARE * target if target is not None else 0.0,
                policy.aging_rate(cls.name),
            )  # fmt: skip
        cls, max_wait, target, risk, rate = found
        since = job.eligible_time or job.submit_time
        start = job.start_time
        waited: float | None
        if start is not None:
            wait: float | None = (start - since).total_seconds()
            if wait < 0:  # type: ignore[operator]
                wait = 0.0
            waited = start.timestamp() - since.timestamp()  # (keeps the aging it had earned by its start)
        elif state is pending:
            waited = now - since.timestamp()
            wait = waited if waited > 0 else 0.0
        else:
            wait = waited = None
        effective = effective_priority_of(float(job.priority), urgent=job.urgent, urgent_priority=urgent_priority,
                                          waited_s=waited, max_wait_s=max_wait, rate_per_min=rate)  # fmt: skip
        times = job.preemption_times
        recent = sum(1 for t in times if day_ago < t.timestamp() <= now) if times else 0
        if target is None or wait is None:
            status = no_target
        else:
            status = breach if wait > target else at_risk if wait >= risk else ok
        append(QueueRow(job, wait, effective, len(times), recent, status, job.submit_time if by_submit else since))
    ranks = {name: found[0].priority for name, found in resolved.items()}
    pause()
    if first is not None and len(rows) > FIRST_AFTER:
        top = first_rows(rows, wanted.sort, FIRST_ROWS, wanted.reverse)
        if top is not None:
            first(top, len(rows))
            pause()
    sort_rows(rows, wanted.sort, wanted.reverse, ranks, pause)
    return rows


def queue_view(cluster: Cluster, snapshot: Snapshot, wanted: QueueFilter, *, limit: int | None = None) -> QueueView:
    """The rows `wanted` selects, the first `limit` of them (all when None or 0)."""
    rows = queue_rows(cluster, snapshot, wanted)
    total = len(rows)
    if limit:
        del rows[limit:]
    return QueueView(snapshot.cluster, snapshot.taken_at, snapshot.now, rows, total)
