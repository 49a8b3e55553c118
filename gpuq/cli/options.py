"""Global options accepted before or after the subcommand, and the per-invocation `App`.

`gpuq --backend demo queue` and `gpuq queue --backend demo` both work (kubectl style): the group
and every subcommand carry the same options, and their callbacks store given values in one
`GlobalOptions` on the root context; a value after the subcommand wins.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from typing import TYPE_CHECKING, Any, TypeVar

import click

from gpuq.config import OUTPUT_FORMATS

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem

    from gpuq.config import Config
    from gpuq.model import Snapshot
    from gpuq.service import Cluster

__all__ = ["App", "GlobalOptions", "Injected", "current_app", "global_options", "job_argument", "pass_app"]

F = TypeVar("F", bound=Callable[..., Any])
_META_KEY = "gpuq.globals"
_APP_KEY = "gpuq.app"


@dataclass(slots=True)
class GlobalOptions:
    backend: str | None = None
    cluster: str | None = None
    snapshot: str | None = None
    policy: str | None = None
    config: str | None = None
    output: str | None = None
    no_color: bool = False
    seed: int | None = None
    speed: float | None = None


@dataclass(frozen=True, slots=True)
class Injected:
    """What an embedding program or a test hands the CLI as click's ``obj`` instead of the
    defaults: the wall clock backends read (None: the real one)."""

    clock: Callable[[], float] | None = None


def _globals(ctx: click.Context) -> GlobalOptions:
    meta = ctx.find_root().meta
    opts = meta.get(_META_KEY)
    if opts is None:
        opts = meta[_META_KEY] = GlobalOptions()
    return opts


def _store(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    # Only given values are stored, so a default after the subcommand never erases one before it.
    if value is not None and value is not False and param.name:
        setattr(_globals(ctx), param.name, value)
    return value


def _global_option_decorators() -> list[Callable[[F], F]]:
    common: dict[str, Any] = {"expose_value": False, "callback": _store, "is_eager": True}
    return [
        click.option("--backend", metavar="NAME", help="Backend: demo, slurm (default: config, else demo).", **common),
        click.option("--cluster", metavar="NAME", help="Cluster name ([clusters.NAME] in the config).", **common),
        click.option(
            "--snapshot",
            metavar="FILE",
            help="Read a gpuq.snapshot/v1 file ('-' = stdin) instead of a live backend.",
            **common,
        ),
        click.option(
            "--policy", metavar="FILE", help="Policy TOML (default: config file, else built-in defaults).", **common
        ),
        click.option(
            "--config", metavar="FILE", help="Config file (default: $XDG_CONFIG_HOME/gpuq/config.toml).", **common
        ),
        click.option(
            "-o", "--output", type=click.Choice(OUTPUT_FORMATS, case_sensitive=False), help="Output format.", **common
        ),
        click.option(
            "--no-color", is_flag=True, default=False, help="No colours (NO_COLOR is honoured too).", **common
        ),
        click.option("--seed", type=int, metavar="N", help="Demo backend: random seed.", **common),
        click.option(
            "--speed",
            type=click.FloatRange(min=0, min_open=True),
            metavar="X",
            help="Demo backend: simulated seconds per second.",
            **common,
        ),
    ]


def global_options(func: F) -> F:
    """Add the global options to a command or the group."""
    for decorator in reversed(_global_option_decorators()):
        func = decorator(func)
    return func


class App:
    """What one invocation works with: the merged options, the config and the cluster handle."""

    def __init__(self, options: GlobalOptions, injected: Injected | None = None) -> None:
        self.options = options
        self.injected = injected or Injected()
        self._config: Config | None = None
        self._cluster: Cluster | None = None

    @property
    def config(self) -> Config:
        if self._config is None:
            from gpuq.config import load_config

            self._config = load_config(self.options.config)
        return self._config

    @property
    def cluster(self) -> Cluster:
        if self._cluster is None:
            from gpuq.service import open_cluster

            o = self.options
            self._cluster = open_cluster(
                backend=o.backend,
                cluster=o.cluster,
                snapshot=o.snapshot,
                policy_file=o.policy,
                config=self.config,
                seed=o.seed,
                speed=o.speed,
                clock=self.injected.clock,
            )
        return self._cluster

    def snapshot(self, *, ledger: bool = True) -> Snapshot:
        """The cluster's snapshot, as commands read it. A command lives one process long and keeps
        what it read to the end, so the collector is told to leave those objects alone from here
        on (`gc.freeze`): a large snapshot is never walked by a full collection that cannot free
        any of it. (A long-running front end does not do this: it reads again and again.)"""
        snap = self.cluster.snapshot(ledger=ledger)
        gc.freeze()
        return snap

    @property
    def output(self) -> str:
        return (self.options.output or self.config.output).lower()

    @property
    def color(self) -> bool:
        return not (self.options.no_color or "NO_COLOR" in os.environ or not self.config.color)


def current_app(ctx: click.Context | None = None) -> App:
    ctx = ctx or click.get_current_context()
    root = ctx.find_root()
    app = root.meta.get(_APP_KEY)
    if app is None:
        injected = root.obj if isinstance(root.obj, Injected) else None
        app = root.meta[_APP_KEY] = App(_globals(ctx), injected)
    return app


def pass_app(func: Callable[..., Any]) -> Callable[..., Any]:
    """Pass the invocation's `App` as the first argument."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return func(current_app(), *args, **kwargs)

    return wrapper


def _complete_job_id(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    from click.shell_completion import CompletionItem

    try:
        ids = current_app(ctx).cluster.job_ids()
    except Exception:  # noqa: BLE001 - a broken config must not break the operator's shell
        return []
    return [CompletionItem(i) for i in ids if i.startswith(incomplete)]


def job_argument(name: str = "job_id", *, required: bool = True) -> Callable[[F], F]:
    """A JOB argument whose values complete from the backend's job ids."""
    return click.argument(
        name, metavar="JOB" if required else "[JOB]", required=required, shell_complete=_complete_job_id
    )
