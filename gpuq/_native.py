"""Which of gpuq's compilable modules run: the mypyc-compiled ones, or their Python sources.

setup.py compiles the simulator's event loop and the exact victim search it shares with the
policy engine (`NATIVE_MODULES`) as one group when a C compiler is at hand, and records the
SHA-256 of each source it compiled (`_native.json`, beside this file). Python's import system
prefers a compiled module to its source, so a source edited since (a checkout, a fix in an
editable install) would be shadowed by stale machine code. Compiled modules of one group also
call each other's machine code directly, so the group is used whole or not at all: each
package's `__init__` calls `select` before any of its compilable modules is imported, and
`select` keeps the compiled modules only when every one of the group was built from the
sources now on disk; otherwise — or with GPUQ_PURE_PYTHON=1 — it loads that package's modules
from source. Pure stdlib, a few file reads, done once per process.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import json
import os
import sys
from pathlib import Path

__all__ = ["NATIVE_MODULES", "PURE_ENV", "RECORD", "compiled_is_current", "select"]

#: compiled by setup.py as one group: per package under gpuq/, in import order (each module
#: imports only those before it; `policy.kernel` and `policy.cover` import none of them)
NATIVE_MODULES: dict[str, tuple[str, ...]] = {
    "policy": ("kernel", "cover"),
    "sim": (
        "workload", "jobs", "events", "cluster", "queue", "aging", "retired", "fastrules", "convert", "victims",
        "stops", "preempting", "simulator",
    ),
}  # fmt: skip
RECORD = "_native.json"
PURE_ENV = "GPUQ_PURE_PYTHON"

#: `compiled_is_current` per package root already looked at (the answer cannot change in a process
#: that has imported the modules)
_checked: dict[Path, bool | None] = {}


def _has_extension(folder: Path, name: str) -> bool:
    return any((folder / f"{name}{suffix}").exists() for suffix in importlib.machinery.EXTENSION_SUFFIXES)


def compiled_is_current(root: Path) -> bool | None:
    """None when nothing under `root` (the gpuq package folder) was compiled; else whether every
    module of the group was compiled, from the source now on disk."""
    modules = [(root / package, name) for package, names in NATIVE_MODULES.items() for name in names]
    if not any(_has_extension(folder, name) for folder, name in modules):
        return None
    try:
        recorded = json.loads((root / RECORD).read_text())
    except (OSError, ValueError):
        return False  # built without a record (or by something else): not to be trusted
    if not isinstance(recorded, dict):
        return False
    for folder, name in modules:
        if not _has_extension(folder, name):
            return False
        try:
            digest = hashlib.sha256((folder / f"{name}.py").read_bytes()).hexdigest()
        except OSError:
            return False
        if recorded.get(f"{folder.name}/{name}") != digest:
            return False
    return True


def select(package: str, root: Path) -> bool:
    """Arrange for the compilable modules of `package` (a key of `NATIVE_MODULES`; imported as
    `<root's name>.<package>`) to come from the right place; True = compiled."""
    if root not in _checked:
        _checked[root] = compiled_is_current(root)
    current = _checked[root]
    if current is None:
        return False
    if current and os.environ.get(PURE_ENV) != "1":
        return True
    fullpackage = f"{root.name}.{package}"
    parent = sys.modules[fullpackage]
    for name in NATIVE_MODULES[package]:
        fullname = f"{fullpackage}.{name}"
        if fullname in sys.modules:
            continue
        spec = importlib.util.spec_from_file_location(fullname, root / package / f"{name}.py")
        if spec is None or spec.loader is None:  # pragma: no cover - a .py path always has a loader
            raise ImportError(f"cannot load {fullname} from source")
        module = importlib.util.module_from_spec(spec)
        sys.modules[fullname] = module
        spec.loader.exec_module(module)
        setattr(parent, name, module)
    return False
