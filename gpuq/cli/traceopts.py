"""The options every command that reads a trace takes (`trace_options`), and `trace_args`, which
turns them into `gpuq.service.tracing.open_trace`'s keyword arguments.

    @click.command("replay")
    @click.argument("trace")
    @trace_options          # above @global_options: the global --seed is the trace's seed too
    @global_options
    def replay(trace: str, **options: Any) -> None:
        jobs = open_trace(trace, **trace_args(**options))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from gpuq.cli.options import current_app
from gpuq.errors import BadInput
from gpuq.service.tracing import PRESETS, parse_columns

__all__ = ["TRACE_KEYS", "trace_args", "trace_options"]

F = TypeVar("F", bound=Callable[..., Any])

#: the command parameters `trace_options` adds (and `trace_args` reads)
TRACE_KEYS = ("preset", "columns", "class_from", "seed")


def _columns(ctx: click.Context, param: click.Parameter, value: str | None) -> dict[str, str] | None:
    if value is None:
        return None
    try:
        return parse_columns(value)
    except BadInput as exc:
        raise click.BadParameter(str(exc).removeprefix("--columns: ")) from None


def _has_seed(func: Callable[..., Any]) -> bool:
    params = getattr(func, "__click_params__", [])
    return any("--seed" in getattr(p, "opts", ()) for p in params)


def trace_options(func: F) -> F:
    """Add `--preset`, `--columns`, `--class-from` and `--seed` (unless the command already has
    a `--seed`: gpuq's global one, which then seeds the class rules too)."""
    decorators: list[Callable[[F], F]] = [
        click.option(
            "--preset",
            type=click.Choice(PRESETS),
            help="Read a public trace in its published format: " + ", ".join(PRESETS) + ".",
        ),
        click.option(
            "--columns",
            metavar="KEY=COLUMN,…",
            callback=_columns,
            help="Read any CSV: which column holds each field, e.g. submit=submission_time,duration=duration,"
            "gpus=num_gpu (keys: submit, start, end, duration, gpus, class, priority, user, tenant, name, id, state).",
        ),
        click.option(
            "--class-from",
            metavar="COLUMN",
            help="Take each job's class from this column (this field, for JSON traces).",
        ),
    ]
    if not _has_seed(func):
        decorators.append(click.option(
            "--seed", type=int, default=None, metavar="N",
            help="Seed of the class rules for a trace without classes (default 0).",
        ))  # fmt: skip
    for decorator in reversed(decorators):
        func = decorator(func)
    return func


def trace_args(**kwargs: Any) -> dict[str, Any]:
    """`open_trace`'s keyword arguments from a command's parameters (others are ignored); the
    seed falls back to the global `--seed`, then 0."""
    seed = kwargs.get("seed")
    if seed is None:
        ctx = click.get_current_context(silent=True)
        seed = current_app(ctx).options.seed if ctx is not None else None
    return {
        "preset": kwargs.get("preset"),
        "columns": kwargs.get("columns"),
        "class_from": kwargs.get("class_from"),
        "seed": 0 if seed is None else int(seed),
    }
