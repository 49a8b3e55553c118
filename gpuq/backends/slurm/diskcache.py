"""What a Slurm backend keeps between gpuq invocations: ``$XDG_CACHE_HOME/gpuq/slurm-<key>.json``.

Each ``gpuq`` command is a new process, so the in-process caches (the preemption set-up, the
sacct time window) would start empty every time and every ``gpuq queue`` would pay two slurmdbd
round trips (``sacctmgr show qos``, ``sacct``). This file keeps them:

- ``config``: the ``scontrol show config`` keys and the ``scontrol show partition -o`` /
  ``sacctmgr show qos`` texts, when sacctmgr was read (``read_at``) and when the whole was last
  read or checked (``checked_at``: valid for the backend's ``config_ttl_s``), and the fingerprint
  it is checked against past that (slurmctld's view of the QOS, see `configread.ConfigReader.preempt_config`;
  the QOS table is kept for at most ``config_max_age_s`` on an unchanged fingerprint);
- ``history``: the sacct records of the window, when it was read, and the restart counts that
  read accounts for per queued job (`HistoryCache.to_json`, `HistoryCache.note_queue`);
- ``queue``: the GPU indexes of the jobs that held GPUs at the last queue read (``held``: by raw
  job id, with the StartTime, node list and GPU count squeue showed for that run; `held_to_json`),
  and how many holders that read had to read indexes for (``gpu_holders``): past the backend's
  ``detail_one_by_one_max`` the next read starts the full ``scontrol show job -d -o`` beside
  squeue. A held entry is used only for a job squeue shows with the same StartTime, nodes and GPU
  count; the count is only a hint: a wrong one costs time, never data (see `queueread`).

One file per cluster: the key is the ``-M`` cluster name and the absolute ``SLURM_CONF`` path;
the file also records slurm.conf's size and modification time, and anything read under another
slurm.conf (edited, or a lab switched between set-ups) is dropped. The file is written whole to a
temporary file and renamed over the old one, so a reader sees the old or the new file, never half
of one; a missing, unreadable or corrupt file is simply read again from the cluster. Nothing in
it is ever used to act on a job: actions re-read the job itself.
"""

from __future__ import annotations

import contextlib
import json
import os
import zlib
from pathlib import Path
from typing import Any

from gpuq import locations

__all__ = ["FORMAT", "Held", "SlurmDiskCache", "held_from_json", "held_to_json", "slurm_conf_path"]

#: Bumped when the layout changes; a file of another format is ignored.
FORMAT = "gpuq.slurm-cache/v2"


#: One GPU-holding job's run as squeue showed it -- StartTime (epoch), its nodes (sorted), its GPU
#: count, whether it was suspended -- and what ``scontrol show job -d`` gave for that run: the
#: per-node GPU indexes, and (SuspendTime, SecsPreSuspend) when Slurm had suspended it this run.
Held = tuple[float, tuple[str, ...], int, dict[str, tuple[int, ...]], bool, tuple[float, float] | None]


def held_to_json(held: dict[str, Held]) -> dict[str, Any]:
    """``held`` as JSON: ``{raw id: [start, [nodes], gpus, {node: [indexes]}, suspended,
    [SuspendTime, SecsPreSuspend] or null]}``."""
    return {
        raw: [start, list(nodes), gpus, {n: list(i) for n, i in alloc.items()}, suspended,
              None if suspension is None else list(suspension)]  # fmt: skip
        for raw, (start, nodes, gpus, alloc, suspended, suspension) in held.items()
    }


def held_from_json(data: object) -> dict[str, Held] | None:
    """The ``held`` part as written by `held_to_json`; None (nothing known) if any of it is off."""
    if not isinstance(data, dict):
        return None
    out: dict[str, Held] = {}
    try:
        for raw, (start, nodes, gpus, alloc, suspended, suspension) in data.items():
            if (
                not isinstance(raw, str)
                or isinstance(start, bool)
                or not isinstance(start, int | float)
                or not isinstance(nodes, list)
                or not all(isinstance(n, str) for n in nodes)
                or isinstance(gpus, bool)
                or not isinstance(gpus, int)
                or not isinstance(alloc, dict)
                or not alloc
                or not isinstance(suspended, bool)
                or not (suspension is None or _two_numbers(suspension))
            ):
                return None
            idx: dict[str, tuple[int, ...]] = {}
            for node, ids in alloc.items():
                if not isinstance(ids, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
                    return None
                idx[node] = tuple(ids)
            pair = None if suspension is None else (float(suspension[0]), float(suspension[1]))
            out[raw] = (float(start), tuple(nodes), gpus, idx, suspended, pair)
    except (TypeError, ValueError):  # an entry that is not a 6-item list
        return None
    return out


def _two_numbers(value: object) -> bool:
    return (isinstance(value, list) and len(value) == 2
            and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value))  # fmt: skip


def slurm_conf_path() -> str:
    """The slurm.conf the Slurm CLIs will read (``SLURM_CONF``, else the default path)."""
    return os.path.abspath(os.environ.get("SLURM_CONF") or "/etc/slurm/slurm.conf")


def _conf_stamp(conf: str) -> list[int]:
    try:
        st = os.stat(conf)
    except OSError:
        return [-1, -1]
    return [st.st_size, st.st_mtime_ns]


class SlurmDiskCache:
    """One cluster's cache file. ``load`` never raises; ``save`` never raises either (a read-only
    home or a full disk only costs speed)."""

    def __init__(self, cluster: str, directory: Path | None = None) -> None:
        self.conf = slurm_conf_path()
        # A short name; the file itself records the cluster and path, so a collision is a miss.
        name = cluster + "\0" + self.conf
        key = f"{zlib.crc32(name.encode()):08x}"
        self.path = (directory or locations.cache_dir()) / f"slurm-{key}.json"
        self.cluster = cluster

    def load(self) -> dict[str, Any]:
        """The parts (``config``, ``history``, ``queue``) still valid for this slurm.conf; {} if none."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError, UnicodeDecodeError):
            return {}
        if (
            not isinstance(data, dict)
            or data.get("format") != FORMAT
            or data.get("cluster") != self.cluster
            or data.get("conf") != self.conf
            or data.get("conf_stamp") != _conf_stamp(self.conf)
        ):
            return {}
        return {k: v for k, v in data.items() if k in ("config", "history", "queue") and isinstance(v, dict)}

    def save(self, parts: dict[str, Any]) -> bool:
        """Write ``parts`` atomically (temporary file + rename); False if it could not be written."""
        data = {
            "format": FORMAT,
            "cluster": self.cluster,
            "conf": self.conf,
            "conf_stamp": _conf_stamp(self.conf),
            **parts,
        }
        import tempfile  # only when writing (not every invocation writes)

        tmp = ""
        try:
            locations.ensure_dir(self.path.parent)
            fd, tmp = tempfile.mkstemp(prefix=self.path.name + ".", suffix=".tmp", dir=self.path.parent)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(data, fh, separators=(",", ":"))
            os.replace(tmp, self.path)
            return True
        except (OSError, TypeError, ValueError):
            if tmp:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
            return False
