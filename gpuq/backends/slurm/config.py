"""The cluster's preemption set-up, read rather than assumed: ``scontrol show config``,
``sacctmgr show qos`` and ``scontrol show partition -o``; and QOS ids from slurmctld's own cache
(``scontrol show assoc_mgr flags=qos``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gpuq.backends.slurm.values import NONE_TEXT, expand_hostlist, whole
from gpuq.model import MAX_PRIORITY

__all__ = [
    "MULTIFACTOR",
    "QOS_FIELDS",
    "Partition",
    "PreemptConfig",
    "PriorityWeights",
    "Qos",
    "assoc_mgr_qos_digest",
    "parse_assoc_mgr_qos_names",
    "parse_duration_text",
    "parse_partitions",
    "parse_qos",
    "parse_weights",
    "parse_show_config",
]

MULTIFACTOR = "priority/multifactor"
_WEEK = 7 * 86400.0

#: ``sacctmgr -n -P show qos format=...`` columns.
QOS_FIELDS = ("Name", "Priority", "Preempt", "PreemptExemptTime", "PreemptMode", "GraceTime")


def parse_duration_text(text: str) -> float | None:
    """Slurm durations: ``00:10:00``, ``1-00:00:00``, ``10:00`` (mm:ss), ``5`` (minutes); None if unset."""
    text = text.strip()
    if not text or text in NONE_TEXT:
        return None
    days = 0
    if "-" in text:
        d, _, text = text.partition("-")
        days = whole(d, "days of a duration", 1_000_000)
    parts = [whole(p.strip(), "duration", 1_000_000_000) for p in text.split(":")]
    if len(parts) == 3:
        secs = parts[0] * 3600 + parts[1] * 60 + parts[2]
    elif len(parts) == 2:
        secs = parts[0] * 60 + parts[1]
    else:
        secs = parts[0] * 60
    return float(days * 86400 + secs)


@dataclass(frozen=True, slots=True)
class Qos:
    name: str
    priority: int = 0
    preempt: frozenset[str] = frozenset()
    exempt_time_s: float | None = None
    preempt_mode: str = ""  # empty: the cluster's PreemptMode applies
    grace_time_s: float = 0.0


@dataclass(frozen=True, slots=True)
class Partition:
    name: str
    nodes: tuple[str, ...] = ()
    priority_tier: int = 1
    preempt_mode: str = ""
    default: bool = False
    grace_time_s: float = 0.0
    #: PriorityJobFactor: the partition factor of the multifactor priority (`priority`)
    job_factor: int = 1


def _int(text: str) -> int:
    text = text.strip()
    return int(text) if text.isdigit() else 0


@dataclass(frozen=True, slots=True)
class PriorityWeights:
    """The ``scontrol show config`` keys the multifactor formula reads."""

    priority_type: str = "priority/basic"
    age: int = 0
    assoc: int = 0
    fairshare: int = 0
    job_size: int = 0
    partition: int = 0
    qos: int = 0
    tres: str = ""
    max_age_s: float = _WEEK
    favor_small: bool = False
    flags: frozenset[str] = frozenset()
    site_plugin: str = ""

    @property
    def multifactor(self) -> bool:
        return self.priority_type == MULTIFACTOR

    def normalised(self, factor: str) -> bool:
        """Whether a factor is divided by its highest value (``PriorityFlags=NO_NORMAL_ALL``,
        ``NO_NORMAL_QOS``, ``NO_NORMAL_PART``: not)."""
        return not ({"NO_NORMAL_ALL", f"NO_NORMAL_{factor}"} & self.flags)


def parse_weights(show: Mapping[str, str]) -> PriorityWeights:
    """The multifactor weights from ``scontrol show config`` (`config.parse_show_config`)."""

    def text(key: str) -> str:
        value = show.get(key, "").strip()
        return "" if value in NONE_TEXT else value

    max_age = parse_duration_text(show.get("PriorityMaxAge", ""))
    return PriorityWeights(
        priority_type=text("PriorityType") or "priority/basic",
        age=_int(show.get("PriorityWeightAge", "")),
        assoc=_int(show.get("PriorityWeightAssoc", "")),
        fairshare=_int(show.get("PriorityWeightFairShare", "")),
        job_size=_int(show.get("PriorityWeightJobSize", "")),
        partition=_int(show.get("PriorityWeightPartition", "")),
        qos=_int(show.get("PriorityWeightQOS", "")),
        tres=text("PriorityWeightTRES"),
        max_age_s=_WEEK if max_age is None else max_age,
        favor_small=show.get("PriorityFavorSmall", "").strip().lower() in ("yes", "1", "true"),
        flags=frozenset(f.strip().upper() for f in show.get("PriorityFlags", "").split(",") if f.strip()),
        site_plugin=text("PrioritySiteFactorPlugin"),
    )


@dataclass(frozen=True, slots=True)
class PreemptConfig:
    """What decides slurmctld's preemption choices."""

    preempt_type: str = "preempt/none"
    preempt_mode: str = "OFF"
    preempt_parameters: str = ""
    scheduler_parameters: str = ""
    exempt_time_s: float | None = None
    version: str = ""
    controller: str = ""
    qos: Mapping[str, Qos] = field(default_factory=dict)
    partitions: Mapping[str, Partition] = field(default_factory=dict)
    #: the multifactor weights (`priority.parse_weights` of ``scontrol show config``)
    weights: PriorityWeights = field(default_factory=PriorityWeights)

    @property
    def by_qos(self) -> bool:
        return self.preempt_type == "preempt/qos"

    @property
    def by_partition(self) -> bool:
        return self.preempt_type == "preempt/partition_prio"

    @property
    def preemption_off(self) -> bool:
        """Whether slurmctld preempts nothing: PreemptType preempt/none (or unset), or the
        cluster's PreemptMode OFF."""
        return self.preempt_type in ("", "preempt/none") or self.preempt_mode.upper().startswith("OFF")

    def mode_of(self, own: str = "") -> str:
        """The PreemptMode that applies: a QOS's or partition's own (`own`), else the cluster's;
        upper case, without the GANG/WITHIN flags ("GANG,SUSPEND" -> "SUSPEND"); "OFF" if none."""
        parts = [p for p in (own or self.preempt_mode).upper().split(",") if p and p not in ("GANG", "WITHIN")]
        return parts[0] if parts else "OFF"

    @property
    def youngest_first(self) -> bool:
        return "youngest_first" in self.preempt_parameters or "preempt_youngest_first" in self.scheduler_parameters

    @property
    def strict_order(self) -> bool:
        return "strict_order" in self.preempt_parameters or "preempt_strict_order" in self.scheduler_parameters

    @property
    def reorder_count(self) -> int:
        for text in (self.preempt_parameters, self.scheduler_parameters):
            for item in text.split(","):
                key, _, value = item.partition("=")
                if key.strip() in ("reorder_count", "preempt_reorder_count") and value.strip().isdigit():
                    return int(value)
        return 1

    @property
    def default_partition(self) -> str | None:
        for part in self.partitions.values():
            if part.default:
                return part.name
        return None


