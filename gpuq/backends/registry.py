"""Backend names → lazily imported backend classes.

Nothing here imports a backend module until that backend is asked for: `gpuq --backend demo`
never loads the Slurm code, and listing names only checks that the module exists. Third-party
backends can register through the `gpuq.backends` entry-point group (`name = "pkg.mod:Class"`).
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Mapping
from typing import Any

import msgspec

from gpuq.backends.base import Backend
from gpuq.errors import BadInput, GpuqError

__all__ = [
    "BackendEntry",
    "BackendOption",
    "available_backends",
    "backend_class",
    "backend_entry",
    "canonical_name",
    "create_backend",
    "register_backend",
    "unregister_backend",
]

ENTRY_POINT_GROUP = "gpuq.backends"


class BackendEntry(msgspec.Struct, frozen=True):
    name: str
    target: str  # "package.module:ClassName"
    summary: str

    @property
    def module(self) -> str:
        return self.target.partition(":")[0]


class BackendOption(msgspec.Struct, frozen=True):
    """A constructor argument for a backend and where the operator set it (for error messages)."""

    value: Any
    origin: str  # e.g. "--seed" or "config.toml:7: clusters.prod.urgent_qos"


# Only backends that exist in this tree are listed; a planned one appears when its module lands.
_BUILTIN = (
    BackendEntry("demo", "gpuq.backends.demo:DemoBackend", "embedded simulated cluster"),
    BackendEntry("slurm", "gpuq.backends.slurm:SlurmBackend", "Slurm through its command-line tools"),
    BackendEntry("kubernetes", "gpuq.backends.kubernetes:KubernetesBackend", "Kubernetes through its API server"),
)
#: Other names of built-in backends (`--backend k8s`); the config's ``[backends.NAME]`` uses the name.
_ALIASES = {"k8s": "kubernetes"}


# Classes registered in-process (embedding gpuq, tests); they shadow nothing built in.
_REGISTERED: dict[str, type[Backend]] = {}


def register_backend(name: str, cls: type[Backend]) -> None:
    """Make `cls` available as `--backend name` in this process."""
    if any(e.name == name for e in _BUILTIN) or name in _ALIASES:
        raise ValueError(f"backend {name!r} is built in")
    _REGISTERED[name] = cls


def unregister_backend(name: str) -> None:
    _REGISTERED.pop(name, None)


def _module_exists(module: str) -> bool:
    # A directory without __init__.py (a backend still being written) is a namespace package
    # with no origin: not a backend yet.
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return False
    return spec is not None and spec.origin is not None


def _entry_points() -> dict[str, BackendEntry]:
    from importlib.metadata import entry_points

    found: dict[str, BackendEntry] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        found[ep.name] = BackendEntry(ep.name, ep.value, f"plugin ({ep.value})")
    return found


def available_backends() -> dict[str, BackendEntry]:
    """Every backend that can be loaded here, built-ins first."""
    found = {e.name: e for e in _BUILTIN if _module_exists(e.module)}
    for name, cls in _REGISTERED.items():
        found[name] = BackendEntry(name, f"{cls.__module__}:{cls.__qualname__}", "registered in-process")
    for name, entry in _entry_points().items():
        found.setdefault(name, entry)
    return found


def backend_entry(name: str) -> BackendEntry:
    """The entry for `name` without importing it; BadInput (exit 2) lists the known backends."""
    return _lookup(name)


def canonical_name(name: str) -> str:
    """The backend's own name for `name` (an alias such as ``k8s`` → ``kubernetes``)."""
    return _ALIASES.get(name, name)


def _lookup(name: str) -> BackendEntry:
    name = canonical_name(name)
    for entry in _BUILTIN:
        if entry.name == name and _module_exists(entry.module):
            return entry
    if name in _REGISTERED:
        cls = _REGISTERED[name]
        return BackendEntry(name, f"{cls.__module__}:{cls.__qualname__}", "registered in-process")
    plugin = _entry_points().get(name)
    if plugin is not None:
        return plugin
    names = ", ".join(available_backends()) or "none"
    raise BadInput(f"unknown backend {name!r} (available: {names})")


def backend_class(name: str) -> type[Backend]:
    """Import and return the class for `name`; BadInput (exit 2) lists the known backends."""
    entry = _lookup(name)
    name = canonical_name(name)
    if name in _REGISTERED:
        return _REGISTERED[name]
    module_name, _, attr = entry.target.partition(":")
    try:
        module = importlib.import_module(module_name)
        cls = getattr(module, attr)
    except (ImportError, AttributeError) as exc:
        raise GpuqError(f"backend {name!r} could not be loaded ({type(exc).__name__}: {exc})") from None
    if not (isinstance(cls, type) and issubclass(cls, Backend)):
        raise GpuqError(f"backend {name!r}: {entry.target} is not a gpuq Backend")
    return cls


def create_backend(
    name: str, options: Mapping[str, BackendOption], internals: Mapping[str, Any] | None = None
) -> Backend:
    """Build backend `name` from the operator's `options`, refusing any it does not take and any
    value not of its declared type (`Backend.options`); `internals` (the clock, the resolved
    policy, where state lives) are passed only to backends that list them (`Backend.internals`).

    A wrong option is a usage error naming where it was set (the config file's line and key, or
    the flag), so a typo in the config file never silently falls back to a default.
    """
    cls = backend_class(name)
    kwargs: dict[str, Any] = {}
    for key, option in options.items():
        spec = cls.options.get(key)
        if spec is None:
            takes = ", ".join(sorted(cls.options)) or "no options"
            raise BadInput(f"{option.origin}: backend {name!r} does not take {key!r} (it takes: {takes})")
        kwargs[key] = spec.check(option.value, option.origin)
    for key, value in (internals or {}).items():
        if key in cls.internals:
            kwargs[key] = value
    return cls(**kwargs)
