"""Layering checked at run time: the pure core imports no UI, cluster client or subprocess code,
and the CLI does not pay for Textual or Kubernetes at import time."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Front-end libraries and cluster clients, plus every module that runs external programs.
FORBIDDEN_IN_CORE = (
    "click",
    "rich",
    "textual",
    "kubernetes",
    "pynvml",
    "subprocess",
    "gpuq.backends.slurm",
    "gpuq.cli",
    "gpuq.tui",
    "gpuq.views",
    "gpuq.service",
)
CORE = ("gpuq.model", "gpuq.model.codec", "gpuq.policy.engine", "gpuq.policy.order", "gpuq.sla", "gpuq.sim",
        "gpuq.textsafe")  # fmt: skip
VIEWS = ("gpuq.views.queue", "gpuq.views.overview", "gpuq.views.job", "gpuq.views.gpus", "gpuq.views.sla",
         "gpuq.views.preemptions", "gpuq.views.preview", "gpuq.views.audit", "gpuq.views.columns")  # fmt: skip


def _modules_after_import(module: str) -> set[str]:
    code = f"import json, sys; import {module}; print(json.dumps(sorted(sys.modules)))"
    # Our own interpreter on a fixed snippet: nothing untrusted reaches the command line.
    argv = [sys.executable, "-c", code]
    out = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=True).stdout  # noqa: S603
    return set(json.loads(out))


def _hits(loaded: set[str], forbidden: tuple[str, ...]) -> list[str]:
    return sorted(m for m in loaded if any(m == f or m.startswith(f + ".") for f in forbidden))


@pytest.mark.parametrize("module", CORE)
def test_core_imports_stay_pure(module: str) -> None:
    assert _hits(_modules_after_import(module), FORBIDDEN_IN_CORE) == []


@pytest.mark.parametrize("module", VIEWS)
def test_views_load_no_front_end_library(module: str) -> None:
    """A view is shared by the CLI and the console: it loads neither's libraries (nor the Slurm code)."""
    assert _hits(_modules_after_import(module), ("click", "rich", "textual", "gpuq.cli", "gpuq.tui",
                                                 "gpuq.backends.slurm")) == []  # fmt: skip


def test_cli_import_is_light() -> None:
    loaded = _modules_after_import("gpuq.cli.main")
    assert _hits(loaded, ("textual", "kubernetes", "pynvml", "gpuq.tui", "gpuq.backends.slurm", "gpuq.sim")) == []
    # Rich is only needed once a table is drawn.
    assert _hits(loaded, ("rich",)) == []


def test_json_queue_path_loads_no_table_or_csv_code() -> None:
    loaded = _modules_after_import("gpuq.cli.main, gpuq.cli.queue, gpuq.cli.render")
    assert _hits(loaded, ("rich", "csv")) == []


def test_tables_are_drawn_without_rich() -> None:
    """Every command's tables and messages come from gpuq.cli.table: Rich is the console's alone."""
    commands = ", ".join(f"gpuq.cli.{m}" for m in ("queue", "gpus", "sla", "overview", "preemptions", "preview", "job",
                                                    "actions", "audit", "table"))  # fmt: skip
    assert _hits(_modules_after_import(commands), ("rich",)) == []


def test_a_queue_command_loads_neither_nvml_nor_recordings() -> None:
    """The host's GPUs and incident recordings load on first use of their names (gpuq.service):
    a command that reads a snapshot pays for neither."""
    snapshot = ROOT / "tests" / "fixtures" / "snapshots" / "small.json"
    code = (
        "import json, sys\n"
        "from gpuq.cli.main import cli\n"
        f"try:\n    cli.main(['queue', '-o', 'json', '--snapshot', {str(snapshot)!r}])\n"
        "except SystemExit as end:\n    assert not end.code, end.code\n"
        "print(json.dumps(sorted(sys.modules)), file=sys.stderr)\n"
    )
    argv = [sys.executable, "-c", code]
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=True)  # noqa: S603
    loaded = set(json.loads(proc.stderr.strip().splitlines()[-1]))
    assert "gpuq.service.cluster" in loaded and '"jobs"' in proc.stdout
    assert _hits(loaded, ("gpuq.service.hostgpus", "gpuq.backends.nvml", "gpuq.service.recording",
                          "gpuq.backends.recording")) == []  # fmt: skip
    import gpuq.service

    assert gpuq.service.Recorder.__module__ == "gpuq.service.recording"
    assert gpuq.service.host_gpus.__module__ == "gpuq.service.hostgpus"
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        gpuq.service.no_such_name  # noqa: B018
