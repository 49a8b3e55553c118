"""`gpuq bump`, `gpuq exempt`, `gpuq preempt`, `gpuq resume`: the mutating commands, in two steps.

The service prepares the action (validation, the job as it is, the exact calls, for a bump what
the job would then preempt) and audits every ending. `--dry-run` shows and records it; `--yes`
applies it at once; otherwise, on a terminal, it is shown and confirmed at a `[y/N]` prompt (a
no, or Ctrl-C, is recorded as declined), and elsewhere it is refused (exit 1) with a hint to pass
`--yes`. `-o json` prints `{"action", "target", "dry_run", "before", "after", "commands",
"requests", "warnings", "message", "preview", "preempted"}` (`preview` is a bump's plan, else
null; `preempted`: the jobs an applied action made the scheduler preempt, `{id: [nodes]}`, null
for a dry run or where the backend cannot tell). An action with nothing to do (lifting an
exemption the job does not have) needs no confirmation: it says so, is audited, and exits 0.
"""

from __future__ import annotations

import shlex
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any

import click

from gpuq.cli.options import App, global_options, job_argument, pass_app
from gpuq.cli.render import emit_csv, emit_json, say, warn
from gpuq.errors import Refused
from gpuq.model import JobState
from gpuq.service import MAX_EXEMPT_S, ActionOutcome, Mode, PendingAction, describe_preempted
from gpuq.timefmt import format_time, parse_duration, parse_time
from gpuq.views.changes import changes
from gpuq.views.changes import to_second as _to_second
from gpuq.views.preview import from_preview

__all__ = ["bump", "exempt", "preempt", "resume"]


def is_interactive() -> bool:
    """Whether a person can answer a prompt (patched in tests)."""
    return sys.stdin.isatty()


def _clocks(app: App, record: Mapping[str, Any] | None = None) -> str:
    """Which clock is which: the cluster's (the demo runs ahead of the wall clock; every time in
    an action's output is the cluster's) and the wall time the audit log records."""
    try:
        cluster_now: float | None = app.cluster.snapshot(ledger=False).now  # the one just read
    except Exception:  # noqa: BLE001 - only a label; the action's own output stands without it
        cluster_now = None
    wall: float | None = None
    if record is not None and isinstance(record.get("time"), str):
        try:
            wall = parse_time(record["time"])
        except ValueError:
            wall = None
    if wall is None:
        wall = (app.injected.clock or time.time)()
    shown = "-" if cluster_now is None else format_time(int(cluster_now))
    return f"  cluster time {shown}; wall time {format_time(int(wall))} (the audit log's clock)"


def _show_pending(app: App, pending: PendingAction, *, heading: str) -> None:
    """The prepared action, before the prompt: what it changes, the exact calls, the preview."""
    from gpuq.cli.preview import show_preview

    say(app, f"{heading}{_to_second(pending.message or f'{pending.action} job {pending.target}')}")
    for key, old, new in changes(pending.before, pending.after):
        say(app, f"  {key}: {old} -> {new} (would change)")
    for command in pending.commands:
        say(app, "  would run: " + shlex.join(command))
    for request in pending.plan.requests:
        say(app, f"  would send: {request.method} {request.path}")
    say(app, _clocks(app))
    if pending.preview is not None:
        show_preview(app, from_preview(pending.preview), heading="with the new priority:")


def _show(app: App, outcome: ActionOutcome) -> None:
    from gpuq.cli.preview import show_preview

    result = outcome.result
    for message in result.warnings:
        warn(message)
    if app.output == "json":
        emit_json(
            {
                "action": result.action,
                "target": result.target,
                "dry_run": outcome.dry_run,
                "before": dict(result.before),
                "after": dict(result.after),
                "commands": [list(c) for c in result.commands],
                "requests": [r.to_dict() for r in result.requests],
                "warnings": list(result.warnings),
                "message": result.message,
                "preview": outcome.preview.to_dict() if outcome.preview is not None else None,
                "preempted": None if result.preempted is None else {k: list(v) for k, v in result.preempted.items()},
            }
        )
        return
    if app.output == "csv":
        emit_csv(
            ("action", "job", "dry_run", "field", "before", "after"),
            ([result.action, result.target, outcome.dry_run, *c] for c in changes(result.before, result.after)),
        )
        return
    verb = "would change" if outcome.dry_run else "changed"
    lead = _to_second(result.message or f"{result.action} job {result.target}")
    say(app, ("[dry run] " if outcome.dry_run else "") + lead)
    for key, old, new in changes(result.before, result.after):
        say(app, f"  {key}: {old} -> {new} ({verb})")
    for command in result.commands:
        say(app, ("  would run: " if outcome.dry_run else "  ran: ") + shlex.join(command))
    for request in result.requests:
        say(app, ("  would send: " if outcome.dry_run else "  sent: ") + f"{request.method} {request.path}")
    say(app, _clocks(app, outcome.record))
    if result.preempted is not None and (result.preempted or outcome.preview is not None):  # what really happened
        say(app, f"  preempted for it: {describe_preempted(result.preempted)}")
    if outcome.preview is not None:
        heading = "with the new priority:" if outcome.dry_run else "as previewed before it was applied:"
        show_preview(app, from_preview(outcome.preview), heading=heading)


