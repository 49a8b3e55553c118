"""`SlurmBackend`: read a live Slurm cluster through its CLIs and act on it with operator rights.

The work is split by job (the README has the module table and the measurements behind the read
path): `configread` reads the preemption set-up and revalidates it past its TTL, `queueread`
reads the queue and the GPU indexes, `snapshot` runs the reads side by side and joins them with
sacct's history, `diskstate` adopts what an earlier invocation kept on disk and writes it back,
and `actions` prepares and applies bump/exempt/preempt/resume. This class wires them together and is
the `Backend` the rest of gpuq sees.

Thread safety: the service may take a snapshot in one thread while another applies an action.
Each part keeps its own state under its own lock and replaces what a read learnt in one step
(the config, the held GPU indexes and hint, the sacct window, the last read's job ids), so a
snapshot never sees half of an action's effect on them, and an action's expiry of the sacct
window is never undone by a read that started before it.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, ClassVar

from gpuq.backends.base import (
    ACTIONS,
    ActionPlan,
    ActionResult,
    Backend,
    Capabilities,
    NativePlan,
    NativePriority,
    OptionSpec,
    PriorityChange,
)
from gpuq.backends.slurm.actions import PRIORITY_MAX, SlurmActions
from gpuq.backends.slurm.config import PreemptConfig
from gpuq.backends.slurm.configread import ConfigReader, class_key
from gpuq.backends.slurm.diskcache import SlurmDiskCache
from gpuq.backends.slurm.diskstate import DiskState
from gpuq.backends.slurm.history import HistoryCache
from gpuq.backends.slurm.merge import merge_history
from gpuq.backends.slurm.queueread import DETAIL_ONE_BY_ONE_MAX, QueueReader
from gpuq.backends.slurm.runner import Runner
from gpuq.backends.slurm.snapshot import LastRead, read_sacct, take_snapshot
from gpuq.errors import BadInput, GpuqError
from gpuq.model import Job, Node, PreviewRequest, Snapshot
from gpuq.policy.config import Mode

if TYPE_CHECKING:
    from gpuq.trace.record import TraceJob

__all__ = ["SlurmBackend"]


_HOUR, _DAY = 3600.0, 86400.0


class SlurmBackend(Backend):
    """A Slurm cluster, found the way Slurm's own commands find it (SLURM_CONF, -M)."""

    name = "slurm"
    # (the options' maxima: what a site could want; beyond them a value is a typo, refused)
    options: ClassVar[Mapping[str, OptionSpec]] = MappingProxyType({
        "cluster": OptionSpec(str, "the Slurm cluster to address (passed as -M); default: slurm.conf's"),
        "timeout_s": OptionSpec(float, "seconds a Slurm command may take before the cluster counts as "
                                "unreachable", minimum=0.0, exclusive=True, maximum=_HOUR),
        "urgent_qos": OptionSpec(str, "the QOS `bump --urgent` moves a pending job to (else: the top priority)"),
        "exempt_qos": OptionSpec(str, "a QOS no one preempts, which `exempt` moves a pending job to"),
        "history_s": OptionSpec(float, "how far back sacct is read for finished jobs and the preemption "
                                "ledger (0: not at all)", minimum=0.0, maximum=3650 * _DAY),
        "graceful_wait_s": OptionSpec(float, "seconds a graceful preemption waits between SIGTERM and the "
                                      "requeue", minimum=0.0, maximum=_HOUR),
        "config_ttl_s": OptionSpec(float, "seconds the preemption set-up is used before it is checked "
                                   "again", minimum=0.0, maximum=_DAY),
        "history_ttl_s": OptionSpec(float, "seconds a sacct read is reused before sacct is asked again",
                                    minimum=0.0, maximum=_DAY),
        "persist": OptionSpec(bool, "keep the slowly changing reads on disk between invocations"),
        "cache_dir": OptionSpec(str, "where the disk cache lives (default: $XDG_CACHE_HOME/gpuq)"),
        "detail_one_by_one_max": OptionSpec(int, "up to this many GPU-holding jobs, read their GPU indexes "
                                            "one job at a time, else all at once", minimum=0, maximum=1_000_000),
        "config_max_age_s": OptionSpec(float, "seconds a QOS table is kept on an unchanged fingerprint "
                                       "(0: read sacctmgr at every check)", minimum=0.0, maximum=_DAY),
        "history_max_age_s": OptionSpec(float, "seconds cached sacct records may stand in for a due read "
                                        "in queue-only views", minimum=0.0, maximum=_DAY),
    })  # fmt: skip
    internals: ClassVar[frozenset[str]] = frozenset({"clock"})

    def __init__(
        self,
        cluster: str | None = None,
        timeout_s: float = 10.0,
        *,
        urgent_qos: str | None = None,
        exempt_qos: str | None = None,
        history_s: float = 86400.0,
        graceful_wait_s: float = 30.0,
        config_ttl_s: float = 60.0,
        history_ttl_s: float = 15.0,
        persist: bool = True,
        cache_dir: str | Path | None = None,
        detail_one_by_one_max: int | None = None,
        config_max_age_s: float = 600.0,
        history_max_age_s: float = 300.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        for label, value in (("config_max_age_s", config_max_age_s), ("history_max_age_s", history_max_age_s)):
            if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
                raise BadInput(f"{label} must be a number of seconds, 0 or more, not {value!r}")
        if detail_one_by_one_max is None:
            detail_one_by_one_max = _env_int("GPUQ_SLURM_DETAIL_ONE_BY_ONE_MAX", DETAIL_ONE_BY_ONE_MAX)
        if detail_one_by_one_max < 0:
            raise BadInput(f"detail_one_by_one_max must be 0 or more, not {detail_one_by_one_max}")
        self.runner = runner = Runner(cluster, timeout_s)
        #: the wall clock (epoch seconds): snapshot times, the sacct window, the disk cache's ages
        self.clock = clock
        self.cluster = cluster or ""
        # Site choices; the environment lets a front end configure them without new flags.
        self.urgent_qos = urgent_qos or os.environ.get("GPUQ_SLURM_URGENT_QOS") or None
        self.exempt_qos = exempt_qos or os.environ.get("GPUQ_SLURM_EXEMPT_QOS") or None
        self.graceful_wait_s = graceful_wait_s
        #: the longest a cached sacct read stands in for a due one (`snapshot(ledger=False)`)
        self.history_max_age_s = float(history_max_age_s)
        self.history_cache = HistoryCache(history_s, history_ttl_s)
        self.configs = ConfigReader(
            runner, clock, ttl_s=config_ttl_s, max_age_s=config_max_age_s, prepare=self._load_disk, named=self._named
        )
        self.queue_reader = QueueReader(runner, detail_one_by_one_max, lambda: self.configs.show_config())
        cache = SlurmDiskCache(cluster or "", Path(cache_dir) if cache_dir else None) if persist else None
        self.disk = DiskState(cache, clock, self.configs, self.history_cache, self.queue_reader)
        self._last = LastRead()
        self._actions = SlurmActions(self)

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(
            actions=frozenset(ACTIONS),
            # Slurm reads Priority=0 as a hold; the top is what scontrol accepts (`PRIORITY_MAX`).
            priority_range=(1, PRIORITY_MAX),
            native_preview=True,
            history=True,
            history_format="sacct",
        )

    def _load_disk(self) -> None:
        self.disk.load()

    def _named(self, name: str) -> None:
        if not self.cluster:
            self.cluster = name

    # ------------------------------------------------------------------ reading
    def snapshot(self, *, ledger: bool = True) -> Snapshot:
        """The cluster now. ``ledger=False``: the caller shows only queued jobs (no finished jobs,
        no preemption ledger), so a due sacct read need not be waited for when the queue shows
        nothing it would change (`HistoryCache.stand_in_reason`): it is stopped and the cached
        records, at most ``history_max_age_s`` old, are used; the cache's window stays where it was."""
        snapshot, last = take_snapshot(self, ledger=ledger)
        self._last = last
        return snapshot

    def nodes(self) -> tuple[Node, ...]:
        """The nodes alone: one ``sinfo``, as the snapshot reads them."""
        from gpuq.backends.slurm.runner import parse_output
        from gpuq.backends.slurm.text import parse_sinfo_nodes, sinfo_format_arg

        text = self.runner.run(["sinfo", "-h", "-N", sinfo_format_arg()])
        return tuple(parse_output("sinfo --Format", lambda: parse_sinfo_nodes(text)))

    def show_config(self, *, fresh: bool = False) -> dict[str, str]:
        """``scontrol show config``, cached for ``config_ttl_s``."""
        return self.configs.show_config(fresh=fresh)

    def preempt_config(self, *, fresh: bool = False) -> PreemptConfig:
        """The preemption set-up, cached and revalidated (`ConfigReader.preempt_config`)."""
        return self.configs.preempt_config(fresh=fresh)

    def history(self, since: float, until: float | None = None) -> list[Job]:
        """Finished jobs (and every run's preemptions) from sacct for ``[since, until]``; uncached."""
        cfg = self.preempt_config()
        records = read_sacct(self.runner, self.configs, since, until, disabled_ok=False)
        jobs, _events = merge_history([], records, class_key(cfg))
        return jobs

    def export_history(self, since: float, until: float) -> Iterator[TraceJob]:
        """sacct's accounting for ``[since, until]`` as a trace (`trace.export_jobs`), streaming."""
        from gpuq.backends.slurm.trace import export_jobs

        self._learn_name()
        return export_jobs(self.runner, since, until)

    def export_history_raw(self, since: float, until: float) -> Iterator[str]:
        """The same sacct output as printed: ``--parsable2``, a header, `trace.TRACE_FIELDS`."""
        from gpuq.backends.slurm.trace import export_lines

        self._learn_name()
        return export_lines(self.runner, since, until)

    def _learn_name(self) -> None:
        """The cluster's name for an export's header (slurm.conf's ClusterName, from scontrol),
        when neither -M nor an earlier read gave it; sacct may answer while slurmctld does not."""
        if not self.cluster:
            with contextlib.suppress(GpuqError):  # (the header then names no cluster)
                self.show_config()

    def job_ids(self) -> list[str]:
        try:
            out = self.runner.run(["squeue", "-h", "-o", "%i"])
        except Exception:  # noqa: BLE001 - completion must never break the shell
            return []
        return [line.strip() for line in out.splitlines() if line.strip()]

    def read_job(self, job_id: str, cfg: PreemptConfig | None = None) -> tuple[Job, str]:
        """One job and its raw AdminComment, via ``scontrol show job -d -o ID`` (``cfg``: the
        config an action read fresh; else the cached one)."""
        view = self._actions.read(job_id, cfg)
        return view.job, view.admin_comment

    def expire_history(self) -> None:
        """After a change to the cluster the next snapshot asks sacct again (incrementally), so a
        preemption gpuq just made is not hidden by the history TTL (every applied action does this)."""
        if self.history_cache.fresh_at is None and self.disk.cache is None:
            return
        self.disk.load()
        self.history_cache.expire()
        self.disk.save()

    # -- what the last reads did (tests, benchmarks)
    @property
    def restarts(self) -> dict[str, int]:
        """Restart counts by job id, as the last snapshot read them."""
        return self._last.restarts

    @property
    def history_wait(self) -> str:
        """Why the last snapshot waited for a due sacct read ("" when it did not need to)."""
        return self._last.history_wait

    @property
    def history_skipped(self) -> bool:
        """Whether the last snapshot did not wait for a due sacct read and used the cached one."""
        return self._last.history_skipped

    @property
    def config_check(self) -> str:
        """How the last config read past its TTL went: "read", "kept" or "" (`ConfigReader.check`)."""
        return self.configs.check

    @property
    def detail_one_by_one_max(self) -> int:
        return self.queue_reader.detail_one_by_one_max

    @property
    def gpu_holders(self) -> int | None:
        """GPU holders the last queue read had to read indexes for (`QueueReader.gpu_holders`)."""
        return self.queue_reader.gpu_holders

    @property
    def read_path(self) -> str:
        return self.queue_reader.stats.read_path

    @property
    def detail_read(self) -> str:
        return self.queue_reader.stats.detail_read

    @property
    def detail_cached(self) -> int:
        return self.queue_reader.stats.detail_cached

    # ------------------------------------------------------------------ actions
    def prepare_bump(self, job_id: str, change: PriorityChange, *, reason: str) -> ActionPlan:
        return self._actions.prepare_bump(job_id, change)

    def prepare_exempt(self, job_id: str, until: float | None, *, reason: str) -> ActionPlan:
        return self._actions.prepare_exempt(job_id, until)

    def prepare_preempt(self, job_id: str, mode: Mode, *, reason: str) -> ActionPlan:
        return self._actions.prepare_preempt(job_id, mode)

    def prepare_resume(self, job_id: str, *, reason: str) -> ActionPlan:
        return self._actions.prepare_resume(job_id)

    def apply(self, plan: ActionPlan) -> ActionResult:
        return self._actions.apply(plan)

    # ------------------------------------------------------------------ preview
    def native_preview(self, snapshot: Snapshot, request: PreviewRequest) -> NativePlan | None:
        from gpuq.backends.slurm.preview import predict_preemption

        # The prediction needs the Preempt lists, PreemptExemptTime and GraceTime, which the
        # fingerprint check cannot see: a QOS table read from sacctmgr since the snapshot, or now.
        cfg = self.configs.fresh_config(since=snapshot.now)
        return predict_preemption(
            snapshot, request, cfg, snapshot.now, urgent_qos=self.urgent_qos, raw_ids=self._last.raw_ids
        )

    def native_priority(self, snapshot: Snapshot, request: PreviewRequest) -> NativePriority | None:
        """The multifactor priority slurmctld would give a what-if by QOS/partition, or a held job
        on release (`priority.request_priority`); BadInput for an unknown QOS or partition."""
        from gpuq.backends.slurm.priority import is_held, request_priority

        job = snapshot.job(request.job_id) if request.job_id is not None else None
        if request.job_id is not None and (job is None or not is_held(job)):
            return None  # a job's own priority stands (no config read for it)
        if not request.hints and (request.priority is not None or request.urgent):
            return None
        cfg = self.configs.fresh_config(since=snapshot.now)
        nice = None
        if job is not None and request.priority is None and is_held(job):
            with contextlib.suppress(GpuqError):  # (unread: counted as 0, and said so)
                text = self.runner.run(["scontrol", "show", "job", "-o", self._last.raw_ids.get(job.id, job.id)],
                                       what=job.id)  # fmt: skip
                found = re.search(r"\bNice=(-?\d+)", text)
                nice = int(found.group(1)) if found else None
        return request_priority(cfg, snapshot, request, nice=nice)


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise BadInput(f"{name}={raw!r} is not a whole number") from None
    if value < 0:
        raise BadInput(f"{name}={raw!r}: must be 0 or more")
    return value
