"""`Cluster`: the one handle front ends use on a cluster — its snapshots, previews, SLA report,
audit log and (prepared, audited) actions. Views (`gpuq.views`) shape what it returns for a screen.

Thread safety: a console refreshes in a worker thread while an action may run in another, so
every method may be called from any thread. The handle's own state (the last snapshot, the
resolved classes) is kept under a lock; reads of the backend are serialised among themselves,
and actions among themselves, but a read may run while an action is being applied (each backend
keeps its own state consistent for that: the demo under a file lock, Slurm under its locks).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import msgspec

from gpuq.audit import AuditError, AuditLog, make_record, safe_text
from gpuq.backends.base import ActionPlan, Backend, Capabilities, Foreseen, NativePlan, PriorityChange
from gpuq.config import PolicySource
from gpuq.errors import BadInput, GpuqError, Refused, no_job
from gpuq.model import Job, JobClass, JobState, PreviewRequest, Queue, Snapshot
from gpuq.policy.config import Mode, Policy
from gpuq.policy.engine import Plan, plan_preemption, request_for_job
from gpuq.service.actions import PendingAction
from gpuq.sla import SlaReport, sla_report
from gpuq.textsafe import visible
from gpuq.timefmt import format_duration, format_time

__all__ = ["MAX_EXEMPT_S", "Cluster", "Preview"]

_ACTIONABLE = frozenset({JobState.PENDING, JobState.RUNNING, JobState.SUSPENDED})
#: The longest exemption `exempt --for` grants: a year (longer is a mistake, or a class change).
MAX_EXEMPT_S = 366 * 86400.0


class Preview(msgspec.Struct, frozen=True):
    """gpuq's plan and, when the backend can tell, the native scheduler's own choice."""

    plan: Plan
    native: NativePlan | None = None
    native_error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The `preview -o json` document (plus `native` when known, or `{"error"}` if it failed)."""
        doc = self.plan.to_dict()
        if self.native_error is not None:
            doc["native"] = {"error": self.native_error}
        elif self.native is not None:
            doc["native"] = self.native.to_dict()
        return doc


