"""The action modal: bump, exempt, preempt or resume the selected job, in the service's two steps.

1. A form for the action's parameters (bump: to / by / urgent; exempt: for / until / off; preempt:
   the mode, the policy's by default; resume: none) and a reason (optional, as with the CLI's
   `--reason`; it goes to the audit log). "Prepare" has the service prepare it in a worker thread
   (it reads the cluster): nothing is changed yet.
2. The prepared action (`PendingAction`): what it changes, before and after, the exact commands
   or API requests, its warnings and, for a bump of a pending job, what it would then preempt.
   "Confirm" applies exactly that, "Dry run" records it without changing anything, "Cancel" (or
   escape) records that it was declined, as the CLI records a "no" at its prompt.

Every ending is audited by the service; escape before anything was prepared has nothing to audit.
A form the service refuses as invalid (`BadInput`) says why beside the fields; every other
outcome (done, refused, permission denied, the job changed underneath, unreachable) is a
notification, and the modal closes (dismissed with the `ActionOutcome`, or None). The buttons are
disabled while a worker runs, so a double press never applies an action twice.
"""

from __future__ import annotations

import shlex
import threading
from collections.abc import Callable, Sequence
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.notifications import SeverityLevel
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Select, Static

from gpuq.errors import BadInput, GpuqError, JobChanged, NotFound, PermissionDenied, Refused, Unreachable
from gpuq.model import Job
from gpuq.service import MAX_EXEMPT_S, ActionOutcome, Cluster, Mode, PendingAction, describe_preempted
from gpuq.textsafe import visible
from gpuq.timefmt import format_time, parse_duration, parse_time
from gpuq.tui.screens.whatif import parse_whole
from gpuq.tui.widgets.preview import PreviewBody
from gpuq.views.changes import changes, describe_value, to_second
from gpuq.views.preview import from_preview

__all__ = ["KINDS", "ActionScreen", "failure_title"]

#: what the operator chooses among, per action (the "how" Select's values and labels)
KINDS: dict[str, tuple[tuple[str, str], ...]] = {
    "bump": (("to", "to a priority"), ("by", "by points (+/-)"), ("urgent", "urgent")),
    "exempt": (("for", "for a duration"), ("until", "until a time"), ("off", "off (lift it)")),
    "preempt": (),
    "resume": (),
}
_PLACEHOLDERS = {
    "to": "the new priority, e.g. 500", "by": "points to add, e.g. 100 or -50", "urgent": "(nothing to give)",
    "for": "a duration, e.g. 2h, 90m, 1h30m", "until": "RFC 3339, e.g. 2026-11-30T08:00:00Z",
    "off": "(nothing to give)",
}  # fmt: skip
_DECLINED = "declined in the console"


def failure_title(action: str, exc: BaseException) -> str:
    """A notification's title for an action that did not happen, by why."""
    if isinstance(exc, JobChanged):
        return "the job changed underneath"
    if isinstance(exc, PermissionDenied):
        return f"{action}: permission denied"
    if isinstance(exc, BadInput):
        return f"{action}: invalid input"
    if isinstance(exc, NotFound):
        return f"{action}: not found"
    if isinstance(exc, Refused):
        return f"{action} refused"
    if isinstance(exc, Unreachable):
        return f"{action}: cluster unreachable"
    if isinstance(exc, GpuqError):
        return f"{action} failed"
    return f"{action} failed (a gpuq bug: {type(exc).__name__})"


class _Read(Message):
    def __init__(self, job: Job | None, now: float | None) -> None:
        super().__init__()
        self.job, self.now = job, now


class _Prepared(Message):
    def __init__(self, pending: PendingAction) -> None:
        super().__init__()
        self.pending = pending


class _Ended(Message):
    """A worker finished: `outcome` (confirmed, dry run), or `error`; `declined`: it was declined."""

    def __init__(self, stage: str, outcome: ActionOutcome | None = None, error: BaseException | None = None,
                 declined: bool = False) -> None:  # fmt: skip
        super().__init__()
        self.stage, self.outcome, self.error, self.declined = stage, outcome, error, declined


