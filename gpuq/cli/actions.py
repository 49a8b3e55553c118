"""`gpuq bump`, `gpuq exempt`, `gpuq preempt`: the mutating commands.

Each is audited (dry run or not, success or failure). Without `--yes`: on a terminal the action
is first run as a dry run and shown, then confirmed; elsewhere it is refused (exit 1) with a hint
to pass `--yes`. `-o json` prints `{"action", "target", "dry_run", "before", "after", "commands",
"warnings", "message", "preview"}` (`preview` is a bump's plan, else null).
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from gpuq.cli.options import App, global_options, job_argument, pass_app
from gpuq.cli.render import changes, emit_csv, emit_json, make_console, warn
from gpuq.errors import Refused
from gpuq.policy.config import Mode
from gpuq.timefmt import parse_duration, parse_time

if TYPE_CHECKING:
    from gpuq.service import ActionOutcome

__all__ = ["bump", "exempt", "preempt"]


def is_interactive() -> bool:
    """Whether a person can answer a prompt (patched in tests)."""
    return sys.stdin.isatty()


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
                "dry_run": result.dry_run,
                "before": dict(result.before),
                "after": dict(result.after),
                "commands": [list(c) for c in result.commands],
                "warnings": list(result.warnings),
                "message": result.message,
                "preview": outcome.preview.to_dict() if outcome.preview is not None else None,
            }
        )
        return
    if app.output == "csv":
        emit_csv(
            ("action", "job", "dry_run", "field", "before", "after"),
            (
                [result.action, result.target, result.dry_run, *change]
                for change in changes(result.before, result.after)
            ),
        )
        return
    console = make_console(app)
    verb = "would change" if result.dry_run else "changed"
    lead = result.message or f"{result.action} job {result.target}"
    console.print(("[dry run] " if result.dry_run else "") + lead, markup=False)
    for key, old, new in changes(result.before, result.after):
        console.print(f"  {key}: {old} -> {new} ({verb})", markup=False)
    for command in result.commands:
        console.print(("  would run: " if result.dry_run else "  ran: ") + shlex.join(command), markup=False)
    if outcome.preview is not None and app.output == "table":
        show_preview(app, outcome.preview, heading="with the new priority:")


def _run(
    app: App,
    *,
    action: str,
    target: str,
    reason: str,
    yes: bool,
    dry_run: bool,
    args: dict[str, Any],
    call: Callable[[bool], ActionOutcome],
) -> None:
    """Dry run / confirm / act, in that order, so nothing is half-applied on a refusal."""
    cluster = app.cluster
    if not (yes or dry_run):
        if not is_interactive():
            why = f"refusing to {action} job {target} without confirmation: not a terminal"
            cluster.record_declined(action, target, reason=reason, args=args, why=why)
            raise Refused(f"{why}; pass --yes to confirm (or --dry-run to see what would happen)")
        preview = call(True)  # validates everything and is audited as a dry run
        if app.output == "table":
            _show(app, preview)
        if not click.confirm(f"{action} job {target} on cluster {cluster.name}?", default=False, err=True):
            cluster.record_declined(action, target, reason=reason, args=args, why="not confirmed at the prompt")
            raise Refused(f"{action} of job {target} not confirmed; nothing was done")
    _show(app, call(dry_run))


_COMMON = [
    click.option("--reason", default="", metavar="TEXT", help="Why (recorded in the audit log)."),
    click.option("--dry-run", is_flag=True, help="Show what would happen; change nothing (still audited)."),
    click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation (needed when not on a terminal)."),
]


def _common(func: Callable[..., Any]) -> Callable[..., Any]:
    for decorator in reversed(_COMMON):
        func = decorator(func)
    return func


def _priority(app: App, option: str, value: str | None, *, signed: bool) -> int | None:
    if value is None:
        return None
    lo, hi = app.cluster.priority_range()
    text = value.strip()
    digits = text[1:] if text[:1] in "+-" else text
    if not digits.isdigit():
        what = "a whole number of priority points (may be negative)" if signed else "an integer"
        raise click.BadParameter(
            f"{value!r} is not {what}; priorities range from {lo} to {hi} (use --urgent for the top)",
            param_hint=option,
        )
    number = int(text)
    if not signed and not lo <= number <= hi:
        raise click.BadParameter(
            f"{number} is outside the allowed range {lo} to {hi} (use --urgent for the top)", param_hint=option
        )
    return number


@click.command("bump")
@job_argument()
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
    if sum((to is not None, by is not None, urgent)) != 1:
        raise click.UsageError("give exactly one of --to P, --by D, --urgent")
    to_value = _priority(app, "--to", to, signed=False)
    by_value = _priority(app, "--by", by, signed=True)
    args = {k: v for k, v in {"to": to_value, "by": by_value, "urgent": urgent}.items() if v}
    _run(
        app,
        action="bump",
        target=job_id,
        reason=reason,
        yes=yes,
        dry_run=dry_run,
        args=args,
        call=lambda dry: app.cluster.bump(job_id, to=to_value, by=by_value, urgent=urgent, reason=reason, dry_run=dry),
    )


@click.command("exempt")
@job_argument()
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
    if sum((for_ is not None, until is not None, off)) != 1:
        raise click.UsageError("give exactly one of --for DURATION, --until TIME, --off")
    for_s = until_t = None
    if for_ is not None:
        try:
            for_s = parse_duration(for_)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--for") from None
    if until is not None:
        try:
            until_t = parse_time(until)
        except ValueError:
            raise click.BadParameter(
                f"{until!r} is not an RFC 3339 time (e.g. 2026-11-30T08:00:00Z)", param_hint="--until"
            ) from None
    args = {k: v for k, v in {"for_s": for_s, "until": until, "off": off}.items() if v}
    _run(
        app,
        action="exempt",
        target=job_id,
        reason=reason,
        yes=yes,
        dry_run=dry_run,
        args=args,
        call=lambda dry: app.cluster.exempt(job_id, for_s=for_s, until=until_t, off=off, reason=reason, dry_run=dry),
    )


@click.command("preempt")
@job_argument()
@click.option("--mode", type=click.Choice([m.value for m in Mode]), help="How to preempt (default: the policy's mode).")
@_common
@global_options
@pass_app
def preempt(app: App, job_id: str, mode: str | None, reason: str, dry_run: bool, yes: bool) -> None:
    """Preempt a running job now."""
    chosen = Mode(mode) if mode else None
    args = {"mode": (chosen or app.cluster.policy.mode).value}
    _run(
        app,
        action="preempt",
        target=job_id,
        reason=reason,
        yes=yes,
        dry_run=dry_run,
        args=args,
        call=lambda dry: app.cluster.preempt(job_id, mode=chosen, reason=reason, dry_run=dry),
    )
