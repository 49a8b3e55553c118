"""Opening `Cluster` handles: command-line options, the config file and defaults, resolved once."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gpuq.audit import AuditLog
from gpuq.backends.registry import (
    BackendOption,
    available_backends,
    backend_class,
    backend_entry,
    canonical_name,
    create_backend,
)
from gpuq.config import Config, PolicySource, load_config, load_policy_file
from gpuq.errors import BadInput
from gpuq.service.cluster import Cluster

__all__ = ["backend_names", "open_cluster", "open_clusters", "open_contexts", "policy_source"]


def backend_names() -> list[str]:
    """The backends `--backend` can name here (built-ins first), for shell completion."""
    return list(available_backends())


def _with_site_default(policy: PolicySource, backend_name: str) -> PolicySource:
    """A backend's own default policy (the demo's) in place of gpuq's defaults."""
    if policy.source == "defaults":
        site_default = backend_class(backend_name).default_policy
        if site_default is not None:
            return PolicySource(site_default, f"{backend_name} backend's built-in policy")
    return policy


def policy_source(config: Config, cluster: str | None = None) -> PolicySource:
    """The policy a cluster opened from `config` runs with, and where it comes from (what
    `open_cluster` resolves without `--policy` or `--backend`), without opening the backend."""
    name = cluster or config.cluster
    entry = config.clusters.get(name) if name else None
    backend_name = (entry.backend if entry and entry.backend else None) or config.backend
    return _with_site_default(config.policy_for(name), backend_name)


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
    flags: Mapping[str, BackendOption] | None = None,
) -> Cluster:
    """Resolve options, config and defaults into a `Cluster` handle.

    `--snapshot` wins over any backend. Otherwise `--cluster` picks a `[clusters.NAME]` table
    (an unknown name is an error when clusters are configured, so a typo never shows demo data),
    `--backend` overrides its backend, and the top-level `backend` (default `demo`) applies last.
    `clock` (the wall clock a live backend reads) is for embedding programs and tests.
    `flags`: backend options given on the command line (Kubernetes' ``--context``, ``-n``, ``-A``,
    ``-l``), by constructor keyword, each with its flag as origin; they win over the config, and one
    the chosen backend does not take is a usage error naming the flag.
    """
    cfg = config if config is not None else load_config(config_file)
    _check_backends(cfg)
    name = cluster or cfg.cluster
    policy = load_policy_file(policy_file) if policy_file else cfg.policy_for(name)
    if backend is not None:
        backend_entry(backend)  # an unknown name is a usage error even when --snapshot wins
    if snapshot is not None:
        for flag, value in (("--seed", seed), ("--speed", speed)):
            if value is not None:
                raise BadInput(f"{flag} applies to the demo backend, not to --snapshot")
        for option in (flags or {}).values():
            raise BadInput(f"{option.origin} applies to a live backend, not to --snapshot")
        from gpuq.backends.snapshot_file import SnapshotFileBackend

        return Cluster(SnapshotFileBackend(snapshot), "snapshot", policy, audit)

    entry = cfg.clusters.get(name) if name else None
    if name and entry is None and backend is None and cfg.clusters:
        configured = ", ".join(sorted(cfg.clusters))
        where = cfg.path or "the config file"
        raise BadInput(
            f"no cluster {name!r} in {where} (configured: {configured}); pass --backend to use one not configured"
        )
    # (an alias, `--backend k8s`, reads the `[backends.kubernetes]` options)
    backend_name = canonical_name(backend or (entry.backend if entry and entry.backend else None) or cfg.backend)

    options: dict[str, BackendOption] = {}
    for key, value in cfg.backend_options.get(backend_name, {}).items():
        dotted = f"backends.{backend_name}.{key}"
        options[key] = BackendOption(value, f"{cfg.where(dotted)}: {dotted}")
    if name:
        options["cluster"] = BackendOption(name, "--cluster")
    if entry is not None and (entry.backend is None or canonical_name(entry.backend) == backend_name):
        for key, value in entry.options.items():
            dotted = f"clusters.{entry.name}.{key}"
            options[key] = BackendOption(value, f"{cfg.where(dotted)}: {dotted}")
    if seed is not None:
        options["seed"] = BackendOption(seed, "--seed")
    if speed is not None:
        options["speed"] = BackendOption(speed, "--speed")
    if flags:
        takes = backend_class(backend_name).options
        for key, option in flags.items():
            if key not in takes:
                raise BadInput(f"{option.origin} does not apply to backend {backend_name!r} (it has no {key!r} option)")
            options[key] = option
    policy = _with_site_default(policy, backend_name)
    internals: dict[str, Any] = {"policy": policy.policy}
    if clock is not None:
        internals["clock"] = clock
    return Cluster(create_backend(backend_name, options, internals), backend_name, policy, audit)


def _check_backends(cfg: Config) -> None:
    """Every backend the config names is one gpuq has, whether or not this command uses it: a
    typo in a cluster nobody chose would otherwise leave the demo on screen, taken for production."""
    named = [("backend", cfg.backend)] if cfg.path else []
    named += [(f"clusters.{entry.name}.backend", entry.backend) for entry in cfg.clusters.values() if entry.backend]
    for dotted, backend in named:
        try:
            backend_entry(backend)
        except BadInput as exc:
            raise BadInput(f"{cfg.where(dotted)}: {dotted}: {exc}") from None


def open_clusters(config: Config | None = None, *, policy_file: str | None = None,
                  clock: Callable[[], float] | None = None) -> list[Cluster]:  # fmt: skip
    """A handle per `[clusters.NAME]` in the config (the console's tabs); the default one when none."""
    cfg = config if config is not None else load_config()
    if not cfg.clusters:
        return [open_cluster(config=cfg, policy_file=policy_file, clock=clock)]
    return [open_cluster(cluster=name, config=cfg, policy_file=policy_file, clock=clock) for name in cfg.clusters]


def open_contexts(
    contexts: Sequence[str],
    *,
    flags: Mapping[str, BackendOption] | None = None,
    **kwargs: Any,
) -> list[Cluster]:
    """A handle per kubeconfig context (`gpuq --context A --context B`), each a cluster named after
    its context; `kwargs` and `flags` as `open_cluster` takes them (the backend is the configured
    one, or ``backend=``: a Kubernetes one). A context named twice is opened once."""
    unique = list(dict.fromkeys(contexts))
    if not unique:
        return [open_cluster(flags=flags, **kwargs)]
    several = len(unique) > 1
    out = []
    for context in unique:
        mine = dict(flags or {})
        mine["context"] = BackendOption(context, "--context")
        if several:  # (a [clusters.NAME] table would give them all its name)
            mine["cluster"] = BackendOption(context, "--context")
        out.append(open_cluster(flags=mine, **kwargs))
    return out
