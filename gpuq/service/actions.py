"""Two-step actions: a `PendingAction` fixed when prepared, then confirmed, declined or dry-run.

Preparing validates the request, reads the job as it is and has the backend fix the exact calls
it will make (`ActionPlan`), and, for a bump of a pending job, previews what the job would then
preempt; nothing is changed. The front end shows all of that and asks. Then exactly one of:

- `confirm()`: an intent record goes to the audit log (and is on disk) before the backend is
  touched; the backend applies exactly the prepared plan, or refuses with `JobChanged` if the job
  changed underneath; the outcome record follows. A crash in between leaves the intent, which
  `gpuq audit` shows as "outcome unknown: check the cluster".
- `decline(why)`: records that the operator did not confirm (also for Ctrl-C at the prompt).
- `dry_run()`: records the dry run.

An action with nothing to change (`noop`: lifting an exemption the job does not have) is
confirmed without calling the backend: one outcome record, marked ``noop``.

A bump's preview is what the operator was shown it would set off; the plan carries it to the
backend (`ActionPlan.foreseen`), and when the backend reports what really happened
(`ActionResult.preempted`) and that differs, the outcome says so, naming the jobs really preempted.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from gpuq.audit import AuditError, AuditLog, make_record, new_action_id, safe_text
from gpuq.backends.base import ActionPlan, ActionResult
from gpuq.errors import GpuqError

if TYPE_CHECKING:
    from gpuq.service.cluster import Preview

__all__ = ["ActionOutcome", "PendingAction", "describe_preempted"]


def describe_preempted(victims: Mapping[str, Sequence[str]]) -> str:
    """Jobs preempted, with their nodes, in words: "1324 on gpu-012, 1486 on gpu-011" or "nothing"."""
    if not victims:
        return "nothing"
    return ", ".join(f"{job} on {', '.join(nodes)}" if nodes else job for job, nodes in victims.items())


class ActionOutcome(msgspec.Struct, frozen=True):
    """What an action did (or, dry run, would do) and, for a bump, what the job would now preempt."""

    result: ActionResult
    record: Mapping[str, Any]
    dry_run: bool = False
    preview: Preview | None = None


class PendingAction(msgspec.Struct):
    """An action prepared on one cluster and not yet carried out; see the module docstring."""

    action: str
    target: str
    cluster: str
    backend: str
    args: Mapping[str, Any]
    reason: str
    plan: ActionPlan
    preview: Preview | None
    audit: AuditLog
    apply: Callable[[ActionPlan], ActionResult]
    #: the lock that serialises a cluster's actions (reads may run beside them)
    lock: threading.Lock
    id: str = msgspec.field(default_factory=new_action_id)
    done: bool = False
    #: nothing to change (see the module docstring): confirming calls no backend
    noop: bool = False

    # -- what the front end shows

    @property
    def before(self) -> Mapping[str, Any]:
        return self.plan.before

    @property
    def after(self) -> Mapping[str, Any]:
        return self.plan.after

    @property
    def commands(self) -> tuple[tuple[str, ...], ...]:
        return self.plan.commands

    @property
    def warnings(self) -> tuple[str, ...]:
        return self.plan.warnings

    @property
    def message(self) -> str:
        return self.plan.message

    # -- the three ways to end it

    def dry_run(self) -> ActionOutcome:
        """Record the dry run; nothing is changed."""
        self._finish()
        plan = self.plan
        record = self._record("dry_run", dry_run=True, before=plan.before, after=plan.after)
        self.audit.append(record)
        result = ActionResult(plan.action, plan.target, plan.before, plan.after, plan.commands, plan.requests,
                              plan.warnings, plan.message)  # fmt: skip
        return ActionOutcome(result, record, dry_run=True, preview=self.preview)

    def decline(self, why: str) -> None:
        """Record that the action was not confirmed (nothing was done)."""
        self._finish()
        self.audit.append(self._record("refused", error=why, exit_code=1))

    def confirm(self) -> ActionOutcome:
        """Apply exactly the prepared plan, between an intent and an outcome record."""
        self._finish()
        if self.noop:
            plan = self.plan
            record = self._record("ok", before=plan.before, after=plan.after, noop=True)
            self.audit.append(record)
            result = ActionResult(plan.action, plan.target, plan.before, plan.after, (), (), plan.warnings,
                                  plan.message)  # fmt: skip
            return ActionOutcome(result, record)
        with self.lock, self.audit.open() as writer:  # opened first: an unwritable log stops it here
            try:
                writer.write(self._record("pending", phase="intent", before=self.plan.before, after=self.plan.after))
            except AuditError as exc:
                raise AuditError(f"{exc}; nothing was done") from None
            try:
                result = self.apply(self.plan)
            except GpuqError as exc:
                self._write_failure(writer, exc, exc.exit_code)
                raise
            except Exception as exc:
                self._write_failure(writer, exc, 1)
                raise
            result = self._as_foreseen(result)
            record = self._record(
                "ok", before=result.before, after=result.after, commands=result.commands, requests=result.requests,
                warnings=result.warnings, preempted=result.preempted,
            )  # fmt: skip
            try:
                writer.write(record)
            except AuditError as exc:
                raise AuditError(
                    f"{self.action} of job {self.target} WAS APPLIED, but its outcome is not in the audit log "
                    f"({exc}); `gpuq audit` shows it as outcome unknown"
                ) from None
        return ActionOutcome(result, record, preview=self.preview)

    def _as_foreseen(self, result: ActionResult) -> ActionResult:
        """`result`, with a warning and a note in its message when it preempted other jobs than
        the preview the operator was shown."""
        foreseen = self.plan.foreseen
        actual = result.preempted
        if foreseen is None or actual is None or set(actual) == set(foreseen.victims):
            return result
        shown, happened = describe_preempted(foreseen.victims), describe_preempted(actual)
        warning = (f"not as previewed: the preview showed it would preempt {shown}; the scheduler "
                   f"preempted {happened}")  # fmt: skip
        return msgspec.structs.replace(result, warnings=(*result.warnings, warning),
                       message=f"{result.message}; it preempted {happened} (not as previewed)")  # fmt: skip

    # -- records

    def _finish(self) -> None:
        if self.done:
            raise RuntimeError(f"{self.action} of job {self.target} was already confirmed, declined or dry-run")
        self.done = True

    def _record(self, result: str, *, phase: str = "outcome", **fields: Any) -> dict[str, Any]:
        plan = self.plan
        fields.setdefault("commands", plan.commands)
        fields.setdefault("requests", plan.requests)
        fields.setdefault("warnings", plan.warnings)
        requests = [r.to_dict() for r in fields.pop("requests")]
        return make_record(
            backend=self.backend, cluster=self.cluster, action=self.action, target=safe_text(self.target),
            result=result, reason=self.reason, args=self.args, requests=requests, action_id=self.id, phase=phase,
            **fields,
        )  # fmt: skip

    def _write_failure(self, writer: Any, exc: BaseException, exit_code: int) -> None:
        message = str(exc) or type(exc).__name__
        try:
            writer.write(self._record("error", error=safe_text(message), exit_code=exit_code))
        except AuditError as audit_exc:
            raise AuditError(f"{message} (and {audit_exc})") from exc
