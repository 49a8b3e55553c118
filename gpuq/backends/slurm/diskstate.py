"""What one `SlurmBackend` adopts from its disk cache (`diskcache`), once, and writes back to it.

Adoption decides what an earlier invocation's reads are still good for: the config within
``config_ttl_s`` of its last check as it is, or, with a fingerprint and a QOS table younger than
``config_max_age_s``, as a candidate that `ConfigReader.preempt_config` checks before use; the
sacct window if it covers at least this backend's window (`HistoryCache.load_json`); the GPU
indexes of running jobs and the GPU-holder hint (`QueueReader.adopt`). Anything off is simply not
adopted: it is read again from the cluster.

Loading and saving take one lock, so a snapshot and an action (which saves the expired history)
never interleave their writes; each part is taken from its owner whole.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from gpuq.backends.slurm.configread import ConfigReader, accounting_on
from gpuq.backends.slurm.diskcache import SlurmDiskCache
from gpuq.backends.slurm.history import HistoryCache
from gpuq.backends.slurm.queueread import QueueReader
from gpuq.errors import GpuqError

__all__ = ["DiskState"]


class DiskState:
    """The disk cache of one backend; without one (``persist=False``) every call does nothing."""

    def __init__(
        self,
        cache: SlurmDiskCache | None,
        clock: Callable[[], float],
        configs: ConfigReader,
        history: HistoryCache,
        queue: QueueReader,
    ) -> None:
        self.cache = cache
        self.clock = clock
        self.configs = configs
        self.history = history
        self.queue = queue
        self._loaded = False
        self._lock = threading.Lock()

    def load(self) -> None:
        """Once per backend: adopt what an earlier invocation read, where still valid."""
        if self.cache is None or self._loaded:
            return
        with self._lock:
            if self._loaded:
                return
            parts = self.cache.load()
            src = parts.get("config")
            if src is not None and self.configs.state is None:
                self._adopt_config(src)
            hist = parts.get("history")
            if hist is not None and self.history.read_until is None:
                self.history.load_json(hist)
            self.queue.adopt(parts.get("queue", {}))
            self._loaded = True

    def _adopt_config(self, src: Mapping[str, Any]) -> None:
        """Adopt a config read by an earlier invocation: within the TTL of its last check as it is;
        older, but with a fingerprint and a QOS table younger than the max age, as a candidate
        that `ConfigReader.preempt_config` checks before use."""
        configs = self.configs
        try:
            now = self.clock()
            read_age = now - float(src["read_at"])
            age = now - float(src.get("checked_at", src["read_at"]))
            show, parts_text, qos_text = src["show"], src["partitions"], src["qos"]
            fingerprint = src.get("fingerprint")
            if fingerprint is not None and not isinstance(fingerprint, dict):
                return
            usable = 0 <= age < configs.ttl_s or (
                fingerprint is not None and age >= 0 and 0 <= read_age < configs.max_age_s
            )
            if not (usable and read_age >= age and isinstance(show, dict) and isinstance(parts_text, str)):
                return
            if not all(isinstance(k, str) and isinstance(v, str) for k, v in show.items()):
                return
            if qos_text is not None and not isinstance(qos_text, str):
                return
            if accounting_on(show) and qos_text is None:
                return
            cfg = configs.build_config(show, parts_text, qos_text)
        except (GpuqError, KeyError, TypeError, ValueError):
            return  # a corrupt cache is read again from the cluster
        configs.adopt(cfg, src, show, age)

    def save(self) -> None:
        """Write what this backend knows now (a part nobody has read yet is left out)."""
        if self.cache is None:
            return
        with self._lock:
            parts: dict[str, Any] = {}
            source = self.configs.source()
            if source is not None:
                parts["config"] = dict(source)
            if self.history.read_until is not None:
                parts["history"] = self.history.to_json()
            queue = self.queue.saved_part()
            if queue is not None:
                parts["queue"] = queue
            if parts:
                self.cache.save(parts)
