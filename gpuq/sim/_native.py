"""Which simulator modules run: the mypyc-compiled ones, or their Python sources.

setup.py compiles the event loop's modules when a C compiler is at hand and records the SHA-256
of each source it compiled (`_native.json`). Python's import system prefers a compiled module
to its source, so a source edited since (a checkout, a fix in an editable install) would be
shadowed by stale machine code. `select` runs before any of them is imported: it keeps the
compiled modules only when every one was built from the sources now on disk, and otherwise —
or with GPUQ_PURE_PYTHON=1 — loads all of them from source. Pure stdlib, a few file reads.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import json
import os
import sys
from pathlib import Path

__all__ = ["NATIVE_MODULES", "compiled_is_current", "select"]

#: compiled by setup.py, in import order (each imports only those before it)
NATIVE_MODULES = (
    "workload", "jobs", "events", "cluster", "queue", "aging", "retired", "fastrules", "convert", "victims",
    "stops", "preempting", "simulator",
)  # fmt: skip
RECORD = "_native.json"
PURE_ENV = "GPUQ_PURE_PYTHON"


def _has_extension(folder: Path, name: str) -> bool:
    return any((folder / f"{name}{suffix}").exists() for suffix in importlib.machinery.EXTENSION_SUFFIXES)


def compiled_is_current(folder: Path) -> bool | None:
    """None when nothing was compiled; else whether every compiled module matches its source."""
    if not any(_has_extension(folder, name) for name in NATIVE_MODULES):
        return None
    try:
        recorded = json.loads((folder / RECORD).read_text())
    except (OSError, ValueError):
        return False  # built without a record (or by something else): not to be trusted
    for name in NATIVE_MODULES:
        if not _has_extension(folder, name) or not isinstance(recorded, dict):
            return False
        try:
            digest = hashlib.sha256((folder / f"{name}.py").read_bytes()).hexdigest()
        except OSError:
            return False
        if recorded.get(name) != digest:
            return False
    return True


def select(package: str, folder: Path) -> bool:
    """Arrange for `package`'s simulator modules to come from the right place; True = compiled."""
    current = compiled_is_current(folder)
    if current is None:
        return False
    if current and os.environ.get(PURE_ENV) != "1":
        return True
    parent = sys.modules[package]
    for name in NATIVE_MODULES:
        fullname = f"{package}.{name}"
        if fullname in sys.modules:
            continue
        spec = importlib.util.spec_from_file_location(fullname, folder / f"{name}.py")
        if spec is None or spec.loader is None:  # pragma: no cover - a .py path always has a loader
            raise ImportError(f"cannot load {fullname} from source")
        module = importlib.util.module_from_spec(spec)
        sys.modules[fullname] = module
        spec.loader.exec_module(module)
        setattr(parent, name, module)
    return False