def _run(app: App, prepare: Callable[[], PendingAction], *, yes: bool, dry_run: bool) -> None:
    """Prepare, then dry-run, confirm or decline: every ending is audited by the service."""
    pending = prepare()
    if dry_run:
        _show(app, pending.dry_run())
        return
    if pending.noop:  # nothing would change: nothing to confirm (still audited)
        _show(app, pending.confirm())
        return
    if not yes:
        what = f"{pending.action} job {pending.target}"
        if not is_interactive():
            why = f"refusing to {what} without confirmation: not a terminal"
            pending.decline(why)
            raise Refused(f"{why}; pass --yes to confirm (or --dry-run to see what would happen)")
        if app.output == "table":
            _show_pending(app, pending, heading="about to ")
        try:
            confirmed = click.confirm(f"{what} on cluster {pending.cluster}?", default=False, err=True)
        except (click.exceptions.Abort, KeyboardInterrupt):
            pending.decline("interrupted at the prompt")
            raise
        if not confirmed:
            pending.decline("not confirmed at the prompt")
            raise Refused(f"{what} not confirmed; nothing was done")
    _show(app, pending.confirm())


_COMMON = [
    click.option("--reason", default="", metavar="TEXT", help="Why (recorded in the audit log)."),
    click.option("--dry-run", is_flag=True, help="Show what would happen; change nothing (still audited)."),
    click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation (needed when not on a terminal)."),
]


def _common(func: Callable[..., Any]) -> Callable[..., Any]:
    for decorator in reversed(_COMMON):
        func = decorator(func)
    return func


def _integer(app: App, option: str, value: str | None, *, signed: bool) -> int | None:
    """The number an option was given (whether it is in range is the service's to check)."""
    if value is None:
        return None
    text = value.strip()
    digits = text[1:] if text[:1] in "+-" else text
    # (ASCII digits only: str.isdigit also takes '²', which int() refuses; and no more than a
    # priority can have, so int() never meets the 4,300-digit limit)
    if not (digits.isascii() and digits.isdigit()) or len(digits) > 20:
        lo, hi = app.cluster.priority_range()
        what = "a whole number of priority points (may be negative)" if signed else "an integer"
        shown = repr(value) if len(value) <= 24 else f"{value[:20]!r}… ({len(value)} characters)"
        raise click.BadParameter(
            f"{shown} is not {what} in range; priorities range from {lo} to {hi} (use --urgent for the top)",
            param_hint=option,
        )
    return int(text)


@click.command("bump")
@job_argument(states=(JobState.PENDING, JobState.RUNNING))
@click.option("--to", "to", metavar="P", help="Set the priority to P.")
@click.option("--by", "by", metavar="D", help="Raise (or with a minus sign lower) the priority by D.")
@click.option("--urgent", is_flag=True, help="Make the job manually urgent (the policy's urgent priority).")
@_common
@global_options
@pass_app
def bump(
    app: App, job_id: str, to: str | None, by: str | None, urgent: bool, reason: str, dry_run: bool, yes: bool
) -> None:
    """Change a job's priority, then show what it would now preempt."""
    to_value = _integer(app, "--to", to, signed=False)
    by_value = _integer(app, "--by", by, signed=True)
    _run(app, lambda: app.cluster.prepare_bump(job_id, to=to_value, by=by_value, urgent=urgent, reason=reason,
                                                 dry_run=dry_run),
         yes=yes, dry_run=dry_run)  # fmt: skip


@click.command("exempt")
@job_argument(states=(JobState.PENDING, JobState.RUNNING, JobState.SUSPENDED))
@click.option("--for", "for_", metavar="DURATION", help="Exempt for DURATION (e.g. 2h).")
@click.option("--until", metavar="TIME", help="Exempt until TIME (RFC 3339, e.g. 2026-11-30T08:00:00Z).")
@click.option("--off", is_flag=True, help="Lift the exemption.")
@_common
@global_options
@pass_app
def exempt(
    app: App, job_id: str, for_: str | None, until: str | None, off: bool, reason: str, dry_run: bool, yes: bool
) -> None:
    """Protect a job from preemption for a while (or lift the protection)."""
    for_s = until_t = None
    if for_ is not None:
        try:
            for_s = parse_duration(for_, maximum=MAX_EXEMPT_S)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--for") from None
    if until is not None:
        try:
            until_t = parse_time(until)
        except (ValueError, OverflowError):
            raise click.BadParameter(
                f"{until!r} is not an RFC 3339 time (e.g. 2026-11-30T08:00:00Z)", param_hint="--until"
            ) from None
    _run(app, lambda: app.cluster.prepare_exempt(job_id, for_s=for_s, until=until_t, off=off, reason=reason,
                                                   dry_run=dry_run),
         yes=yes, dry_run=dry_run)  # fmt: skip


@click.command("preempt")
@job_argument(states=(JobState.RUNNING,))
@click.option("--mode", type=click.Choice([m.value for m in Mode]), help="How to preempt (default: the policy's mode).")
@_common
@global_options
@pass_app
def preempt(app: App, job_id: str, mode: str | None, reason: str, dry_run: bool, yes: bool) -> None:
    """Preempt a running job now."""
    chosen = Mode(mode) if mode else None
    _run(app, lambda: app.cluster.prepare_preempt(job_id, mode=chosen, reason=reason, dry_run=dry_run),
         yes=yes, dry_run=dry_run)  # fmt: skip


@click.command("resume")
@job_argument(states=(JobState.SUSPENDED,))
@_common
@global_options
@pass_app
def resume(app: App, job_id: str, reason: str, dry_run: bool, yes: bool) -> None:
    """Resume a suspended job (one `preempt --mode suspend` paused, holding its GPUs)."""
    _run(app, lambda: app.cluster.prepare_resume(job_id, reason=reason, dry_run=dry_run), yes=yes, dry_run=dry_run)
