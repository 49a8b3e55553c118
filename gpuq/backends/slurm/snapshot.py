"""One `SlurmBackend` snapshot: the reads run side by side and joined into a `Snapshot`.

The preemption config (`configread`), the queue with its GPU indexes (`queueread`), ``sinfo``
and ``sacct`` through the time-window cache (`history`) are independent reads, so they run at
once and the snapshot takes about as long as the slowest. sacct is asked for QOS ids rather than
names when slurmctld can name them (sacct then spares the slurmdbd round trip that fetches the
QOS list). A due sacct read need not be waited for when the caller shows only the queued jobs
and the queue shows nothing it would change (`HistoryCache.stand_in_reason`): it is stopped and
the cached records are used.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gpuq.backends.slurm.config import PreemptConfig
from gpuq.backends.slurm.configread import ConfigReader, class_key, class_key_of
from gpuq.backends.slurm.history import HistoryCache, sacct_args
from gpuq.backends.slurm.jobs import QueueRead, apply_suspensions
from gpuq.backends.slurm.merge import merge_history
from gpuq.backends.slurm.runner import Cancelled, CancelToken, Runner, parse_output
from gpuq.backends.slurm.sacct import AcctRecord, parse_sacct_parsable
from gpuq.backends.slurm.text import parse_sinfo_nodes, sinfo_format_arg
from gpuq.backends.slurm.values import EPOCH, moment
from gpuq.errors import Refused
from gpuq.model import JobClass, Snapshot
from gpuq.model.placement import mark_conflicts

if TYPE_CHECKING:
    from gpuq.backends.slurm.backend import SlurmBackend

__all__ = ["LastRead", "classes_of", "read_sacct", "take_snapshot"]


@dataclass(frozen=True, slots=True)
class LastRead:
    """What the last snapshot read besides the model (replaced whole by each snapshot)."""

    #: the numeric job id Slurm uses internally, by gpuq id
    raw_ids: dict[str, str] = field(default_factory=dict)
    #: restart counts (requeues, preemptions included) by job id
    restarts: dict[str, int] = field(default_factory=dict)
    #: why it waited for a due sacct read ("" when it did not need to, or none was due)
    history_wait: str = ""
    #: it did not wait, and used the cached sacct records
    history_skipped: bool = False


def take_snapshot(backend: SlurmBackend, *, ledger: bool) -> tuple[Snapshot, LastRead]:
    """The cluster now, and what the read learnt besides; see `SlurmBackend.snapshot`."""
    taken_at = backend.clock()
    backend.disk.load()
    configs, queue, history, runner = backend.configs, backend.queue_reader, backend.history_cache, backend.runner
    config_before, history_reads = configs.source(), history.reads
    cancel = CancelToken()
    sinfo_cmd = ["sinfo", "-h", "-N", sinfo_format_arg()]
    with ThreadPoolExecutor(max_workers=5) as pool:
        f_cfg = pool.submit(configs.preempt_config)
        # Parsing the queue needs only PreemptType (QOS or partition names the class).
        f_show = pool.submit(configs.show_config)
        f_queue = pool.submit(queue.read, lambda: class_key_of(f_show.result()))
        f_sinfo = pool.submit(runner.run, sinfo_cmd)
        f_hist = (
            pool.submit(history.refresh, taken_at, lambda start: read_sacct(runner, configs, start, cancel=cancel))
            if history.window_s > 0
            else None
        )
        cfg = f_cfg.result()
        read = f_queue.result()
        sinfo_text = f_sinfo.result()
        records, wait, skipped = _history_records(
            history, f_hist, cancel, read, taken_at, ledger=ledger, max_age_s=backend.history_max_age_s
        )
    nodes = parse_output("sinfo --Format", lambda: parse_sinfo_nodes(sinfo_text))
    modes = {q.name: cfg.mode_of(q.preempt_mode).lower() for q in cfg.qos.values()}
    read = apply_suspensions(read, taken_at)
    jobs, events = merge_history(read.jobs, records, class_key(cfg), modes)
    if configs.source() is not config_before or history.reads != history_reads or queue.unsaved():
        backend.disk.save()
    snapshot = Snapshot(
        cluster=backend.cluster,
        backend=backend.name,
        taken_at=moment(taken_at) or EPOCH,
        classes=classes_of(cfg),
        nodes=tuple(nodes),
        jobs=tuple(jobs),
        preemption_events=tuple(events),
    )
    # A placement Slurm shows only for a moment (a completing job's GPUs already given to the next
    # job; nodes and jobs read a moment apart) is marked on the jobs, not refused: views show the
    # mark and previews leave those jobs out.
    return mark_conflicts(snapshot), LastRead(read.raw_ids, read.restarts, wait, skipped)


def _history_records(
    cache: HistoryCache,
    f_hist: Future[list[AcctRecord]] | None,
    cancel: CancelToken,
    read: QueueRead,
    now: float,
    *,
    ledger: bool,
    max_age_s: float,
) -> tuple[list[AcctRecord], str, bool]:
    """The sacct records for this snapshot: the refresh's, or, when the caller needs no ledger
    and the queue shows nothing a new read would change, the cached ones (the read is stopped);
    with why it waited and whether it used the cached records."""
    if f_hist is None:
        return [], "", False
    wait = ""
    if not f_hist.done():  # a sacct read is under way (a refresh within the TTL returns at once)
        if ledger:
            reason: str | None = "the caller needs the ledger"
        elif not read.restarts_known:
            reason = "squeue showed no restart counts"
        else:
            reason = cache.stand_in_reason(read.jobs, read.restarts, now, max_age_s)
        if reason is None:
            cancel.cancel()
        else:
            wait = reason
    try:
        records = f_hist.result()
    except Cancelled:
        return cache.records(), wait, True
    # sacct was read for this snapshot (or finished before it could be stopped): record the
    # restart counts it accounts for, from the squeue read beside it.
    cache.note_queue(read.jobs, read.restarts, read_at=now)
    return records, wait, False


def read_sacct(
    runner: Runner,
    configs: ConfigReader,
    start: float,
    end: float | None = None,
    *,
    disabled_ok: bool = True,
    cancel: CancelToken | None = None,
) -> list[AcctRecord]:
    """sacct over ``[start, end]``, asking for QOS ids rather than names when slurmctld can name
    them, which spares sacct a slurmdbd round trip. A QOS slurmctld does not know (deleted since)
    makes it ask for names after all. ``cancel``: the snapshot may stop the read (`Cancelled`)
    once it knows it needs none."""
    names = configs.qos_names()
    try:
        text = runner.run(sacct_args(start, end, qos_ids=names is not None), cancel=cancel)
    except Refused as exc:
        if disabled_ok and "accounting storage is disabled" in str(exc).lower():
            return []
        raise
    unknown: set[str] = set()
    records = parse_output("sacct", lambda: parse_sacct_parsable(text, names, unknown))
    if unknown:
        named = runner.run(sacct_args(start, end), cancel=cancel)
        records = parse_output("sacct", lambda: parse_sacct_parsable(named))
    return records


def classes_of(cfg: PreemptConfig) -> tuple[JobClass, ...]:
    """The job classes: partitions under preempt/partition_prio, else QOS; preemptible when
    someone may preempt them in a mode that frees their GPUs. Each says whom slurmctld lets its
    jobs preempt (`JobClass.may_preempt`): the partitions of a lower PriorityTier, the QOS's own
    ``Preempt`` list; nobody with preemption off (PreemptType preempt/none, PreemptMode OFF)."""
    off = cfg.preemption_off
    if cfg.by_partition:
        tiers = [p.priority_tier for p in cfg.partitions.values()]
        return tuple(
            JobClass(
                name=p.name,
                priority=p.priority_tier,
                preemptible=cfg.mode_of(p.preempt_mode) in ("REQUEUE", "CANCEL")
                and any(t > p.priority_tier for t in tiers),
                may_preempt=() if off else tuple(sorted(o.name for o in cfg.partitions.values()
                                                        if o.priority_tier < p.priority_tier)),  # fmt: skip
            )
            for p in cfg.partitions.values()
        )
    preemptors = set().union(*(q.preempt for q in cfg.qos.values())) if cfg.qos else set()
    return tuple(
        JobClass(
            name=q.name,
            priority=q.priority,
            preemptible=q.name in preemptors and cfg.mode_of(q.preempt_mode) in ("REQUEUE", "CANCEL"),
            may_preempt=() if off else tuple(sorted(q.preempt)),
        )
        for q in cfg.qos.values()
    )

