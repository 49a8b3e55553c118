"""The backend protocol: one small interface with capability flags instead of isinstance checks.

Backends are the only code that touches subprocesses, HTTP, NVML or other programs' files. Each
turns its world into `gpuq.model` objects and reports what an action changed (before/after) so the
service layer can write the audit log. They raise only `gpuq.errors` exceptions.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from gpuq.model import Snapshot
from gpuq.policy.config import Mode, Policy

__all__ = ["ActionResult", "Backend", "NativePlan", "PreviewRequest"]


@dataclass(frozen=True, slots=True)
class ActionResult:
    """What an action did, or would do under --dry-run.

    `commands` lists the exact external calls (argument lists) made or, for a dry run, that
    would be made; `before`/`after` are the job fields the action changes.
    """

    action: str
    target: str
    dry_run: bool
    before: Mapping[str, Any]
    after: Mapping[str, Any]
    commands: Sequence[Sequence[str]] = ()
    warnings: Sequence[str] = ()
    message: str = ""


@dataclass(frozen=True, slots=True)
class PreviewRequest:
    """A what-if request (`gpuq preview --gpus N ...`) or a pending job's own request."""

    gpus: int
    priority: int | None = None
    job_class: str | None = None
    tenant: str | None = None
    urgent: bool = False
    job_id: str | None = None
    partition: str | None = None
    qos: str | None = None


@dataclass(frozen=True, slots=True)
class NativePlan:
    """What the native scheduler itself would preempt (e.g. slurmctld's own choice)."""

    would_preempt: bool
    nodes: tuple[str, ...] = ()
    victims: tuple[Mapping[str, Any], ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)


class Backend(ABC):
    """A cluster gpuq can read and act on."""

    name: ClassVar[str]
    can_bump: ClassVar[bool] = False
    can_exempt: ClassVar[bool] = False
    can_preempt: ClassVar[bool] = False
    knows_gpu_indexes: ClassVar[bool] = False
    has_history: ClassVar[bool] = False
    has_native_preview: ClassVar[bool] = False
    #: The policy to use when the operator configured none (None: gpuq's documented defaults).
    default_policy: ClassVar[Policy | None] = None

    cluster: str

    @abstractmethod
    def snapshot(self, *, ledger: bool = True) -> Snapshot:
        """The cluster's state now. Raises Unreachable, PermissionDenied, BadInput (bad CLI output).

        ``ledger=False`` says the caller shows only the queued jobs: neither finished jobs (SLA)
        nor the preemption ledger. A backend may then serve those two from a cache it has not
        confirmed (what it shows of the queued jobs stays as exact as with ``ledger=True``);
        backends without such a cache ignore it.
        """

    def job_ids(self) -> list[str]:
        """Job ids for shell completion; cheap, and never raises."""
        try:
            return [job.id for job in self.snapshot().jobs]
        except Exception:  # noqa: BLE001 - completion must never break the shell
            return []

    def bump(
        self, job_id: str, *, priority: int | None, urgent: bool, reason: str, dry_run: bool
    ) -> ActionResult:
        """Set a job's base priority (`priority`) or mark it manually urgent (`urgent=True`).

        Raises NotFound, Refused, PermissionDenied, Unreachable.
        """
        raise NotImplementedError

    def exempt(self, job_id: str, *, until: float | None, reason: str, dry_run: bool) -> ActionResult:
        """Exempt a job from preemption until `until` (epoch s); None lifts the exemption."""
        raise NotImplementedError

    def preempt(self, job_id: str, *, mode: Mode, reason: str, dry_run: bool) -> ActionResult:
        """Preempt a running job now with `mode`."""
        raise NotImplementedError

    def native_preview(self, snapshot: Snapshot, request: PreviewRequest) -> NativePlan | None:
        """What the native scheduler would preempt for `request`, when the backend can tell."""
        return None
