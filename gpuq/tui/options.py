"""From the command line and the config to what the console runs on: clusters and settings."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpuq.config import Config
from gpuq.errors import BadInput
from gpuq.service import BackendOption, Cluster, open_cluster, open_clusters, open_contexts
from gpuq.tui.app import ConsoleSettings
from gpuq.tui.keymap import check_keys

__all__ = ["ConsoleSetup", "console_setup"]


@dataclass(slots=True)
class ConsoleSetup:
    clusters: list[Cluster]
    settings: ConsoleSettings
    clock: Callable[[], float] = time.time
    #: `--record DIR` / `--replay DIR` handles (gpuq.service.recording), when given
    recorder: Any = None
    replay: Any = None
    extras: dict[str, Any] = field(default_factory=dict)


def console_setup(
    config: Config, *, backend: str | None = None, cluster: str | None = None, snapshot: str | None = None,
    policy_file: str | None = None, seed: int | None = None, speed: float | None = None,
    refresh: float | None = None, theme: str | None = None, read_only: bool = False, record: str | None = None,
    replay: str | None = None, clock: Callable[[], float] | None = None, contexts: Sequence[str] = (),
    flags: Mapping[str, BackendOption] | None = None,
) -> ConsoleSetup:  # fmt: skip
    """The clusters to show (every configured one, unless the options name one; one per
    kubeconfig context given) and the settings (the options win over the config's `[console]`
    table). ``flags``: the Kubernetes flags as backend options (`-n`, `-A`, `-l`, one `--context`)."""
    console = config.console
    keys = check_keys(console.keys, lambda key: config.where(f"console.keys.{key}"))
    settings = ConsoleSettings(
        refresh_s=refresh if refresh is not None else console.refresh_s,
        theme=theme or console.theme,
        read_only=read_only or console.read_only or replay is not None,
        keys=keys,
    )
    if replay is not None:
        from gpuq.service import open_replay

        handle = open_replay(replay)
        reason = f"this is a recording ({replay}), replayed read-only"
        settings = ConsoleSettings(settings.refresh_s, settings.theme, True, reason, settings.keys)
        return ConsoleSetup(list(handle.clusters), settings, clock or time.time, replay=handle)
    chosen = any(v is not None for v in (backend, cluster, snapshot, seed, speed)) or bool(flags)
    if len(contexts) > 1:  # several kubeconfig contexts: a cluster each, the console's tabs
        clusters = open_contexts(contexts, flags=flags, backend=backend, config=config, policy_file=policy_file,
                                 clock=clock)  # fmt: skip
    elif chosen:
        clusters = [open_cluster(backend=backend, cluster=cluster, snapshot=snapshot, policy_file=policy_file,
                                 config=config, seed=seed, speed=speed, clock=clock, flags=flags)]  # fmt: skip
    else:
        clusters = open_clusters(config, policy_file=policy_file, clock=clock)
    if not clusters:
        raise BadInput("no cluster to show")
    recorder = None
    if record is not None:
        from gpuq.service import open_recorder

        recorder = open_recorder(record)
    return ConsoleSetup(clusters, settings, clock or time.time, recorder=recorder)
