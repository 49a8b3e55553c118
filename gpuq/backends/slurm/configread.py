"""The preemption set-up as `SlurmBackend` reads it, kept for a TTL and revalidated past it.

``scontrol show config``, ``scontrol show partition -o`` and ``sacctmgr show qos`` make a
`PreemptConfig` (parsed in `config`). Within ``config_ttl_s`` the last one is used as it is. Past
the TTL it is checked rather than re-read: ``show config``, ``show partition -o`` and ``show
assoc_mgr flags=qos`` (slurmctld answers all three from memory) give a fingerprint; when it equals
the one stored with the cached QOS table and that table is younger than ``config_max_age_s``, the
table is kept and ``sacctmgr show qos`` (several slurmdbd round trips) is not run. slurmctld's QOS
cache does not show the Preempt lists, PreemptExemptTime or GraceTime, so a change of only those
reaches a kept table within ``config_max_age_s``; whatever predicts or acts asks for a fresh read
(`ConfigReader.fresh_config`), sacctmgr included.

Thread safety: a snapshot and an action may read the config from two threads. Config reads run
one at a time (the second finds the first's result within the TTL, or reads fresh as asked), and
each result replaces the whole `ConfigState` at once, so a reader sees one read or the next,
never half of each.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from gpuq.backends.slurm.config import (
    QOS_FIELDS,
    PreemptConfig,
    assoc_mgr_qos_digest,
    parse_assoc_mgr_qos_names,
    parse_duration_text,
    parse_partitions,
    parse_qos,
    parse_show_config,
    parse_weights,
)
from gpuq.backends.slurm.jobs import ClassKey
from gpuq.backends.slurm.runner import Runner, parse_output
from gpuq.errors import PermissionDenied, Refused, Unreachable

__all__ = [
    "ASSOC_MGR_REUSE_S",
    "FINGERPRINT_KEYS",
    "ConfigReader",
    "ConfigState",
    "accounting_on",
    "class_key",
    "class_key_of",
]

#: The ``scontrol show config`` keys kept in the config's fingerprint (with the partitions and
#: slurmctld's QOS digest): a change in any of them makes `ConfigReader.preempt_config` read
#: sacctmgr again.
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


def accounting_on(show: Mapping[str, str]) -> bool:
    """Whether the cluster keeps accounting in slurmdbd (then QOS come from sacctmgr)."""
    return "slurmdbd" in show.get("AccountingStorageType", "")


def class_key_of(show: Mapping[str, str]) -> ClassKey:
    """What names a job's class, from ``scontrol show config`` alone (enough to parse the queue)."""
    return "partition" if show.get("PreemptType") == "preempt/partition_prio" else "qos"


def class_key(cfg: PreemptConfig) -> ClassKey:
    return "partition" if cfg.by_partition else "qos"


def _unset(text: str) -> str:
    return "" if text in ("(null)", "N/A") else text


@dataclass(frozen=True, slots=True)
class ConfigState:
    """A config and what it was built from; replaced whole, never changed."""

    config: PreemptConfig
    #: `time.monotonic()` of the read or check that made it (its TTL runs from here)
    at: float
    #: what it was built from, as the disk cache keeps it: ``read_at`` (epoch of the sacctmgr
    #: read), ``checked_at`` (epoch of the last read or fingerprint check), ``show``,
    #: ``partitions``, ``qos`` (the texts) and ``fingerprint``
    source: Mapping[str, Any]
    #: epoch at which this process started the sacctmgr read behind it (None: adopted from the
    #: disk cache); predictions and actions use only a table read since what they act on
    read_here: float | None


