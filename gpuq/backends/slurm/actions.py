"""bump / exempt / preempt / resume on Slurm, in two steps: prepared on a fresh read of the job, applied
only while the job is still as it was.

Each ``prepare_*`` reads the preemption config fresh (an action never relies on a QOS table kept
on a fingerprint) and the job itself (``scontrol show job -d -o ID``), validates the request and
fixes the exact command lines. The plan's guard holds the job facts its commands depend on:
always the job's state and its run (StartTime, SubmitTime and restart count: a requeue starts a
new run and resets SubmitTime), plus what the commands were computed from (the QOS and
AdminComment an exemption rewrites, the priority a relative bump adds to: Slurm has no relative
update, so a ``--by`` bump prepared on priority P may only set P+by while the job is still at P).
`SlurmActions.apply` reads the job again, refuses with `JobChanged` when a guarded fact differs,
and otherwise runs the plan's commands exactly, then reports the job as it is afterwards.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpuq.backends.base import ActionPlan, ActionResult, PriorityChange
from gpuq.backends.slurm.config import PreemptConfig
from gpuq.backends.slurm.configread import class_key
from gpuq.backends.slurm.jobs import AdminNote, apply_suspensions, format_admin_comment, parse_admin_comment
from gpuq.backends.slurm.runner import parse_output
from gpuq.backends.slurm.text import parse_scontrol_detail, parse_scontrol_jobs
from gpuq.errors import BadInput, JobChanged, NotFound, Refused
from gpuq.model import Job, JobState
from gpuq.policy.config import Mode
from gpuq.timefmt import format_time

if TYPE_CHECKING:
    from gpuq.backends.slurm.backend import SlurmBackend

__all__ = ["HOLD_WARNING", "PRIORITY_MAX", "TOP_WARNING", "JobView", "SlurmActions"]

#: The highest base priority ``scontrol update Priority=`` accepts: scontrol parses the value with
#: ``parse_uint32`` (src/common/proc_args.c), which refuses anything >= NO_VAL (0xfffffffe), and
#: INFINITE (0xffffffff) means "release"; so 0xfffffffd. (Priority=0 is a hold, hence the low end 1.)
PRIORITY_MAX = 0xFFFFFFFD

HOLD_WARNING = (
    "a later hold/release recomputes the priority and drops this bump (Slurm: hold sets "
    "Priority=0, release recalculates it)"
)
TOP_WARNING = "gpuq does not use `scontrol top`: it raises the nice value of the user's other jobs"

_JOB_ID_RE = re.compile(r"^\d+(?:_\d+|_\[[\d,\-]+\]|\+\d+)?$")


@dataclass(frozen=True, slots=True)
class JobView:
    """One job as ``scontrol show job -d -o ID`` shows it, with what the model has no field for."""

    job: Job
    admin_comment: str
    restarts: int


def _epoch(moment: Any) -> float | None:
    return None if moment is None else float(moment.timestamp())


def _facts(view: JobView) -> dict[str, Any]:
    """Everything a guard may hold, as plain values."""
    job = view.job
    return {
        "state": job.state.value,
        "start_time": _epoch(job.start_time),
        "submit_time": _epoch(job.submit_time),
        "restarts": view.restarts,
        "priority": job.priority,
        "qos": job.qos,
        "admin_comment": view.admin_comment,
        "exempt_until": _epoch(job.exempt_until),
    }


#: The job and its current run: in every guard.
_RUN = ("state", "start_time", "submit_time", "restarts")
_LABELS = {
    "state": "state",
    "start_time": "run started",
    "submit_time": "submitted",
    "restarts": "restarts",
    "priority": "priority",
    "qos": "QOS",
    "admin_comment": "AdminComment",
    "exempt_until": "exempt until",
}
_TIMES = frozenset({"start_time", "submit_time", "exempt_until"})


def _shown(key: str, value: Any) -> str:
    if value is None:
        return "none"
    if key in _TIMES:
        return format_time(value)
    if key == "admin_comment":
        return repr(value)
    return str(value)


def _bump_fields(view: JobView) -> dict[str, Any]:
    return {"priority": view.job.priority, "qos": view.job.qos}


def _exempt_fields(view: JobView) -> dict[str, Any]:
    note = parse_admin_comment(view.admin_comment)
    return {"qos": view.job.qos, "exempt_until": note.exempt_until, "admin_comment": view.admin_comment}


def _preempt_fields(view: JobView) -> dict[str, Any]:
    job = view.job
    return {"state": job.state.value, "reason": job.reason, "nodes": list(job.allocation)}


#: The job fields each action reports before and after.
_FIELDS: dict[str, Callable[[JobView], dict[str, Any]]] = {
    "bump": _bump_fields,
    "exempt": _exempt_fields,
    "preempt": _preempt_fields,
    "resume": _preempt_fields,
}


class SlurmActions:
    """The actions of one `SlurmBackend` (its runner, config and settings)."""

    def __init__(self, backend: SlurmBackend) -> None:
        self.backend = backend
        # Marks the plans this backend prepared: `apply` runs no other.
        self._key = object()

    # ------------------------------------------------------------------ reading the job
    def read(self, job_id: str, cfg: PreemptConfig | None = None) -> JobView:
        """One job, via ``scontrol show job -d -o ID`` (``cfg``: the config an action read fresh;
        else the cached one)."""
        if not _JOB_ID_RE.match(job_id):
            raise NotFound(f"no job {job_id!r}: Slurm job ids look like 123, 123_4 or 77+1")
        backend = self.backend
        if cfg is None:
            cfg = backend.preempt_config()
        key = class_key(cfg)
        text = backend.runner.run(["scontrol", "show", "job", "-d", "-o", job_id], what=job_id)
        read = parse_output("scontrol show job", lambda: parse_scontrol_jobs(text, key))
        read = apply_suspensions(read, backend.clock())
        details = parse_output("scontrol show job", lambda: parse_scontrol_detail(text))
        for job in read.jobs:
            if job.id == job_id or read.raw_ids.get(job.id) == job_id:
                raw = read.raw_ids[job.id]
                if backend.queue_reader.forget(raw):
                    backend.disk.save()  # (a later invocation reads its details again too)
                admin = details[raw].admin_comment if raw in details else ""
                return JobView(job, admin, read.restarts.get(job.id, 0))
        where = f" on cluster {backend.cluster}" if backend.cluster else ""
        raise NotFound(f"no job {job_id}{where}")

    # ------------------------------------------------------------------ prepare
    def prepare_bump(self, job_id: str, change: PriorityChange) -> ActionPlan:
        backend = self.backend
        cfg = backend.configs.fresh_config()
        view = self.read(job_id, cfg)
        job = view.job
        pending = job.state is JobState.PENDING
        warnings = [HOLD_WARNING, TOP_WARNING]
        if not pending:
            warnings.append(f"job {job_id} is {job.state.value}: priority only matters while pending")
        guarded: tuple[str, ...] = ()
        if change.urgent:
            urgent_qos = backend.urgent_qos
            if urgent_qos and not pending:
                raise Refused(f"job {job_id} is {job.state.value}: Slurm only changes the QOS of pending jobs")
            if urgent_qos:
                cmd = ["scontrol", "update", f"JobId={job_id}", f"QOS={urgent_qos}"]
                expected: dict[str, Any] = {"priority": job.priority, "qos": urgent_qos}
                what, guarded = f"QOS {urgent_qos}", ("qos",)
            else:
                top = min(self._top_priority() + 1, PRIORITY_MAX)
                if top <= job.priority:
                    # Never lowered: a job already above the pending queue's top keeps its priority.
                    return self._noop(
                        "bump", job_id, view,
                        f"job {job_id} is already at priority {job.priority}, above the top of the pending queue "
                        f"({top - 1}): --urgent would lower it; nothing changed",
                    )  # fmt: skip
                cmd = ["scontrol", "update", f"JobId={job_id}", f"Priority={top}"]
                expected = {"priority": top, "qos": job.qos}
                what = f"priority {top} (the top of the pending queue)"
                warnings.append("no urgent QOS configured (GPUQ_SLURM_URGENT_QOS): set the top priority instead")
        else:
            priority = change.new_priority(job.priority)
            if priority is None:
                raise BadInput("bump needs --to/--by (a priority) or --urgent")
            if priority <= 0:
                raise Refused(f"priority {priority} would hold job {job_id} (Slurm: Priority=0 is a hold)")
            if priority > PRIORITY_MAX:
                raise BadInput(f"priority {priority} is above the highest Slurm accepts ({PRIORITY_MAX})")
            cmd = ["scontrol", "update", f"JobId={job_id}", f"Priority={priority}"]
            expected = {"priority": priority, "qos": job.qos}
            what = f"priority {priority}"
            if change.by is not None:
                # No relative update in Slurm: P+by is right only while the job is still at P.
                what, guarded = f"priority {priority} ({job.priority} {change.by:+d})", ("priority",)
        return self._plan(
            "bump", job_id, view, _bump_fields(view), expected, [cmd], warnings, cfg, guarded,
            message=f"bump job {job_id} to {what}", done=f"bumped job {job_id} to {what}",
        )  # fmt: skip

    def prepare_exempt(self, job_id: str, until: float | None) -> ActionPlan:
        backend = self.backend
        cfg = backend.configs.fresh_config()
        view = self.read(job_id, cfg)
        job = view.job
        note = parse_admin_comment(view.admin_comment)
        exempt_qos = backend.exempt_qos
        warnings: list[str] = []
        args = ["scontrol", "update", f"JobId={job_id}"]
        pending = job.state is JobState.PENDING
        if until is not None:
            # slurmctld refuses a QOS change once a job runs ("Job is no longer pending execution").
            new_qos = exempt_qos if exempt_qos and job.qos != exempt_qos and pending else None
            if exempt_qos and not pending and job.qos != exempt_qos:
                warnings.append(
                    f"job {job_id} is {job.state.value}: Slurm only changes the QOS of pending jobs, so "
                    "slurmctld may still preempt it; the exemption is recorded for gpuq's policy"
                )
            prev = note.prev_qos or (job.qos if new_qos else None)
            new_note = AdminNote(exempt_until=until, prev_qos=prev, other=note.other)
            if new_qos:
                args.append(f"QOS={new_qos}")
            if not exempt_qos:
                warnings.append(
                    "no non-preemptable QOS configured (GPUQ_SLURM_EXEMPT_QOS): slurmctld may still "
                    "preempt this job; only gpuq's own policy honours the exemption"
                )
            if cfg.by_partition:
                warnings.append("under preempt/partition_prio a QOS does not protect a job from slurmctld")
            message = f"exempt job {job_id} from preemption until {format_time(until)}"
            done = f"exempted job {job_id} from preemption until {format_time(until)}"
        else:
            restore = note.prev_qos if note.prev_qos and note.prev_qos != job.qos and pending else None
            if note.prev_qos and note.prev_qos != job.qos and not pending:
                warnings.append(
                    f"job {job_id} is {job.state.value}: its QOS stays {job.qos} (Slurm "
                    "only changes the QOS of pending jobs)"
                )
            new_note = AdminNote(exempt_until=None, prev_qos=None, other=note.other)
            if restore:
                args.append(f"QOS={restore}")
            message, done = f"lift the exemption of job {job_id}", f"lifted the exemption of job {job_id}"
        comment = format_admin_comment(new_note)
        args.append(f"AdminComment={comment}")
        expected = {
            "qos": next((a[4:] for a in args if a.startswith("QOS=")), job.qos),
            "exempt_until": until,
            "admin_comment": comment,
        }
        # The new AdminComment and QOS are computed from the current ones.
        return self._plan(
            "exempt", job_id, view, _exempt_fields(view), expected, [args], warnings, cfg, ("qos", "admin_comment"),
            message=message, done=done,
        )  # fmt: skip

    def prepare_preempt(self, job_id: str, mode: Mode) -> ActionPlan:
        backend = self.backend
        cfg = backend.configs.fresh_config()
        view = self.read(job_id, cfg)
        job = view.job
        if job.state not in (JobState.RUNNING, JobState.SUSPENDED):
            raise Refused(f"job {job_id} is {job.state.value}: only running jobs can be preempted")
        warnings: list[str] = []
        graceful = False
        if mode is Mode.REQUEUE:
            commands = [["scontrol", "requeue", job_id]]
            expected: dict[str, Any] = {"state": "pending", "reason": None, "nodes": []}
        elif mode is Mode.CANCEL:
            commands = [["scancel", job_id]]
            expected = {"state": "cancelled", "reason": None, "nodes": []}
        elif mode is Mode.SUSPEND:
            commands = [["scontrol", "suspend", job_id]]
            expected = {"state": "suspended", "reason": None, "nodes": list(job.allocation)}
            warnings.append("a suspended Slurm job keeps its GPUs: nothing is freed for other jobs")
        else:
            # Graceful: SIGTERM to the batch shell and steps, give it time to checkpoint, requeue.
            commands = [["scancel", "--signal=TERM", "--full", job_id], ["scontrol", "requeue", job_id]]
            expected = {"state": "pending", "reason": None, "nodes": []}
            graceful = True
            warnings.append(f"waits up to {backend.graceful_wait_s:g}s between the signal and the requeue")
        # An exemption written since (AdminComment) must stop it, as it would have stopped the prepare.
        return self._plan(
            "preempt", job_id, view, _preempt_fields(view), expected, commands, warnings, cfg, ("exempt_until",),
            message=f"preempt job {job_id} ({mode.value})", done=f"preempted job {job_id} ({mode.value})",
            settle=JobState(expected["state"]), graceful=graceful,
        )  # fmt: skip

    def prepare_resume(self, job_id: str) -> ActionPlan:
        """``scontrol resume ID`` for a job suspended (``scontrol suspend``), holding its GPUs."""
        cfg = self.backend.configs.fresh_config()
        view = self.read(job_id, cfg)
        job = view.job
        if job.state is not JobState.SUSPENDED:
            raise Refused(f"job {job_id} is {job.state.value}: only suspended jobs can be resumed")
        expected = {"state": "running", "reason": None, "nodes": list(job.allocation)}
        return self._plan(
            "resume", job_id, view, _preempt_fields(view), expected, [["scontrol", "resume", job_id]], [], cfg, (),
            message=f"resume job {job_id}", done=f"resumed job {job_id}", settle=JobState.RUNNING,
        )  # fmt: skip

    def _noop(self, action: str, job_id: str, view: JobView, message: str) -> ActionPlan:
        """A plan that changes nothing (`ActionPlan.noop`): the service audits it, nothing runs."""
        fields = _FIELDS[action](view)
        return ActionPlan(action, job_id, dict(fields), dict(fields), message=message, noop=True,
                          payload={"key": self._key})  # fmt: skip

    def _plan(
        self,
        action: str,
        job_id: str,
        view: JobView,
        before: Mapping[str, Any],
        expected: Mapping[str, Any],
        commands: Sequence[Sequence[str]],
        warnings: Sequence[str],
        cfg: PreemptConfig,
        guarded: Sequence[str],
        *,
        message: str,
        done: str,
        settle: JobState | None = None,
        graceful: bool = False,
    ) -> ActionPlan:
        # Report only the fields the action sets (an unchanged QOS is not part of a bump).
        keys = [k for k, v in expected.items() if v != before.get(k)] or list(expected)
        if set(keys) <= set(before):
            before = {k: before[k] for k in keys}
            expected = {k: expected[k] for k in keys}
        facts = _facts(view)
        cluster = self.backend.cluster
        where = f" on cluster {cluster}" if cluster else ""
        return ActionPlan(
            action=action,
            target=job_id,
            before=dict(before),
            after=dict(expected),
            commands=tuple(tuple(self.backend.runner.argv(c)) for c in commands),
            warnings=tuple(warnings),
            message=message + where,
            guard={k: facts[k] for k in (*_RUN, *guarded)},
            payload={"key": self._key, "config": cfg, "done": done + where, "settle": settle, "graceful": graceful},
        )

    # ------------------------------------------------------------------ apply
    def apply(self, plan: ActionPlan) -> ActionResult:
        payload = plan.payload
        if payload.get("key") is not self._key or plan.action not in _FIELDS:
            raise Refused(f"this {plan.action} of job {plan.target} was not prepared by this Slurm backend")
        backend = self.backend
        cfg: PreemptConfig = payload["config"]
        job_id = plan.target
        self._check(plan, self.read(job_id, cfg))
        try:
            for i, cmd in enumerate(plan.commands):
                if i > 0 and payload["graceful"]:
                    self._wait_stopped(job_id, backend.graceful_wait_s, cfg)
                backend.runner.run(cmd, what=job_id, as_is=True)
        finally:
            backend.expire_history()
        settle: JobState | None = payload["settle"]
        fields = _FIELDS[plan.action]
        try:
            view = self.read(job_id, cfg)
            # A requeued or cancelled job passes through COMPLETING: report where it lands.
            deadline = time.monotonic() + backend.runner.timeout_s
            while settle is not None and view.job.state is not settle and time.monotonic() < deadline:
                time.sleep(0.5)
                view = self.read(job_id, cfg)
            after: dict[str, Any] = fields(view)
            if set(plan.before) < set(after):
                after = {k: after[k] for k in plan.before}
        except NotFound:
            after = {"state": "gone"}
        return ActionResult(
            plan.action, job_id, plan.before, after, plan.commands, (), plan.warnings, str(payload["done"])
        )

    def _check(self, plan: ActionPlan, view: JobView) -> None:
        """JobChanged, naming each change, when a guarded fact is not what the plan was made on."""
        now = _facts(view)
        changed = [k for k, was in plan.guard.items() if now.get(k) != was]
        if not changed:
            return
        what = "; ".join(f"{_LABELS.get(k, k)} {_shown(k, plan.guard[k])} -> {_shown(k, now.get(k))}" for k in changed)
        why = ""
        if "priority" in changed:
            why = " (Slurm has no relative priority update: a --by bump applies only to the priority it was made on)"
        raise JobChanged(
            f"job {plan.target} changed since the {plan.action} was prepared ({what}); nothing was done{why}: "
            "look again and retry"
        )

    def _top_priority(self) -> int:
        out = self.backend.runner.run(["squeue", "-h", "-t", "PD", "-O", "PriorityLong"])
        values = [int(v) for v in out.split() if v.isdigit()]
        return max(values, default=0)

    def _wait_stopped(self, job_id: str, wait_s: float, cfg: PreemptConfig) -> None:
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if self.read(job_id, cfg).job.state is not JobState.RUNNING:
                return
            time.sleep(1.0)
