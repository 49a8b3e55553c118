"""Commands load on first use (`gpuq.cli.main._COMMANDS`): every name resolves to the command of
that name, help lists them all, and running one command does not import the others."""

from __future__ import annotations

import json
import subprocess
import sys

import click

from gpuq.cli.main import _COMMANDS, cli


def test_every_lazy_name_is_its_command() -> None:
    ctx = click.Context(cli)
    assert cli.list_commands(ctx) == sorted(_COMMANDS)
    for name in _COMMANDS:
        command = cli.get_command(ctx, name)
        assert command is not None and command.name == name, name
    assert cli.get_command(ctx, "no-such-command") is None


def test_one_command_imports_only_its_module() -> None:
    code = (
        "import json, sys\n"
        "from gpuq.cli.main import cli\n"  # (not `main`: a queue command would end the process at once)
        "try:\n    cli.main(['--backend', 'demo', 'queue', '-o', 'json', '--limit', '1'])\n"
        "except SystemExit:\n    pass\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('gpuq.cli.'))), file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)  # noqa: S603
    loaded = set(json.loads(proc.stderr.strip().splitlines()[-1]))
    assert "gpuq.cli.queue" in loaded
    assert not loaded & {"gpuq.cli.actions", "gpuq.cli.tui", "gpuq.cli.preview", "gpuq.cli.overview"}