class Cluster:
    """A handle on one cluster (see the module docstring)."""

    def __init__(
        self, backend: Backend, backend_name: str, policy: PolicySource, audit: AuditLog | None = None
    ) -> None:
        self.backend = backend
        self.backend_name = backend_name
        self.policy_source = policy
        self.audit = audit if audit is not None else AuditLog()
        self._state_lock = threading.Lock()  # `_last*` and the class cache
        self._read_lock = threading.Lock()  # one backend read at a time
        self._action_lock = threading.Lock()  # one action at a time
        self._last: Snapshot | None = None
        self._last_ledger = False  # whether `_last` was read with the ledger
        self._classes_of: Snapshot | None = None
        self._classes: dict[str, JobClass] = {}

    @property
    def policy(self) -> Policy:
        return self.policy_source.policy

    @property
    def capabilities(self) -> Capabilities:
        return self.backend.capabilities

    @property
    def name(self) -> str:
        last = self._last
        if last is not None:
            return last.cluster
        try:
            return self.backend.cluster
        except GpuqError:
            return "?"

    @property
    def label(self) -> str:
        """The name to show at once: the last snapshot's, or what the backend knows without a
        read (a snapshot file is named by its file until it is read: reading it is the slow part)."""
        last = self._last
        if last is not None:
            return last.cluster
        try:
            return self.backend.label
        except GpuqError:
            return "?"

    # -- lifecycle -----------------------------------------------------------------------------

    def read_once(self) -> None:
        """This handle serves one command: the backend keeps nothing current in the background
        (`Backend.read_once`; before the first read)."""
        self.backend.read_once()

    def close(self) -> None:
        """Stop what the backend runs in the background and wait for it (`Backend.close`): a front
        end calls it when it is done, before the process ends."""
        self.backend.close()

    # -- reading -------------------------------------------------------------------------------

    def refresh(self, *, ledger: bool = True) -> Snapshot:
        """A fresh snapshot from the backend (also kept as the last one). ``ledger=False``: the
        caller shows only queued jobs, no finished jobs or preemption ledger (`Backend.snapshot`)."""
        with self._read_lock:
            snapshot = self.backend.snapshot(ledger=ledger)
        with self._state_lock:
            self._last, self._last_ledger = snapshot, ledger
        return snapshot

    def snapshot(self, *, ledger: bool = True) -> Snapshot:
        """The last snapshot, reading one if none was read yet (or if it was read without the
        ledger and ``ledger`` asks for it)."""
        with self._state_lock:
            last, had_ledger = self._last, self._last_ledger
        if last is not None and (had_ledger or not ledger):
            return last
        return self.refresh(ledger=ledger)

    def job(self, job_id: str, snapshot: Snapshot | None = None) -> Job:
        snap = snapshot or self.snapshot()
        job = snap.job(job_id)
        if job is None:
            raise no_job(job_id, snap.cluster, lambda other: snap.job(other) is not None)
        return job

    def job_ids(self) -> list[str]:
        """Ids for shell completion; never raises."""
        try:
            return self.backend.job_ids()
        except Exception:  # noqa: BLE001 - completion must never break the shell
            return []

    def resolved_class(self, snapshot: Snapshot, name: str) -> JobClass:
        """The snapshot's class with the policy's overrides (cached for the latest snapshot)."""
        with self._state_lock:
            if snapshot is not self._classes_of:
                self._classes_of, self._classes = snapshot, {}
            cached = self._classes.get(name)
            if cached is None:
                cached = self._classes[name] = self.policy.resolve_class(snapshot.job_class(name), name)
            return cached

    def sla(self, snapshot: Snapshot, since_s: float | None = None) -> SlaReport:
        """Waits per class over jobs queued in the last `since_s` seconds (all when None)."""
        now = snapshot.now
        return sla_report(snapshot, self.policy, now, None if since_s is None else now - since_s)

    # -- previews ------------------------------------------------------------------------------

    def job_request(self, job_id: str, snapshot: Snapshot, *, priority: int | None = None,
                    urgent: bool = False) -> PreviewRequest:  # fmt: skip
        """A job's own request, optionally at another priority or as urgent."""
        self._check_what_if_priority(priority, urgent)
        request = request_for_job(self.job(job_id, snapshot))
        changes: dict[str, Any] = {}
        if priority is not None:
            changes["priority"] = priority
        if urgent:
            changes["urgent"] = True
        if changes:
            return msgspec.structs.replace(request, **changes)
        # The job as it stands; a held Slurm job at the priority it gets on release.
        native = self._native_priority(snapshot, msgspec.structs.replace(request, priority=None))
        return native or request

    def what_if_request(
        self, snapshot: Snapshot, *, gpus: int, priority: int | None = None, job_class: str | None = None,
        tenant: str | None = None, urgent: bool = False, hints: Mapping[str, str] | None = None,
    ) -> PreviewRequest:  # fmt: skip
        """A what-if request. Without a class, a hint that names one of the cluster's classes
        stands for it (on Slurm the QOS, or the partition under partition_prio). Without a
        priority, the native scheduler's for such a job where it computes one (Slurm's
        multifactor). BadInput for a class neither the cluster nor the policy knows, a hint the
        cluster does not have (an unknown QOS or partition), or a priority out of range."""
        self._check_what_if_priority(priority, urgent)
        hints = dict(hints or {})
        names = {c.name for c in snapshot.classes}
        if job_class is None:
            job_class = next((v for v in hints.values() if v in names), None)
        elif job_class not in names and job_class not in self.policy.classes:
            known = ", ".join(sorted(names | set(self.policy.classes))) or "none"
            raise BadInput(f"--class {job_class}: no such class on cluster {snapshot.cluster} (classes: {known})")
        local = hints.pop("queue", None)
        queue = _cluster_queue(snapshot, local) if local is not None else None
        request = PreviewRequest(gpus=gpus, priority=priority, job_class=job_class, tenant=tenant, urgent=urgent,
                                 hints=hints, max_nodes=self.capabilities.what_if_max_nodes)  # fmt: skip
        if queue is not None:  # (waits in a queue manager's queue: its own plan is shown beside gpuq's)
            request = msgspec.structs.replace(request, queue=queue.name, admitted_by=queue.manager)
        return self._native_priority(snapshot, request) or request

    def _native_priority(self, snapshot: Snapshot, request: PreviewRequest) -> PreviewRequest | None:
        """`request` at the priority the native scheduler would give it (`Backend.native_priority`,
        which also refuses hints naming what the cluster lacks), None where its own stands. A read
        that fails leaves the request as it was: the preview still answers."""
        try:
            with self._read_lock:
                found = self.backend.native_priority(snapshot, request)
        except BadInput:
            raise
        except GpuqError:
            return None
        if found is None:
            return None
        return msgspec.structs.replace(request, priority=found.priority, priority_note=found.how)

    def _check_what_if_priority(self, priority: int | None, urgent: bool) -> None:
        """A preview's priority: one the operator could set (`priority_range`), and not beside
        --urgent, which previews at the policy's urgent priority instead."""
        if priority is None:
            return
        if urgent:
            raise BadInput(f"give --priority or --urgent, not both (--urgent previews at the policy's urgent "
                           f"priority, {self.policy.urgent_priority})")  # fmt: skip
        lo, hi = self.priority_range()
        if not lo <= priority <= hi:
            raise BadInput(f"--priority {priority}: priority must be an integer from {lo} to {hi} "
                           "(use --urgent for the top)")  # fmt: skip

    def preview(self, request: PreviewRequest, snapshot: Snapshot | None = None, *, native: bool = True) -> Preview:
        """Dry-run victim choice for a what-if request or a job's own (`job_request`); with
        ``native`` (and a backend that can tell) also the native scheduler's own choice."""
        if request.gpus < 1:
            if request.job_id is not None:  # a CPU-only job (no --gres): no GPU to free for it
                raise BadInput(f"job {request.job_id} asks for no GPUs: it preempts nobody, so there is nothing to "
                               "preview")  # fmt: skip
            raise BadInput(f"--gpus {request.gpus}: a request needs at least 1 GPU")
        snap = snapshot or self.snapshot()
        plan = plan_preemption(snap, self.policy, request, snap.now)
        if not native or not self.capabilities.native_preview:
            return Preview(plan)
        try:
            with self._read_lock:
                theirs = self.backend.native_preview(snap, request)
        except GpuqError as exc:
            # gpuq's own plan still answers the question; say why the native one is missing.
            return Preview(plan, None, f"native preview unavailable: {exc}")
        return Preview(plan, theirs)

    # -- actions -------------------------------------------------------------------------------

    def priority_range(self) -> tuple[int, int]:
        """Base priorities an operator may set (`bump --to/--by`): the backend's own range, up to
        the policy's urgent priority (above it is what `--urgent` is for)."""
        lo, hi = self.capabilities.priority_range
        return lo, min(hi, self.policy.urgent_priority)

    def prepare_bump(
        self, job_id: str, *, to: int | None = None, by: int | None = None, urgent: bool = False, reason: str = "",
        dry_run: bool = False,
    ) -> PendingAction:  # fmt: skip
        """Set a job's priority (`to`), move it (`by`) or make it urgent: exactly one of the three.
        `dry_run` (in every ``prepare_*``): the caller will only dry-run it, so a refusal is
        audited as a dry run's."""
        args = {k: v for k, v in {"to": to, "by": by, "urgent": urgent}.items() if v}
        with self._refusals("bump", job_id, args, reason, dry_run):
            if sum((to is not None, by is not None, urgent)) != 1:
                raise BadInput("give exactly one of --to, --by, --urgent")
            snapshot, job = self._target("bump", job_id)
            lo, hi = self.priority_range()
            change = PriorityChange(to=to, by=by, urgent=urgent)
            new = change.new_priority(job.priority)
            if new is not None and not lo <= new <= hi:
                how = f"--to {to}" if to is not None else f"--by {by} (from {job.priority} gives {new})"
                raise BadInput(f"{how}: priority must be an integer from {lo} to {hi} (use --urgent for the top)")
            plan = self.backend.prepare_bump(job.id, change, reason=reason)
            if plan.noop:  # (e.g. --urgent on a job already above what it would set: never lowered)
                return self._pending("bump", job.id, args, reason, plan, None, noop=True)
            preview = None
            if job.is_pending and job.gpus > 0:  # (a CPU-only job preempts nobody: no preview)
                preview = self.preview(self.job_request(job.id, snapshot, priority=new, urgent=urgent), snapshot)
                # What the operator is shown goes with the plan: the backend carries it out, or
                # says what happened instead (`PendingAction`).
                shown = preview.plan
                victims = {v.job_id: v.nodes for v in shown.victims} if shown.would_preempt else {}
                plan = msgspec.structs.replace(plan, foreseen=Foreseen(victims, shown.nodes))
            return self._pending("bump", job.id, args, reason, plan, preview)

    def prepare_exempt(
        self, job_id: str, *, for_s: float | None = None, until: float | None = None, off: bool = False,
        reason: str = "", dry_run: bool = False,
    ) -> PendingAction:  # fmt: skip
        """Protect a job from preemption for a while (`for_s`), until a time, or lift the protection."""
        args: dict[str, Any] = {"for_s": for_s, "until": None if until is None else format_time(until), "off": off}
        args = {k: v for k, v in args.items() if v}
        with self._refusals("exempt", job_id, args, reason, dry_run):
            if sum((for_s is not None, until is not None, off)) != 1:
                raise BadInput("give exactly one of --for, --until, --off")
            snapshot, job = self._target("exempt", job_id)
            now = snapshot.now
            end: float | None = None
            if for_s is not None:
                if not 0 < for_s <= MAX_EXEMPT_S:
                    raise BadInput(f"--for {format_duration(for_s)}: an exemption lasts more than 0s and at most "
                                   f"{format_duration(MAX_EXEMPT_S)}")  # fmt: skip
                end = now + for_s
            elif until is not None:
                if until <= now:
                    raise BadInput(
                        f"--until {format_time(until)} is not in the future (cluster time is {format_time(now)})"
                    )
                if until - now > MAX_EXEMPT_S:
                    raise BadInput(f"--until {format_time(until)}: an exemption lasts at most "
                                   f"{format_duration(MAX_EXEMPT_S)}")  # fmt: skip
                end = until
            if off and job.exempt_until is None:
                # Nothing to lift: say so, and audit it as a no-op (no backend call).
                nothing = {"exempt_until": None}
                said = f"job {job.id} is not exempt: there was no exemption to lift; nothing changed"
                noop = ActionPlan("exempt", job.id, nothing, nothing, message=said)
                return self._pending("exempt", job.id, args, reason, noop, None, noop=True)
            plan = self.backend.prepare_exempt(job.id, end, reason=reason)
            return self._pending("exempt", job.id, args, reason, plan, None)

    def prepare_preempt(
        self, job_id: str, *, mode: Mode | None = None, reason: str = "", dry_run: bool = False
    ) -> PendingAction:
        """Preempt a running job now (mode defaults to the policy's)."""
        chosen = mode or self.policy.mode
        args = {"mode": chosen.value}
        with self._refusals("preempt", job_id, args, reason, dry_run):
            snapshot, job = self._target("preempt", job_id)
            if job.state is not JobState.RUNNING:
                raise Refused(f"job {job.id} is {job.state.value}, not running: nothing to preempt")
            if job.exempt_at(snapshot.now):
                assert job.exempt_until is not None
                raise Refused(
                    f"job {job.id} is exempt from preemption until {format_time(job.exempt_until)}; "
                    f"lift that first with `gpuq exempt {job.id} --off`"
                )
            plan = self.backend.prepare_preempt(job.id, chosen, reason=reason)
            return self._pending("preempt", job.id, args, reason, plan, None)

    def prepare_resume(self, job_id: str, *, reason: str = "", dry_run: bool = False) -> PendingAction:
        """Resume a suspended job: one that `preempt --mode suspend` paused, holding its GPUs."""
        with self._refusals("resume", job_id, {}, reason, dry_run):
            _, job = self._target("resume", job_id)
            if job.state is not JobState.SUSPENDED:
                raise Refused(f"job {job.id} is {job.state.value}, not suspended: nothing to resume")
            plan = self.backend.prepare_resume(job.id, reason=reason)
            return self._pending("resume", job.id, {}, reason, plan, None)

    def _target(self, action: str, job_id: str) -> tuple[Snapshot, Job]:
        """The cluster now and the job an action is for, refusing what the action cannot touch."""
        caps = self.capabilities
        if action not in caps.actions:
            raise Refused(f"cannot {action} jobs: {caps.read_only_reason}" if caps.read_only_reason
                          else f"backend {self.backend_name} cannot {action} jobs")  # fmt: skip
        snapshot = self.refresh()
        job = self.job(job_id, snapshot)
        if job.state not in _ACTIONABLE and action in ("bump", "exempt"):  # (preempt, resume: checked by each)
            raise Refused(
                f"job {job.id} is {job.state.value}; only pending, running or suspended jobs can be {action}ed"
            )
        return snapshot, job

    def _pending(
        self, action: str, target: str, args: Mapping[str, Any], reason: str, plan: ActionPlan,
        preview: Preview | None, *, noop: bool = False,
    ) -> PendingAction:  # fmt: skip
        return PendingAction(action=action, target=target, cluster=self.name, backend=self.backend_name, args=args,
                             reason=safe_text(reason), plan=plan, preview=preview, audit=self.audit,
                             apply=self.backend.apply, lock=self._action_lock, noop=noop)  # fmt: skip

    def _refusals(self, action: str, target: str, args: Mapping[str, Any], reason: str, dry_run: bool) -> _Refusals:
        return _Refusals(self, action, target, args, reason, dry_run)

    def record_failure(
        self, action: str, target: str, args: Mapping[str, Any], reason: str, exc: GpuqError, *, dry_run: bool = False
    ) -> None:
        """Audit an action that failed before anything was prepared (validation, policy, a
        missing job, the backend's refusal); nothing was done. A dry run's is recorded as one."""
        self.audit.append(make_record(
            backend=self.backend_name, cluster=self.name, action=action, target=safe_text(target), result="error",
            reason=safe_text(reason), dry_run=dry_run, args=args, error=safe_text(str(exc)), exit_code=exc.exit_code,
        ))  # fmt: skip