class ActionScreen(ModalScreen[ActionOutcome | None]):
    """See the module docstring."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel"),
        Binding("pageup", "page(-1)", "Scroll up", show=False),
        Binding("pagedown", "page(1)", "Scroll down", show=False),
    ]
    DEFAULT_CSS = """
    ActionScreen { align: center middle; }
    ActionScreen > #action-box {
        width: 110; max-width: 100%; height: auto; max-height: 100%;
        border: thick $primary; background: $surface; padding: 0 1;
    }
    ActionScreen #action-title { text-style: bold; color: $primary; }
    ActionScreen #action-job { color: $foreground-muted; }
    ActionScreen #action-scroll { height: auto; max-height: 65vh; }
    ActionScreen #action-form { height: auto; }
    ActionScreen .action-row { height: 1; margin-top: 1; }
    ActionScreen .action-row > Label { width: 8; }
    ActionScreen .action-row > Input, ActionScreen .action-row > Select { width: 1fr; }
    ActionScreen #action-error { color: $error; text-style: bold; height: auto; margin-top: 1; }
    ActionScreen #action-plan { height: auto; }
    ActionScreen #action-buttons { height: 2; padding-top: 1; dock: bottom; }
    ActionScreen #action-buttons > Button { margin-right: 2; }
    """

    def __init__(self, kind: str, cluster: Cluster, job_id: str) -> None:
        if kind not in KINDS:
            raise ValueError(f"no action {kind!r}")
        super().__init__()
        self.kind, self.cluster, self.job_id = kind, cluster, job_id
        self.pending: PendingAction | None = None
        #: a worker is preparing or ending the action
        self.busy = False
        #: the modal is closing: an action prepared after this is declined by its worker
        self._leaving = False
        #: a worker is confirming, dry-running or declining the action: it cannot be called back
        self._ending = False
        self._lock = threading.Lock()

    # -- layout

    def compose(self) -> ComposeResult:
        with Vertical(id="action-box"):
            yield Static(Text(f"{self.kind} job {visible(self.job_id)} on cluster {visible(self.cluster.name)}"),
                         id="action-title")  # fmt: skip
            yield Static(Text("reading the job …"), id="action-job")
            with VerticalScroll(id="action-scroll"):
                with Vertical(id="action-form"):
                    yield from self._fields()
                    with Horizontal(classes="action-row"):
                        yield Label("reason")
                        yield Input(placeholder="why (recorded in the audit log; optional)", id="action-reason",
                                    compact=True, max_length=500)  # fmt: skip
                yield Static(id="action-error")
                yield PreviewBody(spared=True, id="action-plan")
            with Horizontal(id="action-buttons"):
                yield Button("Prepare", variant="primary", id="action-prepare", compact=True)
                yield Button("Confirm", variant="error", id="action-confirm", compact=True)
                yield Button("Dry run", id="action-dry-run", compact=True)
                yield Button("Cancel", id="action-cancel", compact=True)

    def _fields(self) -> ComposeResult:
        choices = KINDS[self.kind]
        if choices:
            with Horizontal(classes="action-row"):
                yield Label("how")
                yield Select([(label, key) for key, label in choices], value=choices[0][0], allow_blank=False,
                             id="action-how", compact=True)  # fmt: skip
            with Horizontal(classes="action-row"):
                yield Label("value")
                yield Input(placeholder=_PLACEHOLDERS[choices[0][0]], id="action-value", compact=True)
        elif self.kind == "preempt":
            default = self.cluster.policy.mode
            with Horizontal(classes="action-row"):
                yield Label("mode")
                yield Select([(f"{m.value}{' (the policy default)' if m is default else ''}", m.value) for m in Mode],
                             value=default.value, allow_blank=False, id="action-mode", compact=True)  # fmt: skip
        else:
            yield Static(Text("resume the suspended job on the GPUs it kept: nothing to choose"))

    def on_mount(self) -> None:
        self.query_one("#action-error").display = False
        self.query_one("#action-plan").display = False
        for name in ("confirm", "dry-run"):
            self.query_one(f"#action-{name}").display = False
        focus = self.query("#action-how") or self.query("#action-mode") or self.query("#action-reason")
        focus.first().focus()
        self._read_job()

    # -- the job as it is (context, off the UI thread)

    @work(thread=True, exit_on_error=False, group="action-read", description="prepare the action")
    def _read_job(self) -> None:
        try:
            snapshot = self.cluster.snapshot(ledger=False)
        except Exception:  # noqa: BLE001 - only context: preparing reads the job again, and says why
            self.post_message(_Read(None, None))
            return
        self.post_message(_Read(snapshot.job(self.job_id), snapshot.now))

    @on(_Read)
    def _show_job(self, message: _Read) -> None:
        job, line = message.job, ""
        if job is not None:
            line = (f"{job.state.value} · {job.gpus} GPUs · priority {job.priority}{' (urgent)' if job.urgent else ''}"
                    f" · class {job.job_class} · user {job.user}")  # fmt: skip
            if job.exempt_until is not None:
                line += f" · exempt until {describe_value(job.exempt_until, 'exempt_until')}"
        elif message.now is not None:
            line = f"job {self.job_id} is not in the last snapshot"
        if message.now is not None:
            line += f" · cluster time {format_time(float(int(message.now)))}"
        self.query_one("#action-job", Static).update(Text(visible(line)))

    # -- step 1: the form

    @on(Select.Changed, "#action-how")
    def _how_changed(self, event: Select.Changed) -> None:
        key = self._how()
        value = self.query_one("#action-value", Input)
        value.placeholder = _PLACEHOLDERS.get(key, "")
        value.disabled = key in ("urgent", "off")

    def _how(self) -> str:
        chosen = self.query_one("#action-how", Select).value
        return chosen if isinstance(chosen, str) else KINDS[self.kind][0][0]

    def preparation(self) -> Callable[[], PendingAction]:
        """The service call the form asks for; BadInput naming what is wrong with the form."""
        cluster, job_id = self.cluster, self.job_id
        reason = self.query_one("#action-reason", Input).value.strip()
        if self.kind == "bump":
            how, text = self._how(), self.query_one("#action-value", Input).value
            if how == "urgent":
                return lambda: cluster.prepare_bump(job_id, urgent=True, reason=reason)
            lo, hi = cluster.priority_range()
            if not text.strip():
                raise BadInput(f"{how}: give a whole number (priorities range from {lo} to {hi})")
            number = parse_whole(text, how)
            if how == "to":
                return lambda: cluster.prepare_bump(job_id, to=number, reason=reason)
            return lambda: cluster.prepare_bump(job_id, by=number, reason=reason)
        if self.kind == "exempt":
            how, text = self._how(), self.query_one("#action-value", Input).value.strip()
            if how == "off":
                return lambda: cluster.prepare_exempt(job_id, off=True, reason=reason)
            if how == "for":
                try:
                    seconds = parse_duration(text, maximum=MAX_EXEMPT_S)
                except ValueError as exc:
                    raise BadInput(f"for: {exc}") from None
                return lambda: cluster.prepare_exempt(job_id, for_s=seconds, reason=reason)
            try:
                until = parse_time(text)
            except (ValueError, OverflowError):
                shown = repr(text) if len(text) <= 40 else f"{text[:36]!r}… ({len(text)} characters)"
                raise BadInput(f"until: {shown} is not an RFC 3339 time (e.g. 2026-11-30T08:00:00Z)") from None
            return lambda: cluster.prepare_exempt(job_id, until=until, reason=reason)
        if self.kind == "preempt":
            mode = Mode(str(self.query_one("#action-mode", Select).value))
            return lambda: cluster.prepare_preempt(job_id, mode=mode, reason=reason)
        return lambda: cluster.prepare_resume(job_id, reason=reason)

    def _say(self, problem: str | None) -> None:
        error = self.query_one("#action-error", Static)
        error.update(Text(visible(problem or "")))
        error.display = problem is not None

    def _set_busy(self, busy: bool) -> None:
        self.busy = busy
        for button in self.query(Button):
            button.disabled = busy

    @on(Input.Submitted)
    @on(Button.Pressed, "#action-prepare")
    def _prepare_pressed(self) -> None:
        if self.busy or self.pending is not None:
            return
        try:
            call = self.preparation()
        except BadInput as exc:
            self._say(str(exc))
            return
        self._say(None)
        self._set_busy(True)
        self._prepare(call)

    @work(thread=True, exit_on_error=False, group="action", description="end the action")
    def _prepare(self, call: Callable[[], PendingAction]) -> None:
        try:
            pending = call()
        except Exception as exc:  # noqa: BLE001 - every failure is shown, none raised
            self.post_message(_Ended("prepare", error=exc))
            return
        with self._lock:
            closing = self._leaving
            if not closing:
                self.pending = pending
        if closing:  # escape while it was being prepared: decline it here (it is audited)
            self._end(pending, "decline")
            return
        self.post_message(_Prepared(pending))

    # -- step 2: the prepared action

    @on(_Prepared)
    def _show_prepared(self, message: _Prepared) -> None:
        if self._leaving:  # escape came first: it is being declined
            return
        pending = message.pending
        self._set_busy(False)
        self.query_one("#action-form").display = False
        self.query_one("#action-prepare").display = False
        for name in ("confirm", "dry-run"):
            self.query_one(f"#action-{name}").display = True
        confirm = self.query_one("#action-confirm", Button)
        confirm.label = "Record it" if pending.noop else "Confirm"
        plan = self.query_one("#action-plan", PreviewBody)
        view = from_preview(pending.preview) if pending.preview is not None else None
        plan.set_preview(view, heading=pending_lines(pending),
                         note=None if view is None else "with the new priority:")  # fmt: skip
        plan.display = True
        confirm.focus()

    @on(Button.Pressed, "#action-confirm")
    def _confirm_pressed(self) -> None:
        self._finish("confirm")

    @on(Button.Pressed, "#action-dry-run")
    def _dry_run_pressed(self) -> None:
        self._finish("dry_run")

    def _finish(self, how: str) -> None:
        pending = self.pending
        if self.busy or pending is None or pending.done:
            return
        self._set_busy(True)
        self._ending = True
        self._end_in_worker(pending, how)

    @work(thread=True, exit_on_error=False, group="action", description="end the action")
    def _end_in_worker(self, pending: PendingAction, how: str) -> None:
        self._end(pending, how)

    def _end(self, pending: PendingAction, how: str) -> None:
        """Confirm, dry-run or decline `pending` (worker thread) and post what came of it. One
        worker ends an action (the buttons are disabled while it runs); an action already ended
        is left alone rather than met with PendingAction's RuntimeError."""
        if pending.done:
            return
        try:
            if how == "confirm":
                outcome: ActionOutcome | None = pending.confirm()
            elif how == "dry_run":
                outcome = pending.dry_run()
            else:
                pending.decline(_DECLINED)
                outcome = None
        except Exception as exc:  # noqa: BLE001 - shown as a notification, never raised
            self.post_message(_Ended(how, error=exc))
        else:
            self.post_message(_Ended(how, outcome=outcome, declined=how == "decline"))

    @on(_Ended)
    def _ended(self, message: _Ended) -> None:
        self._set_busy(False)
        kind = self.kind
        error = message.error
        if error is not None:
            if message.stage == "prepare" and isinstance(error, BadInput):
                self._say(str(error))  # the form can be put right: stay open
                return
            text = str(error) or type(error).__name__
            if isinstance(error, JobChanged):
                text = f"the job changed underneath: {text}"
            self._notify(text, failure_title(kind, error), "error")
            self.dismiss(None)
            return
        if message.declined:
            self._notify(
                f"{kind} of job {self.job_id} not confirmed: nothing was done (recorded in the audit log)",
                f"{kind} declined",
            )
            self.dismiss(None)
            return
        outcome = message.outcome
        assert outcome is not None
        self._notify_outcome(outcome)
        self.dismiss(outcome)

    def _notify_outcome(self, outcome: ActionOutcome) -> None:
        result = outcome.result
        lead = to_second(result.message or f"{result.action} job {result.target}")
        lines = [("[dry run] " if outcome.dry_run else "") + lead]
        verb = "would change" if outcome.dry_run else "changed"
        lines += [f"{key}: {old} -> {new} ({verb})" for key, old, new in changes(result.before, result.after)]
        if outcome.dry_run:
            lines.append("nothing was changed (the dry run is in the audit log)")
        elif result.preempted is not None and (result.preempted or outcome.preview is not None):
            lines.append(f"preempted for it: {describe_preempted(result.preempted)}")
        title = f"{result.action}: dry run" if outcome.dry_run else f"{result.action}: done"
        self._notify(lines, title)
        for warning in result.warnings:
            self._notify(warning, f"{result.action}: warning", "warning")

    def _notify(self, message: str | Sequence[str], title: str, severity: SeverityLevel = "information") -> None:
        """A notification of outside text: each line shown as data (times to the second), never markup."""
        shown = "\n".join(visible(to_second(line)) for line in ([message] if isinstance(message, str) else message))
        self.app.notify(shown, title=visible(title), severity=severity, timeout=12 if severity != "information" else 8,
                        markup=False)  # fmt: skip

    # -- leaving

    def action_cancel(self) -> None:
        """Escape / Cancel: decline what was prepared (audited); before that, nothing to audit."""
        if self._ending:
            self._notify(f"the {self.kind} is being carried out: wait for its outcome", "please wait", "warning")
            return
        with self._lock:
            self._leaving = True
            pending = self.pending
        if pending is not None and not pending.done:
            self._set_busy(True)
            self._ending = True
            self._end_in_worker(pending, "decline")
            return
        self.dismiss(None)

    @on(Button.Pressed, "#action-cancel")
    def _cancel_pressed(self) -> None:
        self.action_cancel()

    def action_page(self, direction: int) -> None:
        """Page up/down: scroll what was prepared (a bump's preview can be long at 80x24)."""
        scroll = self.query_one("#action-scroll", VerticalScroll)
        if direction < 0:
            scroll.scroll_page_up()
        else:
            scroll.scroll_page_down()


def pending_lines(pending: PendingAction) -> list[str]:
    """The prepared action in words (outside text included: shown as data by the caller)."""
    lines = [f"about to {to_second(pending.message or f'{pending.action} job {pending.target}')}",
             f"on cluster {pending.cluster} (backend {pending.backend})"]  # fmt: skip
    if pending.noop:
        lines.append("nothing to change: confirming only records it in the audit log")
    lines += [f"  {key}: {old} -> {new} (would change)" for key, old, new in changes(pending.before, pending.after)]
    lines += ["  would run: " + shlex.join(command) for command in pending.commands]
    lines += [f"  would send: {r.method} {r.path}" for r in pending.plan.requests]
    lines += [f"  warning: {to_second(w)}" for w in pending.warnings]
    lines.append(f"  reason: {pending.reason}" if pending.reason else "  reason: none given")
    return lines
