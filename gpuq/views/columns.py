"""What each table's columns are, for every front end: kind and importance.

An operator acts on the ids and numbers they read, so a front end that is short of width never
cuts an id (job, node, time), a number or its unit. It drops whole columns instead, the least
important first (highest `rank`; rank 0 is never dropped), wraps free text between words and
lists between items, and says what it hid. The column names are the headers (and the keys a
front end matches cells by); `TABLES` lists every table by name.
"""

from __future__ import annotations

from enum import Enum

import msgspec

__all__ = ["TABLES", "Column", "Kind", "TableSpec"]


class Kind(Enum):
    #: job id, node name, time: never wrapped, never cut
    ID = "id"
    #: a number with its unit (`4`, `7h22m`, `0.35`): right-aligned, never wrapped, never cut
    NUMBER = "number"
    #: a short word (user, class, state): never wrapped or cut, only dropped
    PLAIN = "plain"
    #: free text (reason, note, detail): wraps between words; only a word longer than the whole
    #: column is folded
    TEXT = "text"
    #: items (node names, GPU cells): wraps between items, never inside one
    LIST = "list"


class Column(msgspec.Struct, frozen=True):
    name: str
    kind: Kind
    #: 0: always shown; the highest rank is dropped first when a table does not fit
    rank: int = 0
    #: LIST: what goes between two items on a line
    sep: str = " "
    #: LIST: pad every item to the widest one, so that items line up from row to row (a grid)
    aligned: bool = False

    @property
    def right(self) -> bool:
        return self.kind is Kind.NUMBER

    @property
    def flexible(self) -> bool:
        """Whether the column can be narrower than its widest cell (by wrapping)."""
        return self.kind in (Kind.TEXT, Kind.LIST)


class TableSpec(msgspec.Struct, frozen=True):
    name: str
    columns: tuple[Column, ...]
    #: False: a key/value grid (`gpuq job`), no header line
    header: bool = True

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)


def _spec(name: str, *columns: Column, header: bool = True) -> TableSpec:
    ranks = [c.rank for c in columns if c.rank]
    if len(ranks) != len(set(ranks)):  # the drop order would depend on the column order
        raise ValueError(f"{name}: two columns share a rank")
    return TableSpec(name, columns, header)


ID, NUMBER, PLAIN, TEXT, LIST = Kind.ID, Kind.NUMBER, Kind.PLAIN, Kind.TEXT, Kind.LIST
C = Column

