"""Build hook: compile the simulator's event loop (and the rule kernel and victim search it
shares with the policy engine) with mypyc when a C compiler is at hand, and
carry the console's built-in themes (top-level `themes/*.toml`) into the package.

Everything is declared in pyproject.toml; this file only adds the optional native modules and
the themes' copy.
gpuq works the same without them (the very same sources, interpreted); compiled, the
simulator processes events about twice as fast (benchmarks/README.md). The build never fails
for want of a compiler: it says so and installs the pure-Python package.

GPUQ_PURE_PYTHON=1 at install time skips compiling; at run time it ignores a compiled build.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from setuptools import setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


def _load_native() -> Any:
    """gpuq/_native.py (stdlib only), which checks at run time what this build compiled: the
    module list and the record's name come from there. Loaded by path: importing the package
    would need gpuq's dependencies, which a build environment does not have."""
    spec = importlib.util.spec_from_file_location("gpuq_native", ROOT / "gpuq" / "_native.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_native = _load_native()
NATIVE_MODULES: dict[str, tuple[str, ...]] = _native.NATIVE_MODULES
#: the group's sources, relative to gpuq/ ("sim/jobs"), as the record names them
SOURCES = [f"{package}/{name}" for package, names in NATIVE_MODULES.items() for name in names]
RECORD: str = _native.RECORD
PURE_ENV: str = _native.PURE_ENV


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class OptionalBuildExt(build_ext):
    """Compile when possible; record which sources the native modules were built from."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # no compiler or no Python headers: the sources serve as they are
            print(f"gpuq: simulator not compiled ({exc}); installing the pure-Python modules", file=sys.stderr)
            return
        record = json.dumps({source: _digest(ROOT / "gpuq" / f"{source}.py") for source in SOURCES})
        targets = {Path(self.build_lib)}
        if self.inplace or getattr(self, "editable_mode", False):
            targets.add(ROOT)
        for target in targets:
            out = target / "gpuq" / RECORD
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(record + "\n")


class BuildPyWithThemes(build_py):
    """Copy `themes/*.toml` to `gpuq/tui/builtin_themes/` in the build: an installed gpuq has no
    source tree to find them in (gpuq.tui.themes.builtin_dir). An editable install reads the
    source tree's `themes/` and gets no copy."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        target = Path(self.build_lib) / "gpuq" / "tui" / "builtin_themes"
        target.mkdir(parents=True, exist_ok=True)
        for theme in sorted((ROOT / "themes").glob("*.toml")):
            shutil.copyfile(theme, target / theme.name)


def _native_extensions() -> list[Any]:
    if os.environ.get(PURE_ENV) == "1":
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:  # built without the build requirements (e.g. --no-build-isolation)
        print("gpuq: mypyc not available; installing the pure-Python modules", file=sys.stderr)
        return []
    try:
        extensions: list[Any] = mypycify(
            [f"gpuq/{source}.py" for source in SOURCES], opt_level="3", group_name="gpuq_native"
        )
    except (Exception, SystemExit) as exc:  # mypyc exits on a type error (e.g. a dependency missing)
        print(f"gpuq: simulator not compiled ({exc!r}); installing the pure-Python modules", file=sys.stderr)
        return []
    return extensions


setup(ext_modules=_native_extensions(), cmdclass={"build_ext": OptionalBuildExt, "build_py": BuildPyWithThemes})