class _Refusals:
    """Audits a preparation that fails with a gpuq error, then lets the error through."""

    def __init__(
        self, cluster: Cluster, action: str, target: str, args: Mapping[str, Any], reason: str, dry_run: bool
    ) -> None:
        self.cluster, self.action, self.target, self.args, self.reason = cluster, action, target, args, reason
        self.dry_run = dry_run

    def __enter__(self) -> None:
        self.cluster.audit.open().close()  # an unwritable log stops an action before anything else

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if isinstance(exc, GpuqError):
            try:
                self.cluster.record_failure(self.action, self.target, self.args, self.reason, exc, dry_run=self.dry_run)
            except AuditError as audit_exc:  # (disk full): the operator still learns why it failed
                raise AuditError(f"{exc} (and {audit_exc})") from exc


def _cluster_queue(snapshot: Snapshot, local: str) -> Queue:
    """The queue a LocalQueue (``namespace/name``, or a name only one namespace has) leads to;
    BadInput naming the known ones for any other."""
    named = [(k, q) for q in snapshot.queues for k in q.local_queues if k == local or k.partition("/")[2] == local]
    exact = [q for k, q in named if k == local]
    if exact or ("/" not in local and len(named) == 1):
        return exact[0] if exact else named[0][1]
    known = ", ".join(sorted(k for q in snapshot.queues for k in q.local_queues)) or "none"
    raise BadInput(f"--queue {visible(local)}: no such LocalQueue on cluster {snapshot.cluster} (LocalQueues: {known})")
