"""The backend contract: one small interface, with what a backend can do given as data.

Backends are the only code that touches subprocesses, HTTP, NVML or other programs' files. Each
turns its world into `gpuq.model` objects, says what it can do (`Capabilities`: which actions,
the priorities an operator may set, whether it predicts its own scheduler, whether it exports
its job history as a trace (`Backend.export_history`), the options it takes and their types)
and runs actions in two steps: `prepare_*` reads what it needs and fixes the
exact external calls into an `ActionPlan` without changing anything; `apply` makes exactly those
calls, after checking that the job is still as it was (`ActionPlan.guard`), and reports what
changed. The service (`gpuq.service`) validates requests, writes the audit log and asks the
operator in between. Backends raise only `gpuq.errors` exceptions.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar

import msgspec

from gpuq.errors import BadInput, Refused
from gpuq.model import Node, PreviewRequest, Snapshot
from gpuq.policy.config import Mode, Policy

if TYPE_CHECKING:
    from gpuq.trace.record import TraceJob

__all__ = [
    "ACTIONS",
    "ActionPlan",
    "ActionResult",
    "ApiRequest",
    "Backend",
    "Foreseen",
    "Capabilities",
    "NativePlan",
    "NativePriority",
    "NativeVictim",
    "OptionSpec",
    "PriorityChange",
]

#: The actions gpuq knows; a backend lists the ones it can run in `Capabilities.actions`.
ACTIONS = ("bump", "exempt", "preempt", "resume")

_NO_FIELDS: Mapping[str, Any] = MappingProxyType({})


class ApiRequest(msgspec.Struct, frozen=True):
    """One request to an API server (Kubernetes), as the audit log records it."""

    method: str
    path: str
    body: Any = None
    #: the body's media type where it says how the body applies (a patch's: merge, JSON, strategic)
    content_type: str | None = None

    def to_dict(self) -> dict[str, Any]:
        doc = {"method": self.method, "path": self.path, "body": self.body}
        if self.content_type is not None:
            doc["content_type"] = self.content_type
        return doc


class PriorityChange(msgspec.Struct, frozen=True):
    """A bump, validated by the service: exactly one of `to`, `by`, `urgent`."""

    to: int | None = None
    by: int | None = None
    urgent: bool = False

    def new_priority(self, current: int) -> int | None:
        """The base priority this change sets on a job now at `current` (None: urgency only)."""
        if self.to is not None:
            return self.to
        if self.by is not None:
            return current + self.by
        return None


class Foreseen(msgspec.Struct, frozen=True):
    """What the operator was shown that an action would set off: for a bump of a pending job,
    the jobs its preview would preempt (with their nodes) and the nodes it would start on."""

    victims: Mapping[str, tuple[str, ...]]
    nodes: tuple[str, ...] = ()


class ActionPlan(msgspec.Struct, frozen=True):
    """One action as a backend will carry it out, fixed when it was prepared.

    `before`/`after`: the job fields the action changes, now and as expected after (`after` of a
    relative bump is recomputed by `apply`, which applies it to the priority found then).
    `commands` are the exact command lines (argument lists), `requests` the exact API requests.
    `guard`: job fields that must be unchanged when the plan is applied (else `JobChanged`).
    `payload`: what `apply` needs, private to the backend that prepared the plan.
    `foreseen`: set by the service, what the operator was shown the action would set off (a
    bump's preview); a backend that schedules itself (the demo) carries that out while it is
    still valid, and every backend that can tell reports what really happened
    (`ActionResult.preempted`). `noop`: nothing would change (`message` says why: e.g. `bump
    --urgent` of a job already above what it would set); confirmed and audited, never applied.
    """

    action: str
    target: str
    before: Mapping[str, Any]
    after: Mapping[str, Any]
    commands: tuple[tuple[str, ...], ...] = ()
    requests: tuple[ApiRequest, ...] = ()
    warnings: tuple[str, ...] = ()
    message: str = ""
    guard: Mapping[str, Any] = msgspec.field(default_factory=lambda: _NO_FIELDS)
    payload: Mapping[str, Any] = msgspec.field(default_factory=lambda: _NO_FIELDS)
    foreseen: Foreseen | None = None
    noop: bool = False


class ActionResult(msgspec.Struct, frozen=True):
    """What an applied action did: the job fields before and after, the calls it made, and
    `preempted`: the jobs it made the scheduler preempt, with their nodes (None: the backend
    cannot tell at once, as Slurm, whose scheduler acts later)."""

    action: str
    target: str
    before: Mapping[str, Any]
    after: Mapping[str, Any]
    commands: tuple[tuple[str, ...], ...] = ()
    requests: tuple[ApiRequest, ...] = ()
    warnings: tuple[str, ...] = ()
    message: str = ""
    preempted: Mapping[str, tuple[str, ...]] | None = None


class NativeVictim(msgspec.Struct, frozen=True):
    """A job the native scheduler itself would preempt, and why it picks it."""

    id: str
    nodes: tuple[str, ...]
    gpus: int
    #: the scheduler's own preemption priority of the job (Slurm: QOS priority or PriorityTier)
    priority: int | None
    reason: str
    #: backend facts shown beside it (Slurm: qos, partition, mode)
    details: Mapping[str, str] = msgspec.field(default_factory=lambda: _NO_FIELDS)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "nodes": list(self.nodes),
            "gpus": self.gpus,
            "priority": self.priority,
            "reason": self.reason,
            **self.details,
        }


class NativePlan(msgspec.Struct, frozen=True):
    """What the native scheduler itself would preempt (e.g. slurmctld's own choice)."""

    would_preempt: bool
    nodes: tuple[str, ...] = ()
    victims: tuple[NativeVictim, ...] = ()
    notes: tuple[str, ...] = ()
    #: who decides, where it is not the backend's usual scheduler (``Kueue`` for a workload it
    #: holds back); views name it beside "native scheduler"
    scheduler: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "would_preempt": self.would_preempt,
            "nodes": list(self.nodes),
            "victims": [v.to_dict() for v in self.victims],
            "notes": list(self.notes),
        }
        if self.scheduler:
            out["scheduler"] = self.scheduler
        return out


class NativePriority(msgspec.Struct, frozen=True):
    """The priority the native scheduler would give a request now (`Backend.native_priority`):
    `priority`, and `how` it was found, one sentence a preview says first (what was estimated;
    for a held job, that it is held and why)."""

    priority: int
    how: str


_KIND_NAMES = {int: "a whole number", float: "a number", str: "a string", bool: "true or false"}


class OptionSpec(msgspec.Struct, frozen=True):
    """An option a backend takes from the config file or the command line, and its type."""

    kind: type
    help: str
    #: the smallest value allowed (numbers); `exclusive`: the value must be greater
    minimum: float | None = None
    exclusive: bool = False
    #: the largest value allowed (numbers): what can exist, so nothing downstream overflows
    maximum: float | None = None

    def check(self, value: Any, where: str) -> Any:
        """`value` converted to the option's type; BadInput naming `where` (the config file's
        line and key, or the flag) when it is not one, or when a number is outside its range."""
        kind = self.kind
        ok = isinstance(value, kind) and not (kind is not bool and isinstance(value, bool))
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            ok = True
            try:
                value = float(value)
            except OverflowError:  # an integer past any float: out of every range below
                value = float("inf")
        if not ok:
            raise BadInput(f"{where}: expected {_KIND_NAMES.get(kind, kind.__name__)}, got {_shown(value)}")
        if kind is float and (value != value or value in (float("inf"), float("-inf"))):
            allowed = f" (allowed:{self._range()})" if self.minimum is not None or self.maximum is not None else ""
            raise BadInput(f"{where}: expected a finite number, got {_shown(value)}{allowed}")
        low, high = self.minimum, self.maximum
        if kind in (int, float) and (
            (low is not None and (value < low or (self.exclusive and value == low)))
            or (high is not None and value > high)
        ):
            raise BadInput(f"{where}: must be{self._range()} ({self.help}), got {_shown(value)}")
        return value

    def _range(self) -> str:
        low, high = self.minimum, self.maximum
        parts = []
        if low is not None:
            parts.append(f"> {_bound(low)}" if self.exclusive else f">= {_bound(low)}")
        if high is not None:
            parts.append(f"<= {_bound(high)}")
        return " " + " and ".join(parts) if parts else ""


def _bound(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _shown(value: Any) -> str:
    """A value for an error message (an integer of thousands of digits is not printed whole)."""
    if isinstance(value, int) and value.bit_length() > 128:
        return f"an integer of about {int(value.bit_length() * 0.30103)} digits"
    text = repr(value)
    return text if len(text) <= 40 else text[:36] + "…"


class Capabilities(msgspec.Struct, frozen=True):
    """What a backend can do, as data (front ends and the service read this, never a name)."""

    #: the actions it can run (a subset of `ACTIONS`); empty for a read-only source
    actions: frozenset[str] = frozenset()
    #: why it runs no actions, in words for the operator (when `actions` is empty)
    read_only_reason: str = ""
    #: the base priorities an operator may set, lowest and highest (Slurm: 0 means hold)
    priority_range: tuple[int, int] = (0, 2**31 - 1)
    #: whether `native_preview` predicts the native scheduler's own choice
    native_preview: bool = False
    #: the most nodes a what-if request may span here (Kubernetes: 1, a what-if is one pod);
    #: None: as many as it needs. A job's own limit is in the snapshot (`Job.max_nodes`).
    what_if_max_nodes: int | None = None
    #: what the backend cannot read now and what that leaves out, in words for the operator
    #: (Kubernetes without the right to list nodes: "GPU occupancy from pods only …"); views show them
    notes: tuple[str, ...] = ()
    #: whether `Backend.export_history` gives the cluster's job history as a trace (`gpuq trace export`)
    history: bool = False
    #: the name of the scheduler's own accounting format `Backend.export_history_raw` writes
    #: (Slurm: "sacct", its ``--parsable2`` output); "" when it has none
    history_format: str = ""


class Backend(ABC):
    """A cluster gpuq can read and act on."""

    name: ClassVar[str]
    #: the options the config file and the command line may set, by constructor keyword; the
    #: service passes its own (the clock, the resolved policy, where state lives) separately
    options: ClassVar[Mapping[str, OptionSpec]] = MappingProxyType({})
    #: what it takes from the service, by constructor keyword, when its constructor accepts it:
    #: ``clock`` (wall clock), ``policy`` (the resolved `Policy`), ``state_dir``, ``cache_dir``
    internals: ClassVar[frozenset[str]] = frozenset()
    #: the policy to use when the operator configured none (None: gpuq's documented defaults)
    default_policy: ClassVar[Policy | None] = None

    cluster: str

    @property
    def label(self) -> str:
        """What to call the cluster before it is read, without reading it (a backend whose name
        needs a read says something cheaper)."""
        return self.cluster

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities()

    @abstractmethod
    def snapshot(self, *, ledger: bool = True) -> Snapshot:
        """The cluster's state now. Raises Unreachable, PermissionDenied, BadInput (bad CLI output).

        ``ledger=False`` says the caller shows only the queued jobs: neither finished jobs (SLA)
        nor the preemption ledger. A backend may then serve those two from a cache it has not
        confirmed (what it shows of the queued jobs stays as exact as with ``ledger=True``);
        backends without such a cache ignore it.
        """

    def read_once(self) -> None:
        """This handle serves one command that reads and ends: keep nothing current in the
        background (no watch, no thread outliving a snapshot). Called before the first snapshot;
        a backend with nothing running between snapshots ignores it."""
        return

    def close(self) -> None:
        """Stop what the backend runs in the background and wait for it (bounded), so the process
        can end: called once a front end is done with the cluster. Safe to call twice."""
        return

    def job_ids(self) -> list[str]:
        """Job ids for shell completion; cheap, and never raises."""
        try:
            return [job.id for job in self.snapshot(ledger=False).jobs]
        except Exception:  # noqa: BLE001 - completion must never break the shell
            return []

    # -- actions, in two steps (only those in `capabilities.actions` are ever called)

    def prepare_bump(self, job_id: str, change: PriorityChange, *, reason: str) -> ActionPlan:
        """Fix how the job's base priority is set (`change.to`/`by`) or it is made urgent."""
        raise self._unsupported("bump")

    def prepare_exempt(self, job_id: str, until: float | None, *, reason: str) -> ActionPlan:
        """Fix how the job is exempted from preemption until `until` (epoch s); None lifts it."""
        raise self._unsupported("exempt")

    def prepare_preempt(self, job_id: str, mode: Mode, *, reason: str) -> ActionPlan:
        """Fix how a running job is preempted now with `mode`."""
        raise self._unsupported("preempt")

    def prepare_resume(self, job_id: str, *, reason: str) -> ActionPlan:
        """Fix how a suspended job (holding its GPUs) is resumed."""
        raise self._unsupported("resume")

    def apply(self, plan: ActionPlan) -> ActionResult:
        """Carry out `plan` exactly; JobChanged (nothing done) when its guard no longer holds.
        Raises NotFound, Refused, PermissionDenied, Unreachable."""
        raise self._unsupported(plan.action)

    def native_preview(self, snapshot: Snapshot, request: PreviewRequest) -> NativePlan | None:
        """What the native scheduler would preempt for `request`, when the backend can tell."""
        return None

    def native_priority(self, snapshot: Snapshot, request: PreviewRequest) -> NativePriority | None:
        """The priority the native scheduler would give `request` now, where it computes one
        itself (Slurm's multifactor priority): asked for every what-if and every job's own request
        without a priority given (`request.priority` None; a job request carries its job id).
        None: the request's priority stands (the class's default, the job's own). Raises BadInput
        for a hint naming what the cluster does not have (Slurm: a QOS, a partition)."""
        return None

    def nodes(self) -> tuple[Node, ...]:
        """The cluster's nodes (a history export's header records their shape); this default
        reads a snapshot, a backend with a cheaper way overrides it."""
        return self.snapshot(ledger=False).nodes

    def cluster_time(self) -> float | None:
        """The cluster's own clock now (epoch s) where it is not the wall clock (the demo's
        simulated one runs ahead of it); None: the wall clock (this default)."""
        return None

    # -- history (only when `capabilities.history`)

    def export_history(self, since: float, until: float) -> Iterator[TraceJob]:
        """The jobs the cluster knows of over ``[since, until]`` (epoch s): submitted by `until`
        and not ended before `since`, one `TraceJob` at a time, as the backend's own accounting
        records them (jobs still pending have no start). Whatever it runs starts as the first job
        is taken. Raises Refused when the backend keeps no history (this default), Unreachable,
        PermissionDenied, BadInput (output it cannot parse)."""
        raise Refused(f"backend {self.name} keeps no job history gpuq can export")

    def export_history_raw(self, since: float, until: float) -> Iterator[str]:
        """The same jobs in the scheduler's own format (`Capabilities.history_format`), line by
        line as it prints them, without line ends; Refused when it has none (this default)."""
        raise Refused(f"backend {self.name} has no accounting format of its own to export")

    def _unsupported(self, action: str) -> Refused:
        why = self.capabilities.read_only_reason or f"backend {self.name} cannot {action} jobs"
        return Refused(why)
