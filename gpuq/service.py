"""The service layer: one `Cluster` handle per configured cluster, the only thing front ends call.

A handle reads snapshots, computes previews with the policy engine and runs actions through the
backend. Every action, dry run or not, successful or not, is written to the audit log before the
handle returns, and the log is opened before the backend is touched, so an unwritable log stops
an action before it starts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpuq.audit import AuditError, AuditLog, AuditWriter, make_record
from gpuq.backends.base import ActionResult, Backend, NativePlan, PreviewRequest
from gpuq.config import Config, PolicySource, load_config, load_policy_file
from gpuq.errors import BadInput, GpuqError, NotFound, Refused
from gpuq.model import Job, JobClass, JobState, Snapshot
from gpuq.policy.config import Mode, Policy
from gpuq.timefmt import format_time

if TYPE_CHECKING:
    from gpuq.policy.engine import Plan, Request

__all__ = [
    "ActionOutcome",
    "Cluster",
    "Preview",
    "PRIORITY_MIN",
    "open_cluster",
    "open_clusters",
]

#: Lowest priority an operator may set: Slurm reads priority 0 as "hold".
PRIORITY_MIN = 1
_BUMPABLE = frozenset({JobState.PENDING, JobState.RUNNING, JobState.SUSPENDED})


@dataclass(frozen=True, slots=True)
class Preview:
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
            doc["native"] = {
                "would_preempt": self.native.would_preempt,
                "nodes": list(self.native.nodes),
                "victims": [dict(v) for v in self.native.victims],
                "notes": list(self.native.notes),
            }
        return doc


@dataclass(frozen=True, slots=True)
class ActionOutcome:
    """What an action did (or would do) and, for a bump, what the job would now preempt."""

    result: ActionResult
    record: Mapping[str, Any]
    preview: Preview | None = None


class Cluster:
    """A handle on one cluster: refresh → Snapshot, actions → ActionResult + audit, preview → Plan."""

    def __init__(
        self,
        backend: Backend,
        backend_name: str,
        policy: PolicySource,
        audit: AuditLog | None = None,
    ) -> None:
        self.backend = backend
        self.backend_name = backend_name
        self.policy_source = policy
        self.audit = audit if audit is not None else AuditLog()
        self._last: Snapshot | None = None
        self._last_ledger = False  # whether `_last` was read with the ledger
        self._classes_of: Snapshot | None = None
        self._classes: dict[str, JobClass] = {}

    @property
    def policy(self) -> Policy:
        return self.policy_source.policy

    @property
    def name(self) -> str:
        return self._last.cluster if self._last is not None else self.backend.cluster

    # -- reading -------------------------------------------------------------------------------

    def refresh(self, *, ledger: bool = True) -> Snapshot:
        """A fresh snapshot from the backend (also kept as `last`). ``ledger=False``: the caller
        shows only queued jobs, no finished jobs or preemption ledger (see `Backend.snapshot`)."""
        self._last = self.backend.snapshot(ledger=ledger)
        self._last_ledger = ledger
        return self._last

    def snapshot(self, *, ledger: bool = True) -> Snapshot:
        """The last snapshot, reading one if none was read yet (or if it was read without the
        ledger and ``ledger`` asks for it)."""
        if self._last is not None and (self._last_ledger or not ledger):
            return self._last
        return self.refresh(ledger=ledger)

    def job(self, job_id: str, snapshot: Snapshot | None = None) -> Job:
        snap = snapshot or self.snapshot()
        job = snap.job(job_id)
        if job is None:
            raise NotFound(f"no job {job_id} on cluster {snap.cluster}")
        return job

    def job_ids(self) -> list[str]:
        """Ids for shell completion; never raises."""
        try:
            return self.backend.job_ids()
        except Exception:  # noqa: BLE001 - completion must never break the shell
            return []

    @staticmethod
    def now(snapshot: Snapshot) -> float:
        # Times are judged at the snapshot's instant: right for saved snapshots and for the demo's
        # own simulated clock, and within a refresh of the wall clock for live backends.
        return snapshot.taken_at

    def resolved_class(self, snapshot: Snapshot, name: str) -> JobClass:
        """The snapshot's class with the policy's overrides (cached for the latest snapshot)."""
        if snapshot is not self._classes_of:
            self._classes_of = snapshot
            self._classes = {}
        cached = self._classes.get(name)
        if cached is None:
            cached = self._classes[name] = self.policy.resolve_class(snapshot.job_class(name), name)
        return cached

    def effective_priority(self, snapshot: Snapshot, job: Job) -> float:
        from gpuq.policy.rules import effective_priority

        cls = self.resolved_class(snapshot, job.job_class)
        return effective_priority(job, cls, self.policy, self.now(snapshot))

    def pending_reasons(self, snapshot: Snapshot, job: Job) -> list[str]:
        """Why the job is pending, in plain sentences (one line for a job that is not pending)."""
        from gpuq.policy.explain import pending_reasons

        return pending_reasons(snapshot, self.policy, job, self.now(snapshot))[0]

    def sla(self, snapshot: Snapshot, since_s: float | None = None) -> Any:
        """`gpuq.sla.SlaReport` over jobs queued in the last `since_s` seconds (all when None)."""
        from gpuq.sla import sla_report

        now = self.now(snapshot)
        return sla_report(snapshot, self.policy, now, None if since_s is None else now - since_s)

    # -- previews ------------------------------------------------------------------------------

    def _engine_request(self, snapshot: Snapshot, request: PreviewRequest) -> Request:
        from gpuq.policy.engine import Request, request_for_job

        if request.job_id is not None:
            base = request_for_job(self.job(request.job_id, snapshot))
            changes: dict[str, Any] = {}
            if request.priority is not None:
                changes["priority"] = request.priority
            if request.urgent:
                changes["urgent"] = True
            return dataclasses.replace(base, **changes) if changes else base
        if request.gpus < 1:
            raise BadInput(f"--gpus {request.gpus}: a request needs at least 1 GPU")
        return Request(
            gpus=request.gpus,
            priority=request.priority,  # None: the class's default priority
            job_class=request.job_class,
            tenant=request.tenant,
            urgent=request.urgent,
        )

    def preview(self, request: PreviewRequest, snapshot: Snapshot | None = None) -> Preview:
        """Dry-run victim choice for a what-if request or a job (`request.job_id`)."""
        from gpuq.policy.engine import plan_preemption

        snap = snapshot or self.snapshot()
        plan = plan_preemption(snap, self.policy, self._engine_request(snap, request), self.now(snap))
        native = None
        if self.backend.has_native_preview:
            try:
                native = self.backend.native_preview(snap, request)
            except GpuqError as exc:
                # gpuq's own plan still answers the question; say why the native one is missing.
                return Preview(plan, None, f"native preview unavailable: {exc}")
        return Preview(plan, native)

    # -- actions -------------------------------------------------------------------------------

    def priority_range(self) -> tuple[int, int]:
        """Priorities an operator may set with `bump --to/--by`."""
        return PRIORITY_MIN, self.policy.urgent_priority

    def _record(self, action: str, target: str, **fields: Any) -> dict[str, Any]:
        cluster = self._last.cluster if self._last is not None else _safe_cluster(self.backend)
        return make_record(backend=self.backend_name, cluster=cluster, action=action, target=target, **fields)

    def record_declined(self, action: str, target: str, *, reason: str, args: Mapping[str, Any], why: str) -> None:
        """Audit an action the operator did not confirm (nothing was done)."""
        self.audit.append(
            self._record(action, target, result="refused", reason=reason, args=args, error=why, exit_code=1)
        )

    def _act(
        self,
        action: str,
        target: str,
        *,
        reason: str,
        dry_run: bool,
        args: Mapping[str, Any],
        body: Callable[[Snapshot, Job], ActionResult],
    ) -> tuple[ActionResult, dict[str, Any], Snapshot, Job]:
        writer = self.audit.open()  # raises before anything is done when the log is unwritable
        with writer:
            try:
                snapshot = self.refresh()
                job = self.job(target, snapshot)
                result = body(snapshot, job)
            except GpuqError as exc:
                self._write_failure(writer, action, target, reason, dry_run, args, exc, exc.exit_code)
                raise
            except Exception as exc:
                self._write_failure(writer, action, target, reason, dry_run, args, exc, 1)
                raise
            record = self._record(
                action,
                target,
                result="dry_run" if dry_run else "ok",
                reason=reason,
                dry_run=dry_run,
                before=result.before,
                after=result.after,
                args=args,
                commands=result.commands,
                warnings=result.warnings,
            )
            try:
                writer.write(record)
            except AuditError as exc:
                done = "was checked (dry run)" if dry_run else "WAS APPLIED"
                raise AuditError(f"{action} of job {target} {done}, but {exc}") from None
        return result, record, snapshot, job

    def _write_failure(
        self,
        writer: AuditWriter,
        action: str,
        target: str,
        reason: str,
        dry_run: bool,
        args: Mapping[str, Any],
        exc: BaseException,
        exit_code: int,
    ) -> None:
        message = str(exc) or type(exc).__name__
        try:
            writer.write(
                self._record(
                    action,
                    target,
                    result="error",
                    reason=reason,
                    dry_run=dry_run,
                    args=args,
                    error=message,
                    exit_code=exit_code,
                )
            )
        except AuditError as audit_exc:
            raise AuditError(f"{message} (and {audit_exc})") from exc

    def _require(self, capability: bool, what: str) -> None:
        if capability:
            return
        if self.backend_name == "snapshot":
            raise Refused(
                f"cannot {what}: --snapshot {getattr(self.backend, 'path', '')} is read-only; "
                "act on the live cluster instead (drop --snapshot)"
            )
        raise Refused(f"backend {self.backend_name} cannot {what}")

    def bump(
        self,
        job_id: str,
        *,
        to: int | None = None,
        by: int | None = None,
        urgent: bool = False,
        reason: str = "",
        dry_run: bool = False,
    ) -> ActionOutcome:
        """Set a job's priority (`to`), move it (`by`) or make it urgent; exactly one of the three."""
        if sum((to is not None, by is not None, urgent)) != 1:
            raise BadInput("give exactly one of --to, --by, --urgent")
        lo, hi = self.priority_range()

        def body(snapshot: Snapshot, job: Job) -> ActionResult:
            self._require(self.backend.can_bump, "bump jobs")
            if job.state not in _BUMPABLE:
                raise Refused(
                    f"job {job.id} is {job.state.value}; only pending, running or suspended jobs can be bumped"
                )
            priority = None
            if to is not None:
                priority = to
            elif by is not None:
                priority = job.priority + by
            if priority is not None and not lo <= priority <= hi:
                how = f"--to {to}" if to is not None else f"--by {by} (from {job.priority} gives {priority})"
                raise BadInput(f"{how}: priority must be an integer from {lo} to {hi} (use --urgent for the top)")
            return self.backend.bump(job.id, priority=priority, urgent=urgent, reason=reason, dry_run=dry_run)

        args = {"to": to, "by": by, "urgent": urgent}
        result, record, snapshot, job = self._act(
            "bump", job_id, reason=reason, dry_run=dry_run, args={k: v for k, v in args.items() if v}, body=body
        )
        preview = None
        if job.is_pending:
            new_priority = None if urgent else (to if to is not None else job.priority + (by or 0))
            request = PreviewRequest(gpus=job.gpus, priority=new_priority, urgent=urgent, job_id=job.id)
            preview = self.preview(request, snapshot)
        return ActionOutcome(result, record, preview)

    def exempt(
        self,
        job_id: str,
        *,
        for_s: float | None = None,
        until: float | None = None,
        off: bool = False,
        reason: str = "",
        dry_run: bool = False,
    ) -> ActionOutcome:
        """Protect a job from preemption for a while, until a time, or lift the protection."""
        if sum((for_s is not None, until is not None, off)) != 1:
            raise BadInput("give exactly one of --for, --until, --off")

        def body(snapshot: Snapshot, job: Job) -> ActionResult:
            self._require(self.backend.can_exempt, "exempt jobs")
            if job.state not in _BUMPABLE:
                raise Refused(
                    f"job {job.id} is {job.state.value}; only pending, running or suspended jobs can be exempted"
                )
            now = self.now(snapshot)
            end: float | None = None
            if for_s is not None:
                if for_s <= 0:
                    raise BadInput(f"--for: the exemption must last longer than 0s, got {for_s:g}s")
                end = now + for_s
            elif until is not None:
                if until <= now:
                    raise BadInput(
                        f"--until {format_time(until)} is not in the future (cluster time is {format_time(now)})"
                    )
                end = until
            return self.backend.exempt(job.id, until=end, reason=reason, dry_run=dry_run)

        args: dict[str, Any] = {"for_s": for_s, "until": None if until is None else format_time(until), "off": off}
        result, record, _, _ = self._act(
            "exempt", job_id, reason=reason, dry_run=dry_run, args={k: v for k, v in args.items() if v}, body=body
        )
        return ActionOutcome(result, record)

    def preempt(
        self, job_id: str, *, mode: Mode | None = None, reason: str = "", dry_run: bool = False
    ) -> ActionOutcome:
        """Preempt a running job now (mode defaults to the policy's)."""
        chosen = mode or self.policy.mode

        def body(snapshot: Snapshot, job: Job) -> ActionResult:
            self._require(self.backend.can_preempt, "preempt jobs")
            if job.state is not JobState.RUNNING:
                raise Refused(f"job {job.id} is {job.state.value}, not running: nothing to preempt")
            if job.exempt_at(self.now(snapshot)):
                assert job.exempt_until is not None
                raise Refused(
                    f"job {job.id} is exempt from preemption until {format_time(job.exempt_until)}; "
                    f"lift that first with `gpuq exempt {job.id} --off`"
                )
            return self.backend.preempt(job.id, mode=chosen, reason=reason, dry_run=dry_run)

        result, record, _, _ = self._act(
            "preempt", job_id, reason=reason, dry_run=dry_run, args={"mode": chosen.value}, body=body
        )
        return ActionOutcome(result, record)