QUEUE = _spec(
    "queue",
    C("ID", ID), C("NAME", PLAIN, 9), C("USER", PLAIN, 3), C("TENANT", PLAIN, 8), C("CLASS", PLAIN, 2),
    C("STATE", PLAIN), C("GPUS", NUMBER), C("PRIO", NUMBER, 5), C("EFF", NUMBER, 1), C("WAIT", NUMBER),
    C("PREEMPT", NUMBER, 6), C("NODES", LIST, 7, sep=","), C("NOTE", TEXT, 4),
)  # fmt: skip
GPUS = _spec(
    "gpus",
    C("NODE", ID), C("MODEL", PLAIN, 4), C("STATE", PLAIN, 1), C("FREE", NUMBER, 2), C("GPUS", LIST, aligned=True),
    C("UNPLACED", LIST, 3),
)  # fmt: skip
SLA = _spec(
    "sla",
    C("CLASS", ID), C("STARTED", NUMBER, 3), C("PENDING", NUMBER, 1), C("P50", NUMBER, 5), C("P95", NUMBER, 2),
    C("P99", NUMBER, 4), C("MAX", NUMBER, 6), C("P95+PENDING", NUMBER), C("TARGET", NUMBER), C("SLA", PLAIN),
)  # fmt: skip
OVERVIEW_SLA = _spec(
    "overview-sla", C("CLASS", ID), C("PENDING", NUMBER, 1), C("P95", NUMBER), C("TARGET", NUMBER), C("SLA", PLAIN)
)
OVERVIEW_TOP = _spec(
    "overview-top",
    C("JOB", ID), C("CLASS", PLAIN), C("GPUS", NUMBER), C("EFF", NUMBER, 2), C("WAIT", NUMBER, 1), C("NEXT", TEXT),
)  # fmt: skip
OVERVIEW_EVENTS = _spec(
    "overview-events",
    C("TIME", ID), C("VICTIM", ID), C("BY", ID, 1), C("GPUS", NUMBER, 2), C("GPU-H LOST", NUMBER, 3),
    C("MODE", PLAIN, 4),
)  # fmt: skip
PREEMPTION_JOBS = _spec(
    "preemption-jobs",
    C("ID", ID), C("USER", PLAIN, 3), C("TENANT", PLAIN, 5), C("CLASS", PLAIN, 2), C("STATE", PLAIN, 1),
    C("24H", NUMBER), C("TOTAL", NUMBER), C("LAST", TEXT, 4),
)  # fmt: skip
PREEMPTION_EVENTS = _spec(
    "preemption-events",
    C("TIME", ID), C("VICTIM", ID), C("BY", ID, 1), C("GPUS", NUMBER, 2), C("GPU-H LOST", NUMBER, 3),
    C("MODE", PLAIN, 4), C("REASON", TEXT, 5),
)  # fmt: skip
PREVIEW_VICTIMS = _spec(
    "preview-victims",
    C("ID", ID), C("NODES", LIST, sep=","), C("GPUS", NUMBER), C("GPU-H LOST", NUMBER, 1), C("COST", NUMBER, 3),
    C("EFF PRIO", NUMBER, 2),
)  # fmt: skip
PREVIEW_SPARED = _spec("preview-spared", C("ID", ID), C("REASON", PLAIN), C("DETAIL", TEXT))
#: the native scheduler's own victims beside gpuq's (Slurm)
PREVIEW_NATIVE = _spec(
    "preview-native", C("ID", ID), C("NODES", LIST, 2, sep=","), C("GPUS", NUMBER), C("PRIO", NUMBER, 1),
    C("REASON", TEXT),
)  # fmt: skip
AUDIT = _spec(
    "audit",
    C("TIME", ID), C("OPERATOR", PLAIN, 3), C("CLUSTER", PLAIN, 4), C("ACTION", PLAIN), C("JOB", ID),
    C("RESULT", PLAIN), C("CHANGE", TEXT, 1), C("REASON", TEXT, 2),
)  # fmt: skip
JOB = _spec("job", C("FIELD", PLAIN), C("VALUE", TEXT), header=False)
#: `gpuq config show`: one dotted key (`console.refresh`, `clusters.prod.backend`) per row
CONFIG = _spec("config", C("KEY", ID), C("VALUE", TEXT))
#: the console's queue: what the CLI's shows, plus runtime, exemption and SLA status per job
CONSOLE_QUEUE = _spec(
    "console-queue",
    C("CLUSTER", PLAIN), C("ID", ID), C("NAME", PLAIN, 11), C("USER", PLAIN, 3), C("TENANT", PLAIN, 9),
    C("CLASS", PLAIN, 1), C("STATE", PLAIN), C("GPUS", NUMBER), C("PRIO", NUMBER, 6), C("EFF", NUMBER, 2),
    C("WAIT", NUMBER), C("RUN", NUMBER, 7), C("PREEMPT", NUMBER, 5), C("EXEMPT", NUMBER, 8), C("SLA", PLAIN, 4),
    C("NODES", LIST, 12, sep=","), C("REASON", TEXT, 10), C("NOTE", TEXT, 13),
)  # fmt: skip
#: `gpuq gpus --local`: the host's own GPUs (NVML)
HOST_GPUS = _spec(
    "host-gpus",
    C("GPU", ID), C("NAME", PLAIN, 2), C("UTIL", NUMBER), C("MEMORY", NUMBER), C("TEMP", NUMBER),
    C("PROCESSES", LIST, sep=", "), C("ERROR", TEXT, 1), C("UUID", ID, 3),
)  # fmt: skip
#: the console's SLA table: the CLI's, plus the cluster, the oldest pending wait and a P95 trend (PEND:
#: pending jobs)
CONSOLE_SLA = _spec(
    "console-sla",
    C("CLASS", ID), C("CLUSTER", PLAIN), C("STARTED", NUMBER, 6), C("PEND", NUMBER), C("OLDEST", NUMBER, 1),
    C("P50", NUMBER, 4), C("P95", NUMBER), C("P99", NUMBER, 2), C("MAX", NUMBER, 7), C("P95+PEND", NUMBER, 3),
    C("TARGET", NUMBER), C("SLA", PLAIN), C("TREND", PLAIN, 5),
)  # fmt: skip
#: the console's preemption ledger: the CLI's, plus the cluster and what is left of the daily cap
CONSOLE_PREEMPTION_JOBS = _spec(
    "console-preemption-jobs",
    C("CLUSTER", PLAIN), C("ID", ID), C("USER", PLAIN, 4), C("TENANT", PLAIN, 6), C("CLASS", PLAIN, 5),
    C("STATE", PLAIN, 1), C("24H", NUMBER), C("TOTAL", NUMBER, 2), C("CAP LEFT", NUMBER), C("LAST", NUMBER, 3),
)  # fmt: skip
#: the console's live preemption log: the CLI's, plus the cluster and how long ago
CONSOLE_PREEMPTION_EVENTS = _spec(
    "console-preemption-events",
    C("CLUSTER", PLAIN), C("TIME", ID), C("AGO", NUMBER, 4), C("VICTIM", ID), C("BY", ID, 1),
    C("GPUS", NUMBER, 3), C("GPU-H LOST", NUMBER, 2), C("MODE", PLAIN, 5), C("REASON", TEXT, 6),
)  # fmt: skip

#: every table, by name
TABLES: dict[str, TableSpec] = {
    t.name: t
    for t in (QUEUE, GPUS, SLA, OVERVIEW_SLA, OVERVIEW_TOP, OVERVIEW_EVENTS, PREEMPTION_JOBS,
              PREEMPTION_EVENTS, PREVIEW_VICTIMS, PREVIEW_SPARED, PREVIEW_NATIVE, AUDIT, JOB, CONSOLE_QUEUE, CONFIG,
              HOST_GPUS, CONSOLE_PREEMPTION_JOBS, CONSOLE_PREEMPTION_EVENTS, CONSOLE_SLA)
}  # fmt: skip
