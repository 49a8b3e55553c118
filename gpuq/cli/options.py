"""Global options accepted before or after the subcommand, and the per-invocation `App`.

`gpuq --backend demo queue` and `gpuq queue --backend demo` both work (kubectl style): the group
and every subcommand carry the same options, and their callbacks store given values in one
`GlobalOptions` on the root context; a value after the subcommand wins.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Callable, Iterable
from functools import wraps
from typing import TYPE_CHECKING, Any, TypeVar

import click
import msgspec

from gpuq.config import OUTPUT_FORMATS
from gpuq.model import MAX_ID_LENGTH, JobState

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem

    from gpuq.config import Config
    from gpuq.model import Snapshot
    from gpuq.service import BackendOption, Cluster

__all__ = [
    "WATCH_DEFAULT_S",
    "WATCH_MAX_S",
    "WATCH_MIN_S",
    "App",
    "PROCESS_END",
    "GlobalOptions",
    "Injected",
    "ProcessEnd",
    "complete_class",
    "complete_list",
    "complete_state",
    "complete_tenant",
    "complete_user",
    "current_app",
    "global_options",
    "job_argument",
    "opened_app",
    "pass_app",
    "watchable",
]

F = TypeVar("F", bound=Callable[..., Any])
_META_KEY = "gpuq.globals"
_APP_KEY = "gpuq.app"


class GlobalOptions(msgspec.Struct):
    backend: str | None = None
    cluster: str | None = None
    snapshot: str | None = None
    policy: str | None = None
    config: str | None = None
    output: str | None = None
    no_color: bool = False
    seed: int | None = None
    speed: float | None = None
    no_headers: bool = False
    # Kubernetes: kubeconfig contexts (repeatable), one namespace or all, a pod label selector
    contexts: tuple[str, ...] = ()
    namespace: str | None = None
    all_namespaces: bool = False
    selector: str | None = None


class Injected(msgspec.Struct, frozen=True):
    """What an embedding program or a test hands the CLI as click's ``obj`` instead of the
    defaults: the wall clock backends read, and the sleep between `--watch` frames (None: the
    real ones)."""

    clock: Callable[[], float] | None = None
    sleep: Callable[[float], None] | None = None


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


def _store_contexts(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> tuple[str, ...]:
    # (repeatable, and given before and after the subcommand alike: every one counts, once)
    if value:
        opts = _globals(ctx)
        opts.contexts = tuple(dict.fromkeys((*opts.contexts, *value)))
    return value


def _global_option_decorators() -> list[Callable[[F], F]]:
    common: dict[str, Any] = {"expose_value": False, "callback": _store, "is_eager": True}
    return [
        click.option(
            "--backend",
            metavar="NAME",
            help="Backend: demo, slurm, kubernetes (alias k8s) (default: config, else demo).",
            shell_complete=_complete_backend,
            **common,
        ),
        click.option(
            "--cluster",
            metavar="NAME",
            help="Cluster name ([clusters.NAME] in the config).",
            shell_complete=_complete_cluster,
            **common,
        ),
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
            "-o",
            "--output",
            type=click.Choice(OUTPUT_FORMATS, case_sensitive=False),
            help="Output format (wide: a table with every column).",
            **common,
        ),
        click.option(
            "--no-headers",
            is_flag=True,
            default=False,
            help="Tables without titles and column headers (for awk and friends).",
            **common,
        ),
        click.option(
            "--no-color", is_flag=True, default=False, help="No colours (NO_COLOR is honoured too).", **common
        ),
        click.option("--seed", type=int, metavar="N", help="Seed: demo backend, trace class rules.", **common),
        click.option(
            "--context",
            "contexts",
            multiple=True,
            metavar="NAME",
            help="Kubernetes: the kubeconfig context (repeatable: each context is a cluster; commands "
            "other than the console read one).",
            expose_value=False,
            callback=_store_contexts,
            is_eager=True,
        ),
        click.option("-n", "--namespace", metavar="NS", help="Kubernetes: read one namespace only.", **common),
        click.option(
            "-A", "--all-namespaces", is_flag=True, default=False, help="Kubernetes: read every namespace.", **common
        ),
        click.option(
            "-l",
            "--selector",
            metavar="SELECTOR",
            help="Kubernetes: only the pods (and Kueue Workloads) this label selector matches.",
            **common,
        ),  # fmt: skip
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


class ProcessEnd:
    """What commands built for their output, kept to the end of the process where gpuq runs as its
    console script (`gpuq.cli.main.main` arms it): that process then ends with os._exit once its
    output is flushed, rather than freeing what it built object by object for nothing (200,000
    rows take 0.1 s). Unarmed (gpuq called in process, as tests do), nothing is kept."""

    def __init__(self) -> None:
        self.armed = False
        self.kept: list[object] = []

    def keep(self, result: object) -> None:
        if self.armed:
            self.kept.append(result)


PROCESS_END = ProcessEnd()


class App:
    """What one invocation works with: the merged options, the config and the cluster handle."""

    def __init__(self, options: GlobalOptions, injected: Injected | None = None) -> None:
        from gpuq.cli.output import show_gpuq_warnings

        show_gpuq_warnings()
        self.options = options
        self.injected = injected or Injected()
        self._config: Config | None = None
        self._cluster: Cluster | None = None
        #: set by `--watch`: each frame reads afresh, and nothing is frozen for the collector
        self.watching = False
        self._stale = False

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
            if len(o.contexts) > 1:
                from gpuq.errors import BadInput

                raise BadInput(f"--context given {len(o.contexts)} times ({', '.join(o.contexts)}): this command "
                               "reads one cluster; give one --context")  # fmt: skip
            self._cluster = open_cluster(
                backend=o.backend,
                cluster=o.cluster,
                snapshot=o.snapshot,
                policy_file=o.policy,
                config=self.config,
                seed=o.seed,
                speed=o.speed,
                clock=self.injected.clock,
                flags=self.kube_flags(),
            )
            if not self.watching:  # (a command that reads and ends: no watch to stop at exit)
                self._cluster.read_once()
        return self._cluster

    def close(self) -> None:
        """Close the cluster this invocation opened, if any (`Cluster.close`): every way out of a
        command passes here (`GpuqGroup.invoke`)."""
        cluster, self._cluster = self._cluster, None
        if cluster is not None:
            cluster.close()

    def kube_flags(self) -> dict[str, BackendOption]:
        """The Kubernetes flags given, as backend options (`open_cluster`'s ``flags``); one
        ``--context`` here (several: `open_contexts`, one cluster each)."""
        from gpuq.errors import BadInput
        from gpuq.service import BackendOption

        o = self.options
        if o.namespace is not None and o.all_namespaces:
            raise BadInput("give -n/--namespace or -A/--all-namespaces, not both")
        flags: dict[str, BackendOption] = {}
        if len(o.contexts) == 1:
            flags["context"] = BackendOption(o.contexts[0], "--context")
        if o.namespace is not None:
            if not o.namespace.strip() or o.namespace == "*":
                raise BadInput(f"-n/--namespace {o.namespace!r}: give a namespace name (-A/--all-namespaces for all)")
            flags["namespace"] = BackendOption(o.namespace, "-n/--namespace")
        if o.all_namespaces:
            flags["namespace"] = BackendOption("*", "-A/--all-namespaces")
        if o.selector is not None:
            flags["label_selector"] = BackendOption(o.selector, "-l/--selector")
        return flags

    def snapshot(self, *, ledger: bool = True) -> Snapshot:
        """The cluster's snapshot, as commands read it. A command lives one process long and keeps
        what it read to the end, so the collector is told to leave those objects alone from here
        on (`gc.freeze`): a large snapshot is never walked by a full collection that cannot free
        any of it. (A long-running front end does not do this: it reads again and again.)"""
        if self._stale:
            self._stale = False
            snap = self.cluster.refresh(ledger=ledger)
        else:
            snap = self.cluster.snapshot(ledger=ledger)
        if not self.watching:
            gc.freeze()
        return snap

    def keep(self, result: object) -> None:
        """Keep what this command built for its output to the end of the process (`ProcessEnd`);
        not under `--watch`, which builds a new one every frame."""
        if not self.watching:
            PROCESS_END.keep(result)

    def next_frame(self) -> None:
        """`--watch`: the next `snapshot()` reads the cluster again."""
        self._stale = True

    @property
    def output(self) -> str:
        """json, csv or table; `-o wide` is a table too (see `wide`), so every check for a table
        holds for it."""
        chosen = (self.options.output or self.config.output).lower()
        return "table" if chosen == "wide" else chosen

    @property
    def wide(self) -> bool:
        """`-o wide`: a table with every column, whatever the terminal's width."""
        return (self.options.output or self.config.output).lower() == "wide"

    @property
    def no_headers(self) -> bool:
        return self.options.no_headers

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


def opened_app(ctx: click.Context) -> App | None:
    """The invocation's `App` if one was made (None: nothing was opened)."""
    app = ctx.find_root().meta.get(_APP_KEY)
    return app if isinstance(app, App) else None


def pass_app(func: Callable[..., Any]) -> Callable[..., Any]:
    """Pass the invocation's `App` as the first argument."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return func(current_app(), *args, **kwargs)

    return wrapper


#: `--watch` bounds and the interval a bare `-w` takes (seconds)
WATCH_MIN_S, WATCH_MAX_S, WATCH_DEFAULT_S = 1.0, 3600.0, 2.0


def watchable(func: F) -> F:
    """Add `-w/--watch [SECONDS]` to a read command: render again every SECONDS until Ctrl-C
    (gpuq/cli/watch.py). Goes between `global_options` and `pass_app`."""

    @wraps(func)
    def wrapper(*args: Any, watch: float | None = None, **kwargs: Any) -> Any:
        if watch is None:
            return func(*args, **kwargs)
        from gpuq.cli.watch import watch_loop

        watch_loop(current_app(), lambda: func(*args, **kwargs), watch)
        return None

    return click.option(
        "-w",
        "--watch",
        type=click.FloatRange(WATCH_MIN_S, WATCH_MAX_S),
        is_flag=False,
        flag_value=WATCH_DEFAULT_S,
        default=None,
        metavar="[SECONDS]",
        help=f"Redraw every SECONDS ({WATCH_MIN_S:g}-{WATCH_MAX_S:g}, default {WATCH_DEFAULT_S:g}) until Ctrl-C.",
    )(wrapper)  # type: ignore[return-value]


# -- shell completion: every completer answers [] rather than fail (a broken config, a backend
# that is down) so the operator's shell never shows a traceback.


def _items(values: Iterable[str | tuple[str, str]], incomplete: str) -> list[CompletionItem]:
    from click.shell_completion import CompletionItem

    items = []
    for value in values:
        text, help_ = value if isinstance(value, tuple) else (value, None)
        if text.startswith(incomplete):
            items.append(CompletionItem(text, help=help_))
    return items


def _complete_backend(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    from gpuq.service import backend_names

    try:
        return _items(backend_names(), incomplete)
    except Exception:  # noqa: BLE001 - completion must never break the shell
        return []


def _complete_cluster(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    try:
        return _items(sorted(current_app(ctx).config.clusters), incomplete)
    except Exception:  # noqa: BLE001 - completion must never break the shell
        return []


def complete_list(words: Iterable[str], *, alone: Iterable[str] = ()) -> Callable[..., list[CompletionItem]]:
    """A completer for a comma list of `words` (`pending,ru` -> `pending,running`, a word given
    once is not offered again); `alone`: words that stand only by themselves (`all`)."""
    choices, single = tuple(words), tuple(alone)

    def complete(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
        head, _, last = incomplete.rpartition(",")
        prefix = head + "," if head else ""
        given = set(head.split(","))
        offered = [w for w in choices if w not in given] + ([] if head else list(single))
        return _items((prefix + w for w in offered), prefix + last)

    return complete


complete_state = complete_list([s.value for s in JobState], alone=["all"])


def _snapshot_completer(values: Callable[[Snapshot], Iterable[str]]) -> Callable[..., list[CompletionItem]]:
    def complete(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
        try:
            return _items(values(current_app(ctx).cluster.snapshot(ledger=False)), incomplete)
        except Exception:  # noqa: BLE001 - completion must never break the shell
            return []

    return complete


def _classes(snapshot: Snapshot) -> list[str]:
    from gpuq.views.choices import class_choices

    return class_choices(snapshot)


def _users(snapshot: Snapshot) -> list[str]:
    from gpuq.views.choices import value_choices

    return value_choices(snapshot, "user")


def _tenants(snapshot: Snapshot) -> list[str]:
    from gpuq.views.choices import value_choices

    return value_choices(snapshot, "tenant")


complete_class = _snapshot_completer(_classes)
complete_user = _snapshot_completer(_users)
complete_tenant = _snapshot_completer(_tenants)


def _job_completer(states: frozenset[JobState] | None) -> Callable[..., list[CompletionItem]]:
    def complete(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
        from gpuq.views.choices import job_choices

        try:
            snapshot = current_app(ctx).cluster.snapshot(ledger=False)
            return _items(job_choices(snapshot, states), incomplete)
        except Exception:  # noqa: BLE001 - a broken config must not break the operator's shell
            return []

    return complete


def job_argument(
    name: str = "job_id", *, required: bool = True, states: Iterable[JobState] | None = None
) -> Callable[[F], F]:
    """A JOB argument whose values complete from the backend's jobs in `states` (all when None),
    the most recently submitted first, each with its state, GPUs, user and class."""
    wanted = None if states is None else frozenset(states)
    return click.argument(
        name, metavar="JOB" if required else "[JOB]", required=required, shell_complete=_job_completer(wanted),
        callback=_possible_job_id,
    )


def _possible_job_id(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """An id no job can have (the model's bounds) is a usage error, not a job that is not there."""
    if value is not None and not value:
        raise click.BadParameter("a job id is never empty")
    if value is not None and len(value) > MAX_ID_LENGTH:
        raise click.BadParameter(f"longer than any job id ({MAX_ID_LENGTH} characters at most)")
    return value