class ConfigReader:
    """One cluster's preemption config: read, kept for ``ttl_s``, revalidated past it."""

    def __init__(
        self,
        runner: Runner,
        clock: Callable[[], float],
        *,
        ttl_s: float,
        max_age_s: float,
        prepare: Callable[[], None],
        named: Callable[[str], None],
    ) -> None:
        self.runner = runner
        self.clock = clock
        self.ttl_s = ttl_s
        #: the longest a QOS table read from sacctmgr is kept on an unchanged fingerprint
        self.max_age_s = float(max_age_s)
        # Called before a cached read: adopts what an earlier invocation left on disk (once).
        self._prepare = prepare
        # Told the cluster's name once ``show config`` gives it.
        self._named = named
        self._state: ConfigState | None = None
        #: how the last read past the TTL went: "read" (sacctmgr), "kept" (fingerprint unchanged,
        #: QOS table kept) or "" (none yet)
        self.check = ""
        self._lock = threading.Lock()  # one config read at a time
        self._show_lock = threading.Lock()
        self._show: tuple[float, dict[str, str]] | None = None
        self._assoc_lock = threading.Lock()
        self._assoc_memo: tuple[float, str | None] | None = None

    @property
    def state(self) -> ConfigState | None:
        return self._state

    def source(self) -> Mapping[str, Any] | None:
        """What the current config was built from (the disk cache's ``config`` part), if any."""
        state = self._state
        return None if state is None else state.source

    # ------------------------------------------------------------------ reads
    def show_config(self, *, fresh: bool = False) -> dict[str, str]:
        """``scontrol show config`` (slurmctld answers from memory); cached like the rest."""
        if not fresh:
            self._prepare()
        with self._show_lock:  # a snapshot asks from several threads at once: read it once
            cached = self._show
            if cached is not None and not fresh and time.monotonic() - cached[0] < self.ttl_s:
                return cached[1]
            text = self.runner.run(["scontrol", "show", "config"])
            show = parse_output("scontrol show config", lambda: parse_show_config(text))
            self._named(show.get("ClusterName", "") or "slurm")
            self._show = (time.monotonic(), show)
            return show

    def preempt_config(self, *, fresh: bool = False) -> PreemptConfig:
        """PreemptType/Mode/Parameters/ExemptTime, QOS and partitions; within ``ttl_s`` of the last
        read or check as they were, past it checked against slurmctld (see the module docstring).
        ``fresh=True`` always reads sacctmgr (predictions, actions)."""
        if not fresh:
            self._prepare()
        with self._lock:
            return self._read(fresh)

    def fresh_config(self, since: float | None = None) -> PreemptConfig:
        """A config whose QOS table this process read from sacctmgr at or after ``since`` (epoch),
        else a fresh read: what predictions and actions use (never a table kept on a fingerprint)."""
        state = self._state
        if since is not None and state is not None and (state.read_here or -1.0) >= since:
            return state.config
        return self.preempt_config(fresh=True)

    def _read(self, fresh: bool) -> PreemptConfig:
        now = time.monotonic()
        state = self._state
        if state is not None and not fresh and now - state.at < self.ttl_s:
            return state.config
        started = self.clock()
        src = state.source if state is not None else None
        keep = (
            not fresh
            and src is not None
            and src.get("fingerprint") is not None
            and 0 <= started - float(src["read_at"]) < self.max_age_s
        )
        with ThreadPoolExecutor(max_workers=4) as pool:
            f_show = pool.submit(self.show_config, fresh=fresh)
            f_parts = pool.submit(self.runner.run, ["scontrol", "show", "partition", "-o"])
            f_assoc = pool.submit(self.assoc_mgr_qos)

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
            self.check = "kept" if kept else "read"
        if accounting_on(show) and qos_text is None:
            qos_text = self._read_qos(quiet=False)  # accounting is on: its error is the operator's to see
        cfg = self.build_config(show, parts_text, qos_text)
        read_here = state.read_here if kept and state is not None else started
        if not kept:
            named = sorted(q.split(" ", 1)[0].rpartition("(")[0] for q in fingerprint["qos"]) if fingerprint else []
            if fingerprint is not None and sorted(cfg.qos) != named:
                fingerprint = None  # slurmctld's QOS cache and slurmdbd disagree: not a usable check
        source = {
            "read_at": read_at,
            "checked_at": started,
            "show": show,
            "partitions": parts_text,
            "qos": qos_text,
            "fingerprint": fingerprint,
        }
        self._state = ConfigState(cfg, now, source, read_here)
        return cfg

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

    def assoc_mgr_qos(self) -> str | None:
        """``scontrol show assoc_mgr flags=qos`` (slurmctld's QOS cache); None when refused. One
        read serves every caller within `ASSOC_MGR_REUSE_S` (the config check and sacct's QOS
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

    def qos_names(self) -> dict[str, str] | None:
        """QOS id -> name from slurmctld's cache (no slurmdbd hop); None when slurmctld has none or
        will not say (sacct then prints names)."""
        text = self.assoc_mgr_qos()
        if text is None:
            return None
        return parse_output("scontrol show assoc_mgr flags=qos", lambda: parse_assoc_mgr_qos_names(text)) or None

    def _fingerprint(self, show: Mapping[str, str], parts_text: str, assoc: str | None) -> dict[str, Any] | None:
        """What the cached QOS table is checked against (None: slurmctld shows no QOS cache to us,
        so there is nothing to check against and sacctmgr is read each time)."""
        if assoc is None:
            return None
        digest = parse_output("scontrol show assoc_mgr flags=qos", lambda: assoc_mgr_qos_digest(assoc))
        if not digest and accounting_on(show):
            return None  # slurmctld shows no QOS while slurmdbd has them: nothing to compare
        return {"show": {k: show.get(k, "") for k in FINGERPRINT_KEYS}, "partitions": parts_text, "qos": digest}

    def build_config(self, show: Mapping[str, str], parts_text: str, qos_text: str | None) -> PreemptConfig:
        parts = parse_output("scontrol show partition -o", lambda: parse_partitions(parts_text))
        qos: dict[str, Any] = {}
        if accounting_on(show) and qos_text is not None:
            text = qos_text
            qos = parse_output("sacctmgr show qos", lambda: parse_qos(text))
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
            weights=parse_weights(show),
        )

    # ------------------------------------------------------------------ adoption
    def adopt(self, cfg: PreemptConfig, source: Mapping[str, Any], show: dict[str, str], age: float) -> bool:
        """Take a config an earlier invocation read (`diskstate` decides whether it may be), as if
        read or checked ``age`` seconds ago; False (nothing changed) when one was read meanwhile."""
        at = time.monotonic() - age
        with self._lock:
            if self._state is not None:
                return False
            with self._show_lock:
                self._show = (at, show)
            self._state = ConfigState(cfg, at, dict(source), None)
        self._named(show.get("ClusterName", "") or "slurm")
        return True