def _safe_cluster(backend: Backend) -> str:
    try:
        return backend.cluster
    except GpuqError:
        return "?"


def open_cluster(
    *,
    backend: str | None = None,
    cluster: str | None = None,
    snapshot: str | None = None,
    policy_file: str | None = None,
    config: Config | None = None,
    config_file: str | None = None,
    seed: int | None = None,
    speed: float | None = None,
    audit: AuditLog | None = None,
    clock: Callable[[], float] | None = None,
) -> Cluster:
    """Resolve options, config and defaults into a `Cluster` handle.

    `--snapshot` wins over any backend. Otherwise `--cluster` picks a `[clusters.NAME]` table
    (an unknown name is an error when clusters are configured, so a typo never shows demo data),
    `--backend` overrides its backend, and the top-level `backend` (default `demo`) applies last.
    """
    from gpuq.backends.registry import BackendOption, backend_entry, create_backend

    cfg = config if config is not None else load_config(config_file)
    name = cluster or cfg.cluster
    policy = load_policy_file(policy_file) if policy_file else cfg.policy_for(name)
    if backend is not None:
        backend_entry(backend)  # an unknown name is a usage error even when --snapshot wins
    if snapshot is not None:
        for flag, value in (("--seed", seed), ("--speed", speed)):
            if value is not None:
                raise BadInput(f"{flag} applies to the demo backend, not to --snapshot")
        from gpuq.backends.snapshot_file import SnapshotFileBackend

        return Cluster(SnapshotFileBackend(snapshot), "snapshot", policy, audit)

    entry = cfg.clusters.get(name) if name else None
    if name and entry is None and backend is None and cfg.clusters:
        configured = ", ".join(sorted(cfg.clusters))
        where = cfg.path or "the config file"
        raise BadInput(
            f"no cluster {name!r} in {where} (configured: {configured}); pass --backend to use one not configured"
        )
    backend_name = backend or (entry.backend if entry and entry.backend else None) or cfg.backend

    options: dict[str, BackendOption] = {}
    for key, value in cfg.backend_options.get(backend_name, {}).items():
        options[key] = BackendOption(
            value, f"{cfg.where(f'backends.{backend_name}.{key}')}: backends.{backend_name}.{key}"
        )
    if name:
        options["cluster"] = BackendOption(name, "--cluster")
    if entry is not None and (entry.backend in (None, backend_name)):
        for key, value in entry.options.items():
            options[key] = BackendOption(
                value, f"{cfg.where(f'clusters.{entry.name}.{key}')}: clusters.{entry.name}.{key}"
            )
    if seed is not None:
        options["seed"] = BackendOption(seed, "--seed")
    if speed is not None:
        options["speed"] = BackendOption(speed, "--speed")
    if policy.source == "defaults":
        from gpuq.backends.registry import backend_class

        site_default = backend_class(backend_name).default_policy
        if site_default is not None:
            policy = PolicySource(site_default, f"{backend_name} backend's built-in policy")
    implicit: dict[str, Any] = {"policy": policy.policy}  # passed only to backends that take it (the demo)
    if clock is not None:
        implicit["clock"] = clock
    return Cluster(create_backend(backend_name, options, implicit), backend_name, policy, audit)


def open_clusters(config: Config | None = None, *, policy_file: str | None = None) -> list[Cluster]:
    """A handle per `[clusters.NAME]` in the config (the TUI's tabs); the default one when none."""
    cfg = config if config is not None else load_config()
    if not cfg.clusters:
        return [open_cluster(config=cfg, policy_file=policy_file)]
    return [open_cluster(cluster=name, config=cfg, policy_file=policy_file) for name in cfg.clusters]