def parse_show_config(text: str) -> dict[str, str]:
    """``scontrol show config``: ``Key = value`` lines."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key and not key.startswith(" "):
            out[key.strip()] = value.strip()
    return out


def parse_qos(text: str) -> dict[str, Qos]:
    """``sacctmgr -n -P show qos format=Name,Priority,Preempt,PreemptExemptTime,PreemptMode,GraceTime``."""
    out: dict[str, Qos] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        f = (line.split("|") + [""] * len(QOS_FIELDS))[: len(QOS_FIELDS)]
        name = f[0].strip()
        preempt = frozenset(p for p in f[2].split(",") if p)
        out[name] = Qos(
            name=name,
            priority=whole(f[1].strip(), "QOS Priority", MAX_PRIORITY) if f[1].strip() else 0,
            preempt=preempt,
            exempt_time_s=parse_duration_text(f[3]),
            preempt_mode=f[4].strip().upper(),
            grace_time_s=parse_duration_text(f[5]) or 0.0,
        )
    return out


def parse_assoc_mgr_qos_names(text: str) -> dict[str, str]:
    """QOS id -> name from ``scontrol show assoc_mgr flags=qos`` (``QOS=normal(1)`` record heads).

    slurmctld answers from memory, without the slurmdbd round trip ``sacctmgr`` needs. Its QOS
    records carry only PreemptMode and Priority of the preemption set-up (no Preempt list, no
    PreemptExemptTime or GraceTime, checked on 22.05), so `parse_qos` stays the source of those;
    this map lets ``sacct`` print QOSRAW instead of QOS (see `gpuq.backends.slurm.sacct`).
    Empty when slurmctld caches no QOS ("No QOS currently cached in Slurm.").
    """
    out: dict[str, str] = {}
    for line in text.splitlines():
        if not line.startswith("QOS="):
            continue
        head = line[4:].split(" ", 1)[0]  # "normal(1)"; with -o the record's other keys follow
        name, sep, rest = head.rpartition("(")
        qos_id = rest[:-1] if rest.endswith(")") else ""
        if not (sep and name and qos_id.isdigit()):
            raise ValueError(f"unexpected QOS record head {head!r}")
        out[qos_id] = name
    return out


def assoc_mgr_qos_digest(text: str) -> list[str]:
    """What slurmctld's QOS cache (``scontrol show assoc_mgr flags=qos``) shows of the preemption
    set-up: ``name(id) Priority=P PreemptMode=M`` per QOS, sorted; usage counters and limits left
    out (they change with every job). slurmdbd pushes each QOS change to slurmctld, so this list
    changes when a QOS is added, removed, renamed or gets another Priority or PreemptMode; it does
    not show the Preempt list, PreemptExemptTime or GraceTime. ValueError on a malformed record head.
    """
    out: list[str] = []
    head = ""
    keys: dict[str, str] = {}

    def close() -> None:
        if head:
            out.append(f"{head} Priority={keys.get('Priority', '')} PreemptMode={keys.get('PreemptMode', '')}")

    for line in text.splitlines():
        if line.startswith("QOS="):
            close()
            head = line[4:].split(" ", 1)[0]
            name, sep, rest = head.rpartition("(")
            if not (sep and name and rest.endswith(")") and rest[:-1].isdigit()):
                raise ValueError(f"unexpected QOS record head {head!r}")
            keys = {}
            # With -o the record is one line: its keys follow the head.
            for token in line.split()[1:]:
                key, eq, value = token.partition("=")
                if eq and key in ("Priority", "PreemptMode"):
                    keys.setdefault(key, value)
            continue
        if not head:
            continue
        stripped = line.strip()
        key, eq, value = stripped.partition("=")
        if eq and key in ("Priority", "PreemptMode"):
            keys.setdefault(key, value.strip())
    close()
    return sorted(out)


def parse_partitions(text: str) -> dict[str, Partition]:
    """``scontrol show partition -o`` (one line per partition)."""
    out: dict[str, Partition] = {}
    for line in text.splitlines():
        if not line.startswith("PartitionName="):
            continue
        f = dict(tok.partition("=")[::2] for tok in line.split() if "=" in tok)
        name = f["PartitionName"]
        out[name] = Partition(
            name=name,
            nodes=expand_hostlist(f.get("Nodes", "")),
            priority_tier=whole(f.get("PriorityTier", "1") or "1", "PriorityTier", 65535),
            preempt_mode=f.get("PreemptMode", "").upper(),
            default=f.get("Default", "NO") == "YES",
            grace_time_s=float(whole(f.get("GraceTime", "0") or "0", "GraceTime", 1_000_000_000)),
            job_factor=whole(f.get("PriorityJobFactor", "1") or "1", "PriorityJobFactor", 65535),
        )
    return out
