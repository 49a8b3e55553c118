"""`SlurmBackend`: read a live Slurm cluster through its CLIs and act on it with operator rights.

Read path (chosen by measurement, see `text`): ``squeue --Format`` (delimited) and
``scontrol show job -d -o`` (GPU indexes, restarts, AdminComment) and ``sinfo --Format``, run
concurrently, plus ``sacct`` through a time-window cache. The slowly changing reads (the
preemption set-up, the sacct window) are also kept between invocations in `diskcache`; past their
TTLs they are revalidated cheaply where that is safe (the QOS table against slurmctld's own QOS
cache, `preempt_config`; the sacct window against the queue's restart counts, `snapshot`). The JSON
readers in `jsonread` parse the same data for ``squeue --json`` users and are tested on 22.05,
24.11 and 26.05 samples.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from gpuq.backends.base import ActionResult, Backend, NativePlan, PreviewRequest
from gpuq.backends.slurm.config import (
    QOS_FIELDS,
    PreemptConfig,
    assoc_mgr_qos_digest,
    parse_assoc_mgr_qos_names,
    parse_duration_text,
    parse_partitions,
    parse_qos,
    parse_show_config,
)
from gpuq.backends.slurm.diskcache import Held, SlurmDiskCache, held_from_json, held_to_json
from gpuq.backends.slurm.history import HistoryCache, sacct_args
from gpuq.backends.slurm.jobs import AdminNote, QueueRead, format_admin_comment, parse_admin_comment
from gpuq.backends.slurm.merge import merge_history
from gpuq.backends.slurm.runner import Cancelled, CancelToken, Runner
from gpuq.backends.slurm.sacct import AcctRecord, parse_sacct_parsable
from gpuq.backends.slurm.text import (
    JobDetail,
    apply_details,
    detail_wanted,
    parse_scontrol_detail,
    parse_scontrol_jobs,
    parse_sinfo_nodes,
    parse_squeue_format,
    sinfo_format_arg,
    squeue_format_arg,
)
from gpuq.errors import BadInput, GpuqError, NotFound, PermissionDenied, Refused, Unreachable
from gpuq.model import Job, JobClass, JobState, Snapshot
from gpuq.policy.config import Mode

__all__ = ["SlurmBackend"]

T = TypeVar("T")

_JOB_ID_RE = re.compile(r"^\d+(?:_\d+|_\[[\d,\-]+\]|\+\d+)?$")

#: Up to this many GPU-holding jobs, read their GPU indexes one job at a time (each ~10 ms);
#: beyond it one full ``scontrol show job -d -o`` is cheaper. `SlurmBackend(detail_one_by_one_max=)`
#: or ``GPUQ_SLURM_DETAIL_ONE_BY_ONE_MAX`` changes it (the lab has only 8 GPUs to hold).
DETAIL_ONE_BY_ONE_MAX = 32

HOLD_WARNING = (
    "a later hold/release recomputes the priority and drops this bump (Slurm: hold sets "
    "Priority=0, release recalculates it)"
)
TOP_WARNING = "gpuq does not use `scontrol top`: it raises the nice value of the user's other jobs"

#: The ``scontrol show config`` keys kept in the config's fingerprint (with the partitions and
#: slurmctld's QOS digest): a change in any of them makes `preempt_config` read sacctmgr again.
FINGERPRINT_KEYS = (
    "ClusterName",
    "SLURM_VERSION",
    "SlurmctldHost[0]",
    "AccountingStorageType",
    "AccountingStorageHost",
    "AccountingStoragePort",
    "PreemptType",
    "PreemptMode",
    "PreemptParameters",
    "PreemptExemptTime",
    "SchedulerParameters",
)

#: One ``scontrol show assoc_mgr flags=qos`` read serves everything that asks within this long
#: (a snapshot asks for the config fingerprint and for sacct's QOS names at the same moment).
ASSOC_MGR_REUSE_S = 1.0


class SlurmBackend(Backend):
    """A Slurm cluster, found the way Slurm's own commands find it (SLURM_CONF, -M)."""

    name = "slurm"
    can_bump = True
    can_exempt = True
    can_preempt = True
    knows_gpu_indexes = True
    has_history = True
    has_native_preview = True

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
        self.runner = Runner(cluster, timeout_s)
        #: the wall clock (epoch seconds): snapshot times, the sacct window, the disk cache's ages
        self.clock = clock
        if detail_one_by_one_max is None:
            detail_one_by_one_max = _env_int("GPUQ_SLURM_DETAIL_ONE_BY_ONE_MAX", DETAIL_ONE_BY_ONE_MAX)
        if detail_one_by_one_max < 0:
            raise BadInput(f"detail_one_by_one_max must be 0 or more, not {detail_one_by_one_max}")
        self.detail_one_by_one_max = detail_one_by_one_max
        self.cluster = cluster or ""
        # Site choices; the environment lets a front end configure them without new flags.
        self.urgent_qos = urgent_qos or os.environ.get("GPUQ_SLURM_URGENT_QOS") or None
        self.exempt_qos = exempt_qos or os.environ.get("GPUQ_SLURM_EXEMPT_QOS") or None
        self.graceful_wait_s = graceful_wait_s
        self.history_cache = HistoryCache(history_s, history_ttl_s)
        #: the longest a cached sacct read stands in for a due one (`snapshot(ledger=False)`)
        self.history_max_age_s = float(history_max_age_s)
        self._config_ttl_s = config_ttl_s
        #: the longest a QOS table read from sacctmgr is kept on an unchanged fingerprint
        self.config_max_age_s = float(config_max_age_s)
        self._config: PreemptConfig | None = None
        # What the config was built from (saved to disk): read_at (epoch of the sacctmgr read),
        # checked_at (epoch of the last read or fingerprint check), show, partitions, qos, fingerprint.
        self._config_src: dict[str, Any] | None = None
        #: epoch at which this process started the sacctmgr read behind the current config (None:
        #: adopted from the disk cache): predictions and actions use only a config read since
        #: the snapshot they act on (`_fresh_config`)
        self._qos_read_here: float | None = None
        #: how the last `preempt_config` past its TTL went: "read" (sacctmgr), "kept" (fingerprint
        #: unchanged, QOS table kept) or "" (none yet)
        self.config_check = ""
        #: why the last snapshot waited for a due sacct read ("" when it did not need to, or none
        #: was due); `history_skipped`: it did not wait and used the cached records
        self.history_wait = ""
        self.history_skipped = False
        self._assoc_lock = threading.Lock()
        self._assoc_memo: tuple[float, str | None] | None = None
        self._disk = SlurmDiskCache(cluster or "", Path(cache_dir) if cache_dir else None) if persist else None
        self._disk_loaded = False
        self._disk_lock = threading.Lock()
        self._show_lock = threading.Lock()
        self._show: tuple[float, dict[str, str]] | None = None
        self._pyslurm: Any = None  # module, False (unusable), or None (not looked for yet)
        #: which reader produced the last snapshot's jobs: "cli" or "pyslurm"
        self.read_path = "cli"
        self._config_at = 0.0
        self._raw_ids: dict[str, str] = {}
        self.restarts: dict[str, int] = {}
        #: GPU-holding jobs the last queue read had to read indexes for, not served from `_held`
        #: (None: not known); kept on disk, so the next invocation knows whether to read all job
        #: details beside squeue (see `_read_queue`)
        self.gpu_holders: int | None = None
        self._gpu_holders_saved: int | None = None
        #: the GPU indexes of the last read's holders by raw id (None: not known), kept on disk
        #: (`diskcache.Held`); `_held_saved`: as last loaded or saved
        self._held: dict[str, Held] | None = None
        self._held_saved: dict[str, Held] | None = None
        #: how the last snapshot got GPU indexes: "none" (none read), "one-by-one", "full" (after
        #: squeue), "beside" (a full read run beside squeue, all of it used) or "beside+N" (N more
        #: read after); `detail_cached`: how many holders took their indexes from `_held` instead
        self.detail_read = "none"
        self.detail_cached = 0

    # ------------------------------------------------------------------ reading
    def _parse(self, command: str, fn: Callable[[], T]) -> T:
        try:
            return fn()
        except GpuqError:
            raise
        except (ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
            raise BadInput(f"could not parse the output of `{command}`: {exc}") from None

    def show_config(self, *, fresh: bool = False) -> dict[str, str]:
        """``scontrol show config`` (fast: slurmctld answers from memory); cached like the rest."""
        if not fresh:
            self._load_disk()
        with self._show_lock:  # a snapshot asks from several threads at once: read it once
            cached = self._show
            if cached is not None and not fresh and time.monotonic() - cached[0] < self._config_ttl_s:
                return cached[1]
            text = self.runner.run(["scontrol", "show", "config"])
            show = self._parse("scontrol show config", lambda: parse_show_config(text))
            if not self.cluster:
                self.cluster = show.get("ClusterName", "") or "slurm"
            self._show = (time.monotonic(), show)
            return show

    def _read_qos(self, *, quiet: bool = True) -> str | None:
        """``sacctmgr show qos``; ``quiet``: None on a refusal or no slurmdbd (an error only
        matters when accounting is in use, which is decided once the config is known)."""
        argv = ["sacctmgr", "-n", "-P", "show", "qos", "format=" + ",".join(QOS_FIELDS)]
        try:
            return self.runner.run(argv)
        except (Refused, Unreachable):
            if quiet:
                return None
            raise

    def preempt_config(self, *, fresh: bool = False) -> PreemptConfig:
        """PreemptType/Mode/Parameters/ExemptTime, QOS and partitions; cached for ``config_ttl_s``
        (in this process and, with ``persist``, between invocations).

        Past the TTL the config is checked rather than re-read: ``scontrol show config``,
        ``show partition -o`` and ``show assoc_mgr flags=qos`` (slurmctld, from memory, ~5 ms each)
        give a fingerprint; when it equals the one stored with the cached QOS table and that table
        is younger than ``config_max_age_s``, the table is kept and ``sacctmgr show qos`` (three
        slurmdbd round trips) is not run. slurmctld's QOS cache does not show the Preempt lists,
        PreemptExemptTime or GraceTime, so a change of only those reaches a kept table within
        ``config_max_age_s``; ``fresh=True`` (predictions, actions) always reads sacctmgr.
        """
        if not fresh:
            self._load_disk()
        now = time.monotonic()
        if self._config is not None and not fresh and now - self._config_at < self._config_ttl_s:
            return self._config
        started = self.clock()
        src = self._config_src
        keep = (
            not fresh
            and self._config is not None
            and src is not None
            and src.get("fingerprint") is not None
            and 0 <= started - float(src["read_at"]) < self.config_max_age_s
        )
        with ThreadPoolExecutor(max_workers=4) as pool:
            f_show = pool.submit(self.show_config, fresh=fresh)
            f_parts = pool.submit(self.runner.run, ["scontrol", "show", "partition", "-o"])
            f_assoc = pool.submit(self._assoc_mgr_qos)

            def qos_after_assoc() -> str | None:
                # sacctmgr starts only once slurmctld's QOS cache was read: a QOS change racing the
                # two reads shows as a changed fingerprint at the next check, never as an unchanged one.
                f_assoc.exception()  # waits; its error is raised by f_assoc.result() below
                return self._read_qos()

            f_qos = None if keep else pool.submit(qos_after_assoc)
            show, parts_text, assoc = f_show.result(), f_parts.result(), f_assoc.result()
            fingerprint = self._fingerprint(show, parts_text, assoc)
            kept = keep and src is not None and fingerprint == src["fingerprint"]
            if kept and src is not None:
                qos_text, read_at = src["qos"], float(src["read_at"])
            else:
                if f_qos is None:
                    f_qos = pool.submit(self._read_qos)
                qos_text, read_at = f_qos.result(), started
            self.config_check = "kept" if kept else "read"
        if _accounting_on(show) and qos_text is None:
            qos_text = self._read_qos(quiet=False)  # accounting is on: its error is the operator's to see
        cfg = self._build_config(show, parts_text, qos_text)
        if not kept:
            self._qos_read_here = started
            named = sorted(q.split(" ", 1)[0].rpartition("(")[0] for q in fingerprint["qos"]) if fingerprint else []
            if fingerprint is not None and sorted(cfg.qos) != named:
                fingerprint = None  # slurmctld's QOS cache and slurmdbd disagree: not a usable check
        self._config, self._config_at = cfg, now
        self._config_src = {
            "read_at": read_at,
            "checked_at": started,
            "show": show,
            "partitions": parts_text,
            "qos": qos_text,
            "fingerprint": fingerprint,
        }
        return cfg

    def _fresh_config(self, since: float | None = None) -> PreemptConfig:
        """A config whose QOS table this process read from sacctmgr at or after ``since`` (epoch),
        else a fresh read: what predictions and actions use (never a table kept on a fingerprint)."""
        if since is not None and self._config is not None and (self._qos_read_here or -1.0) >= since:
            return self._config
        return self.preempt_config(fresh=True)

    def _assoc_mgr_qos(self) -> str | None:
        """``scontrol show assoc_mgr flags=qos`` (slurmctld's QOS cache, ~5 ms); None when refused.
        One read serves every caller within `ASSOC_MGR_REUSE_S` (the config check and sacct's QOS
        names ask at the same moment)."""
        with self._assoc_lock:
            memo = self._assoc_memo
            if memo is not None and 0 <= time.monotonic() - memo[0] < ASSOC_MGR_REUSE_S:
                return memo[1]
            at = time.monotonic()
            try:
                text: str | None = self.runner.run(["scontrol", "show", "assoc_mgr", "flags=qos"])
            except (Refused, PermissionDenied):
                text = None
            self._assoc_memo = (at, text)
            return text

    def _fingerprint(self, show: Mapping[str, str], parts_text: str, assoc: str | None) -> dict[str, Any] | None:
        """What the cached QOS table is checked against (None: slurmctld shows no QOS cache to us,
        so there is nothing to check against and sacctmgr is read each time, as before)."""
        if assoc is None:
            return None
        digest = self._parse("scontrol show assoc_mgr flags=qos", lambda: assoc_mgr_qos_digest(assoc))
        if not digest and _accounting_on(show):
            return None  # slurmctld shows no QOS while slurmdbd has them: nothing to compare
        return {"show": {k: show.get(k, "") for k in FINGERPRINT_KEYS}, "partitions": parts_text, "qos": digest}

    def _build_config(self, show: Mapping[str, str], parts_text: str, qos_text: str | None) -> PreemptConfig:
        parts = self._parse("scontrol show partition -o", lambda: parse_partitions(parts_text))
        qos: dict[str, Any] = {}
        if _accounting_on(show) and qos_text is not None:
            text = qos_text
            qos = self._parse("sacctmgr show qos", lambda: parse_qos(text))
        return PreemptConfig(
            preempt_type=show.get("PreemptType", "preempt/none"),
            preempt_mode=show.get("PreemptMode", "OFF"),
            preempt_parameters=_unset(show.get("PreemptParameters", "")),
            scheduler_parameters=_unset(show.get("SchedulerParameters", "")),
            exempt_time_s=parse_duration_text(show.get("PreemptExemptTime", "")) or None,
            version=show.get("SLURM_VERSION", ""),
            controller=show.get("SlurmctldHost[0]", ""),
            qos=qos,
            partitions=parts,
        )

    # ------------------------------------------------------------------ the cache on disk
    def _load_disk(self) -> None:
        """Once per backend: adopt what an earlier invocation read, where still valid."""
        if self._disk is None or self._disk_loaded:
            return
        with self._disk_lock:
            if self._disk_loaded:
                return
            parts = self._disk.load()
            src = parts.get("config")
            if src is not None and self._config is None:
                self._adopt_config(src)
            hist = parts.get("history")
            if hist is not None and self.history_cache.read_until is None:
                self.history_cache.load_json(hist)
            holders = parts.get("queue", {}).get("gpu_holders")
            if self.gpu_holders is None and isinstance(holders, int) and not isinstance(holders, bool):
                self.gpu_holders = self._gpu_holders_saved = holders
            if self._held is None:
                self._held = self._held_saved = held_from_json(parts.get("queue", {}).get("held"))
            self._disk_loaded = True

    def _adopt_config(self, src: Mapping[str, Any]) -> None:
        """Adopt a config read by an earlier invocation: within ``config_ttl_s`` of its last check
        as it is; older, but with a fingerprint and a QOS table younger than ``config_max_age_s``,
        as a candidate that `preempt_config` checks before use."""
        try:
            now = self.clock()
            read_age = now - float(src["read_at"])
            age = now - float(src.get("checked_at", src["read_at"]))
            show, parts_text, qos_text = src["show"], src["partitions"], src["qos"]
            fingerprint = src.get("fingerprint")
            if fingerprint is not None and not isinstance(fingerprint, dict):
                return
            usable = 0 <= age < self._config_ttl_s or (
                fingerprint is not None and age >= 0 and 0 <= read_age < self.config_max_age_s
            )
            if not (usable and read_age >= age and isinstance(show, dict) and isinstance(parts_text, str)):
                return
            if not all(isinstance(k, str) and isinstance(v, str) for k, v in show.items()):
                return
            if qos_text is not None and not isinstance(qos_text, str):
                return
            if _accounting_on(show) and qos_text is None:
                return
            cfg = self._build_config(show, parts_text, qos_text)
        except (GpuqError, KeyError, TypeError, ValueError):
            return  # a corrupt cache is read again from the cluster
        at = time.monotonic() - age
        self._show = (at, show)
        self._config, self._config_at, self._config_src = cfg, at, dict(src)
        self._qos_read_here = None
        if not self.cluster:
            self.cluster = show.get("ClusterName", "") or "slurm"

    def _save_disk(self) -> None:
        if self._disk is None:
            return
        parts: dict[str, Any] = {}
        if self._config_src is not None:
            parts["config"] = self._config_src
        if self.history_cache.read_until is not None:
            parts["history"] = self.history_cache.to_json()
        if self.gpu_holders is not None:
            parts["queue"] = {"gpu_holders": self.gpu_holders}
            self._gpu_holders_saved = self.gpu_holders
            if self._held is not None:
                parts["queue"]["held"] = held_to_json(self._held)
                self._held_saved = self._held
        if parts:
            self._disk.save(parts)

    def _holders_side_changed(self) -> bool:
        """Whether the held indexes changed, or the GPU-holder count crossed `detail_one_by_one_max`,
        since they were last saved (only then is it worth a write: the count decides whether the
        next read starts the full detail read beside squeue)."""
        if self.gpu_holders is None:
            return False
        if self._held is not None and self._held != self._held_saved:
            return True
        saved = self._gpu_holders_saved
        limit = self.detail_one_by_one_max
        return saved is None or (saved > limit) != (self.gpu_holders > limit)

    def _class_key(self, cfg: PreemptConfig) -> str:
        return "partition" if cfg.by_partition else "qos"

    def _classes(self, cfg: PreemptConfig) -> tuple[JobClass, ...]:
        if cfg.by_partition:
            tiers = [p.priority_tier for p in cfg.partitions.values()]
            return tuple(
                JobClass(
                    name=p.name,
                    priority=p.priority_tier,
                    preemptible=cfg.mode_of(p.preempt_mode) in ("REQUEUE", "CANCEL")
                    and any(t > p.priority_tier for t in tiers),
                )
                for p in cfg.partitions.values()
            )
        preemptors = set().union(*(q.preempt for q in cfg.qos.values())) if cfg.qos else set()
        return tuple(
            JobClass(
                name=q.name,
                priority=q.priority,
                preemptible=q.name in preemptors
                and cfg.mode_of(q.preempt_mode) in ("REQUEUE", "CANCEL"),
            )
            for q in cfg.qos.values()
        )

    def _qos_names(self) -> dict[str, str] | None:
        """QOS id -> name from slurmctld's cache (``scontrol show assoc_mgr flags=qos``, ~5 ms, no
        slurmdbd hop); None when slurmctld has none or will not say (sacct then prints names)."""
        text = self._assoc_mgr_qos()
        if text is None:
            return None
        return self._parse("scontrol show assoc_mgr flags=qos", lambda: parse_assoc_mgr_qos_names(text)) or None

    def _read_history(
        self, start: float, end: float | None = None, *, disabled_ok: bool = True, cancel: CancelToken | None = None
    ) -> list[AcctRecord]:
        """sacct over ``[start, end]``, asking for QOS ids rather than names when slurmctld can name
        them: sacct then spares the slurmdbd round trip that fetches the QOS list (0.23 -> 0.14 s on
        the lab). A QOS slurmctld does not know (deleted since) makes it ask for names after all.
        ``cancel``: the snapshot may stop the read (`Cancelled`) once it knows it needs none."""
        names = self._qos_names()
        try:
            text = self.runner.run(sacct_args(start, end, qos_ids=names is not None), cancel=cancel)
        except Refused as exc:
            if disabled_ok and "accounting storage is disabled" in str(exc).lower():
                return []
            raise
        unknown: set[str] = set()
        records = self._parse("sacct", lambda: parse_sacct_parsable(text, names, unknown))
        if unknown:
            named = self.runner.run(sacct_args(start, end), cancel=cancel)
            records = self._parse("sacct", lambda: parse_sacct_parsable(named))
        return records

    def _read_queue(self, class_key_of: Callable[[], str]) -> QueueRead:
        """squeue --Format (with AdminComment and restart counts where squeue knows them), then GPU
        indexes for the jobs holding GPUs: one ``scontrol show job -d -o ID`` each when they are
        few, else one full ``scontrol show job -d -o`` (0.18 s at 9,500 jobs, measured).

        When the previous read (this process's, or the last invocation's through the disk cache)
        saw more GPU holders than `detail_one_by_one_max`, the full read starts beside squeue
        instead of after it. Its details are used only for jobs whose StartTime is the same in
        both reads; a job it cannot fill (started, or requeued and started again, between the two
        reads) is read after squeue as before, as is everything when it failed. A wrong guess
        (few holders after all) costs time, never indexes.

        A running job's indexes do not change during its run, so the indexes read for each holder
        are kept (`_held`, on disk) with the StartTime, nodes and GPU count squeue showed for it;
        a holder squeue shows with all three the same takes them from there (`_use_held`) and
        only the others count as needing detail, for the rule above and for the hint."""
        via_pyslurm = self._read_pyslurm(class_key_of)
        if via_pyslurm is not None:
            return via_pyslurm
        self.read_path = "cli"
        self.detail_read = "none"
        self.detail_cached = 0
        threshold = self.detail_one_by_one_max
        with ThreadPoolExecutor(max_workers=1) as side:
            beside = side.submit(self._full_details, starts=True) if (self.gpu_holders or 0) > threshold else None
            # The squeue lines are parsed while squeue still prints them; that needs the class key
            # (from the config: cached, or being read right now), so squeue starts first and its
            # lines wait in the pipe for it. The GPU indexes come after, from scontrol.
            def consume(lines: Iterable[str]) -> QueueRead:
                key = class_key_of()
                return self._parse("squeue --Format", lambda: parse_squeue_format(lines, key))

            try:
                read: QueueRead = self.runner.stream(["squeue", "-h", "-a", squeue_format_arg()], consume)
            except Refused as exc:
                if "Invalid job format specification" not in str(exc):
                    raise
                # An older squeue without AdminComment/RestartCnt: they come from the full detail read.
                key = class_key_of()
                text = self.runner.run(["squeue", "-h", "-a", squeue_format_arg(extended=False)])
                self.detail_read = "full"
                details = self._full_details()
                return self._parse("squeue --Format", lambda: parse_squeue_format(text, key, details))
            runs = _holder_runs(read)
            cold = self._held is None
            self.detail_cached = self._use_held(read, runs)
            self.gpu_holders = len(read.needs_detail)
            if beside is not None:
                try:
                    early: dict[str, JobDetail] | None = beside.result()
                except GpuqError:
                    early = None  # read again below if still needed; its own error then shows
                if early is not None:
                    # every_holding, as after squeue below: the same jobs get indexes either way.
                    read = apply_details(read, early, every_holding=True, same_run=True)
                    self.detail_read = f"beside+{len(read.needs_detail)}" if read.needs_detail else "beside"
        read = self._read_details(read, threshold)
        self._held = _held_after(read, runs)
        if cold:
            # Nothing was known before this read, so its misses say nothing about how many jobs
            # start between two reads: the hint counts only the holders the next read cannot take
            # from `_held` (not the ones read this time, which it can).
            self.gpu_holders = len(runs) - len(self._held)
        return read

    def _use_held(self, read: QueueRead, runs: dict[str, tuple[float, tuple[str, ...], int]]) -> int:
        """Fill the holders whose run (StartTime, nodes, GPU count as squeue shows them) is the one
        `_held` has indexes for; returns how many. A requeued job starts a new run (another
        StartTime); a resize (``scontrol update NumNodes=``) keeps StartTime but changes the nodes
        and the GPU count: either is read again."""
        held = self._held
        if not held or not runs:
            return 0
        kept = {
            raw: JobDetail(allocation=dict(entry[3]), start=entry[0])
            for raw, run in runs.items()
            if (entry := held.get(raw)) is not None and entry[:3] == run
        }
        before = len(read.needs_detail)
        apply_details(read, kept, same_run=True)
        return before - len(read.needs_detail)

    def _read_details(self, read: QueueRead, threshold: int) -> QueueRead:
        """GPU indexes for the holders still without: one read each when few, else the full read."""
        if not read.needs_detail:
            return read
        if len(read.needs_detail) > threshold:
            # Many jobs hold GPUs: one full detail read is cheaper than one read per job.
            self.detail_read = "full"
            return apply_details(read, self._full_details(), every_holding=True)
        if self.detail_read == "none":
            self.detail_read = "one-by-one"
        with ThreadPoolExecutor(max_workers=8) as pool:
            texts = list(pool.map(self._job_detail_text, read.needs_detail))
        details = self._parse(
            "scontrol show job -d -o ID", lambda: parse_scontrol_detail("\n".join(t for t in texts if t))
        )
        return apply_details(read, details)

    def _full_details(self, *, starts: bool = False) -> dict[str, JobDetail]:
        """Every job's detail (9.3 MB at 9,500 jobs): lines without one are dropped as they arrive.
        ``starts``: with StartTimes, for a read that may predate squeue's (`apply_details`)."""

        def consume(lines: Iterable[str]) -> dict[str, JobDetail]:
            return parse_scontrol_detail("\n".join(line for line in lines if detail_wanted(line)), starts=starts)

        return self.runner.stream(
            ["scontrol", "show", "job", "-d", "-o"],
            lambda lines: self._parse("scontrol show job -d -o", lambda: consume(lines)),
        )

    def _read_pyslurm(self, class_key_of: Callable[[], str]) -> QueueRead | None:
        """Jobs through pyslurm when it matches the cluster's release (and no -M is asked for)."""
        if self.runner.cluster or self._pyslurm is False:
            return None
        if self._pyslurm is None and "pyslurm" not in sys.modules and importlib.util.find_spec("pyslurm") is None:
            self._pyslurm = False  # not installed: spare importing the reader (~3 ms uncompiled)
            return None
        from gpuq.backends.slurm.pyslurm_read import jobs_from_pyslurm, load_pyslurm

        if self._pyslurm is None:
            self._pyslurm = load_pyslurm(self.show_config().get("SLURM_VERSION", "")) or False
        module = self._pyslurm
        if module is False:
            return None
        try:
            loaded = module.Jobs.load()
        except Exception:  # noqa: BLE001 - any libslurm trouble: the CLI path still works
            self._pyslurm = False
            return None
        self.read_path = "pyslurm"
        key = class_key_of()
        return self._parse("pyslurm.Jobs.load()", lambda: jobs_from_pyslurm(loaded.values(), key))

    def _job_detail_text(self, raw_id: str) -> str:
        try:
            return self.runner.run(["scontrol", "show", "job", "-d", "-o", raw_id], what=raw_id)
        except NotFound:
            return ""  # ended between the two reads

    def snapshot(self, *, ledger: bool = True) -> Snapshot:
        """The cluster now. ``ledger=False``: the caller shows only queued jobs (no finished jobs,
        no preemption ledger), so a due sacct read need not be waited for when the queue shows
        nothing it would change (`HistoryCache.stand_in_reason`): it is stopped and the cached
        records, at most ``history_max_age_s`` old, are used; the cache's window stays where it was."""
        taken_at = self.clock()
        self._load_disk()
        config_before, history_reads = self._config_src, self.history_cache.reads
        cancel = CancelToken()
        sinfo_cmd = ["sinfo", "-h", "-N", sinfo_format_arg()]
        # The reads are independent: run them side by side (wall time ~ the slowest one).
        with ThreadPoolExecutor(max_workers=5) as pool:
            f_cfg = pool.submit(self.preempt_config)
            # Parsing the queue needs only PreemptType (QOS or partition names the class).
            f_show = pool.submit(self.show_config)
            f_queue = pool.submit(self._read_queue, lambda: _class_key_of(f_show.result()))
            f_sinfo = pool.submit(self.runner.run, sinfo_cmd)
            f_hist = (
                pool.submit(
                    self.history_cache.refresh, taken_at, lambda start: self._read_history(start, cancel=cancel)
                )
                if self.history_cache.window_s > 0
                else None
            )
            cfg = f_cfg.result()
            read = f_queue.result()
            sinfo_text = f_sinfo.result()
            records = self._history_records(f_hist, cancel, read, taken_at, ledger)
        key = self._class_key(cfg)
        nodes = self._parse("sinfo --Format", lambda: parse_sinfo_nodes(sinfo_text))
        modes = {q.name: cfg.mode_of(q.preempt_mode).lower() for q in cfg.qos.values()}
        jobs, events = merge_history(read.jobs, records, key, modes)
        self._raw_ids = read.raw_ids
        self.restarts = read.restarts
        if (
            self._config_src is not config_before
            or self.history_cache.reads != history_reads
            or self._holders_side_changed()
        ):
            self._save_disk()
        return Snapshot(
            cluster=self.cluster,
            backend=self.name,
            taken_at=taken_at,
            classes=self._classes(cfg),
            nodes=tuple(nodes),
            jobs=tuple(jobs),
            preemption_events=tuple(events),
        )

    def _history_records(
        self, f_hist: Future[list[AcctRecord]] | None, cancel: CancelToken, read: QueueRead, now: float, ledger: bool
    ) -> list[AcctRecord]:
        """The sacct records for this snapshot: the refresh's, or, when the caller needs no ledger
        and the queue shows nothing a new read would change, the cached ones (the read is stopped)."""
        self.history_wait, self.history_skipped = "", False
        if f_hist is None:
            return []
        if not f_hist.done():  # a sacct read is under way (a refresh within the TTL returns at once)
            if ledger:
                reason: str | None = "the caller needs the ledger"
            elif not read.restarts_known:
                reason = "squeue showed no restart counts"
            else:
                reason = self.history_cache.stand_in_reason(read.jobs, read.restarts, now, self.history_max_age_s)
            if reason is None:
                cancel.cancel()
            else:
                self.history_wait = reason
        try:
            records = f_hist.result()
        except Cancelled:
            self.history_skipped = True
            return self.history_cache.records()
        cache = self.history_cache
        if cache.read_until == now and cache.accounted_at != now:
            # sacct was read for this snapshot (or finished before it could be stopped): record the
            # restart counts it accounts for, from the squeue read beside it.
            cache.note_queue(read.jobs, read.restarts)
        return records

    def history(self, since: float, until: float | None = None) -> list[Job]:
        """Finished jobs (and every run's preemptions) from sacct for ``[since, until]``; uncached."""
        cfg = self.preempt_config()
        records = self._read_history(since, until, disabled_ok=False)
        jobs, _events = merge_history([], records, self._class_key(cfg))
        return jobs

    def job_ids(self) -> list[str]:
        try:
            out = self.runner.run(["squeue", "-h", "-o", "%i"])
        except Exception:  # noqa: BLE001 - completion must never break the shell
            return []
        return [line.strip() for line in out.splitlines() if line.strip()]

    def read_job(self, job_id: str, cfg: PreemptConfig | None = None) -> tuple[Job, str]:
        """One job and its raw AdminComment, via ``scontrol show job -d -o ID`` (``cfg``: the
        config an action read fresh; else the cached one)."""
        if not _JOB_ID_RE.match(job_id):
            raise NotFound(f"no job {job_id!r}: Slurm job ids look like 123, 123_4 or 77+1")
        if cfg is None:
            cfg = self.preempt_config()
        text = self.runner.run(["scontrol", "show", "job", "-d", "-o", job_id], what=job_id)
        read = self._parse("scontrol show job", lambda: parse_scontrol_jobs(text, self._class_key(cfg)))
        details = self._parse("scontrol show job", lambda: parse_scontrol_detail(text))
        for job in read.jobs:
            if job.id == job_id or read.raw_ids.get(job.id) == job_id:
                raw = read.raw_ids[job.id]
                return job, details[raw].admin_comment if raw in details else ""
        where = f" on cluster {self.cluster}" if self.cluster else ""
        raise NotFound(f"no job {job_id}{where}")

    # ------------------------------------------------------------------ actions
    def _act(
        self,
        action: str,
        job_id: str,
        before: Mapping[str, Any],
        expected: Mapping[str, Any],
        commands: Sequence[Sequence[str]],
        warnings: Sequence[str],
        dry_run: bool,
        fields: Callable[[Job, str], Mapping[str, Any]],
        cfg: PreemptConfig,
        between: Callable[[int], None] | None = None,
        settled: Callable[[Job], bool] | None = None,
    ) -> ActionResult:
        argvs = [self.runner.argv(c) for c in commands]
        # Report only the fields the action sets (an unchanged QOS is not part of a bump).
        keys = [k for k, v in expected.items() if v != before.get(k)] or list(expected)
        if set(keys) <= set(before):
            before = {k: before[k] for k in keys}
            expected = {k: expected[k] for k in keys}
        if dry_run:
            return ActionResult(action, job_id, True, before, expected, argvs, tuple(warnings), "dry run: nothing ran")
        try:
            for i, cmd in enumerate(commands):
                if between is not None and i > 0:
                    between(i)
                self.runner.run(cmd, what=job_id)
        finally:
            self._expire_history()
        try:
            job, admin = self.read_job(job_id, cfg)
            # A requeued or cancelled job passes through COMPLETING: report where it lands.
            deadline = time.monotonic() + self.runner.timeout_s
            while settled is not None and not settled(job) and time.monotonic() < deadline:
                time.sleep(0.5)
                job, admin = self.read_job(job_id, cfg)
            after = fields(job, admin)
            if set(before) < set(after):
                after = {k: after[k] for k in before}
        except NotFound:
            after = {"state": "gone"}
        return ActionResult(action, job_id, False, before, after, argvs, tuple(warnings))

    def _expire_history(self) -> None:
        """After a change to the cluster the next snapshot asks sacct again (incrementally), so a
        preemption gpuq just made is not hidden by the history TTL."""
        if self.history_cache.fresh_at is None and self._disk is None:
            return
        self._load_disk()
        self.history_cache.expire()
        self._save_disk()

    def bump(self, job_id: str, *, priority: int | None, urgent: bool, reason: str, dry_run: bool) -> ActionResult:
        cfg = self._fresh_config()  # an action never relies on a QOS table kept on a fingerprint
        job, _ = self.read_job(job_id, cfg)

        def fields(j: Job, _admin: str) -> dict[str, Any]:
            return {"priority": j.priority, "qos": j.qos}

        before = fields(job, "")
        warnings = [HOLD_WARNING, TOP_WARNING]
        if job.state is not JobState.PENDING:
            warnings.append(f"job {job_id} is {job.state.value}: priority only matters while pending")
        if urgent:
            if self.urgent_qos and job.state is not JobState.PENDING:
                raise Refused(f"job {job_id} is {job.state.value}: Slurm only changes the QOS of pending jobs")
            if self.urgent_qos:
                cmd = ["scontrol", "update", f"JobId={job_id}", f"QOS={self.urgent_qos}"]
                expected: dict[str, Any] = {"priority": job.priority, "qos": self.urgent_qos}
            else:
                top = self._top_priority() + 1
                cmd = ["scontrol", "update", f"JobId={job_id}", f"Priority={top}"]
                expected = {"priority": top, "qos": job.qos}
                warnings.append("no urgent QOS configured (GPUQ_SLURM_URGENT_QOS): set the top priority instead")
        else:
            if priority is None:
                raise BadInput("bump needs --to/--by (a priority) or --urgent")
            if priority <= 0:
                raise Refused(f"priority {priority} would hold job {job_id} (Slurm: Priority=0 is a hold)")
            cmd = ["scontrol", "update", f"JobId={job_id}", f"Priority={priority}"]
            expected = {"priority": priority, "qos": job.qos}
        return self._act("bump", job_id, before, expected, [cmd], warnings, dry_run, fields, cfg)

    def _top_priority(self) -> int:
        out = self.runner.run(["squeue", "-h", "-t", "PD", "-O", "PriorityLong"])
        values = [int(v) for v in out.split() if v.isdigit()]
        return max(values, default=0)

    def exempt(self, job_id: str, *, until: float | None, reason: str, dry_run: bool) -> ActionResult:
        cfg = self._fresh_config()
        job, admin = self.read_job(job_id, cfg)
        note = parse_admin_comment(admin)

        def fields(j: Job, adm: str) -> dict[str, Any]:
            return {"qos": j.qos, "exempt_until": parse_admin_comment(adm).exempt_until, "admin_comment": adm}

        before = fields(job, admin)
        warnings: list[str] = []
        args = ["scontrol", "update", f"JobId={job_id}"]
        pending = job.state is JobState.PENDING
        if until is not None:
            # slurmctld refuses a QOS change once a job runs ("Job is no longer pending execution").
            new_qos = self.exempt_qos if self.exempt_qos and job.qos != self.exempt_qos and pending else None
            if self.exempt_qos and not pending and job.qos != self.exempt_qos:
                warnings.append(
                    f"job {job_id} is {job.state.value}: Slurm only changes the QOS of pending jobs, so "
                    "slurmctld may still preempt it; the exemption is recorded for gpuq's policy"
                )
            prev = note.prev_qos or (job.qos if new_qos else None)
            new_note = AdminNote(exempt_until=until, prev_qos=prev, other=note.other)
            if new_qos:
                args.append(f"QOS={new_qos}")
            if not self.exempt_qos:
                warnings.append(
                    "no non-preemptable QOS configured (GPUQ_SLURM_EXEMPT_QOS): slurmctld may still "
                    "preempt this job; only gpuq's own policy honours the exemption"
                )
            if cfg.by_partition:
                warnings.append("under preempt/partition_prio a QOS does not protect a job from slurmctld")
        else:
            restore = note.prev_qos if note.prev_qos and note.prev_qos != job.qos and pending else None
            if note.prev_qos and note.prev_qos != job.qos and not pending:
                warnings.append(
                    f"job {job_id} is {job.state.value}: its QOS stays {job.qos} (Slurm "
                    "only changes the QOS of pending jobs)"
                )
            new_note = AdminNote(exempt_until=None, prev_qos=None, other=note.other)
            if restore:
                args.append(f"QOS={restore}")
        comment = format_admin_comment(new_note)
        args.append(f"AdminComment={comment}")
        expected = {
            "qos": next((a[4:] for a in args if a.startswith("QOS=")), job.qos),
            "exempt_until": until,
            "admin_comment": comment,
        }
        return self._act("exempt", job_id, before, expected, [args], warnings, dry_run, fields, cfg)

    def preempt(self, job_id: str, *, mode: Mode, reason: str, dry_run: bool) -> ActionResult:
        cfg = self._fresh_config()
        job, _ = self.read_job(job_id, cfg)

        def fields(j: Job, _admin: str) -> dict[str, Any]:
            return {"state": j.state.value, "reason": j.reason, "nodes": list(j.allocation)}

        if job.state not in (JobState.RUNNING, JobState.SUSPENDED):
            raise Refused(f"job {job_id} is {job.state.value}: only running jobs can be preempted")
        warnings: list[str] = []
        between: Callable[[int], None] | None = None
        if mode is Mode.REQUEUE:
            commands = [["scontrol", "requeue", job_id]]
            expected: dict[str, Any] = {"state": "pending", "reason": None, "nodes": []}
        elif mode is Mode.CANCEL:
            commands = [["scancel", job_id]]
            expected = {"state": "cancelled", "reason": None, "nodes": []}
        elif mode is Mode.SUSPEND:
            commands = [["scontrol", "suspend", job_id]]
            expected = {"state": "suspended", "reason": None, "nodes": list(job.allocation)}
            warnings.append("a suspended Slurm job keeps its GPUs: nothing is freed for other jobs")
        else:
            # Graceful: SIGTERM to the batch shell and steps, give it time to checkpoint, requeue.
            commands = [["scancel", "--signal=TERM", "--full", job_id], ["scontrol", "requeue", job_id]]
            expected = {"state": "pending", "reason": None, "nodes": []}
            between = lambda _i: self._wait_stopped(job_id, self.graceful_wait_s, cfg)  # noqa: E731
            warnings.append(f"waits up to {self.graceful_wait_s:g}s between the signal and the requeue")
        target = JobState(expected["state"])
        return self._act(
            "preempt",
            job_id,
            fields(job, ""),
            expected,
            commands,
            warnings,
            dry_run,
            fields,
            cfg,
            between,
            settled=lambda j: j.state is target,
        )

    def _wait_stopped(self, job_id: str, wait_s: float, cfg: PreemptConfig) -> None:
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            job, _ = self.read_job(job_id, cfg)
            if job.state is not JobState.RUNNING:
                return
            time.sleep(1.0)

    # ------------------------------------------------------------------ preview
    def native_preview(self, snapshot: Snapshot, request: PreviewRequest) -> NativePlan | None:
        from gpuq.backends.slurm.preview import predict_preemption

        # The prediction needs the Preempt lists, PreemptExemptTime and GraceTime, which the
        # fingerprint check cannot see: a QOS table read from sacctmgr since the snapshot, or now.
        cfg = self._fresh_config(since=snapshot.taken_at)
        return predict_preemption(
            snapshot, request, cfg, snapshot.taken_at, urgent_qos=self.urgent_qos, raw_ids=self._raw_ids
        )


def _accounting_on(show: Mapping[str, str]) -> bool:
    """Whether the cluster keeps accounting in slurmdbd (then QOS come from sacctmgr)."""
    return "slurmdbd" in show.get("AccountingStorageType", "")


def _class_key_of(show: Mapping[str, str]) -> str:
    return "partition" if show.get("PreemptType") == "preempt/partition_prio" else "qos"


def _holder_runs(read: QueueRead) -> dict[str, tuple[float, tuple[str, ...], int]]:
    """The run of each holder still needing indexes, as squeue shows it: StartTime, nodes (sorted;
    the placeholder allocation's keys) and GPU count. A job without a StartTime or nodes is left
    out (never cached: read every time)."""
    need = set(read.needs_detail)
    if not need:
        return {}
    raw_ids = read.raw_ids
    out: dict[str, tuple[float, tuple[str, ...], int]] = {}
    for job in read.jobs:
        raw = raw_ids[job.id]
        if raw in need and job.start_time is not None and job.allocation:
            out[raw] = (job.start_time, tuple(sorted(job.allocation)), job.gpus)
    return out


def _held_after(read: QueueRead, runs: Mapping[str, tuple[float, tuple[str, ...], int]]) -> dict[str, Held]:
    """What to keep for the next read: the indexes of this read's holders that got complete ones
    (every index known, on the job's own nodes), by the run squeue showed. Nothing else, so it
    holds the current holders only and does not grow."""
    if not runs:
        return {}
    missing = set(read.needs_detail)
    raw_ids = read.raw_ids
    out: dict[str, Held] = {}
    for job in read.jobs:
        raw = raw_ids[job.id]
        run = runs.get(raw)
        if run is None or raw in missing or not job.allocation:
            continue
        alloc: dict[str, tuple[int, ...]] = {}
        for node, idx in job.allocation.items():
            known = tuple(i for i in idx if i is not None)
            if not known or len(known) != len(idx) or node not in run[1]:
                break  # an unknown index, or a node squeue did not show: read it next time too
            alloc[node] = known
        else:
            out[raw] = (run[0], run[1], run[2], alloc)
    return out


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


def _unset(text: str) -> str:
    return "" if text in ("(null)", "N/A") else text
