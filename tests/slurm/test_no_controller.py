"""A Slurm client with no cluster to talk to (no slurm.conf, no DNS SRV record, or a SLURM_CONF
naming a missing file) is "backend unreachable" (exit 3) with what to set, never Slurm's raw
text under exit 1; and `resume` on Slurm is ``scontrol resume`` for a suspended job only."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpuq.backends.slurm import runner as runner_module
from gpuq.errors import Refused, Unreachable
from tests.slurm.samples import stand_in
from tests.slurm.test_backend_fake_cli import _calls, _tool, fake  # noqa: F401 - the stand-in CLIs, by name below

pytestmark = pytest.mark.usefixtures("fake")

#: What Slurm 22.05's CLIs print (exit 1) with no slurm.conf and no DNS SRV record.
NO_CONFIG = """scontrol: error: resolve_ctls_from_dns_srv: res_nsearch error: Unknown host
scontrol: error: fetch_config: DNS SRV lookup failed
scontrol: error: _establish_config_source: failed to fetch config
scontrol: fatal: Could not establish a configuration source
"""


def _bindir() -> Path:
    """Where the `fake` fixture put the stand-in CLIs."""
    return Path(os.environ["FAKE_LOG"]).parent / "bin"


def _no_config_cli() -> None:
    for name in ("scontrol", "squeue", "sinfo", "sacct", "sacctmgr"):
        body = f'#!/bin/bash\necho "{name} $*" >> "$FAKE_LOG"\ncat >&2 <<\'END\'\n{NO_CONFIG}END\nexit 1\n'
        _tool(_bindir(), name, body)


def test_no_slurm_conf_and_no_dns_record_is_unreachable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _no_config_cli()
    monkeypatch.delenv("SLURM_CONF")
    monkeypatch.setattr(runner_module, "_DEFAULT_CONF", str(tmp_path / "etc-slurm" / "slurm.conf"))
    with pytest.raises(Unreachable) as caught:
        stand_in().snapshot()
    message = str(caught.value)
    assert caught.value.exit_code == 3
    assert message.startswith("no Slurm controller found (set SLURM_CONF to the cluster's slurm.conf): ")
    assert "DNS has no SRV record for slurmctld" in message and "resolve_ctls_from_dns_srv" not in message


def test_an_unusable_slurm_conf_is_unreachable_naming_it() -> None:
    _no_config_cli()
    with pytest.raises(Unreachable, match=r"no Slurm controller found .*slurm.conf is not usable \(scontrol: fatal"):
        stand_in().snapshot()


def test_a_slurm_conf_that_does_not_exist_is_refused_before_any_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "nowhere" / "slurm.conf"
    monkeypatch.setenv("SLURM_CONF", str(missing))
    with pytest.raises(Unreachable, match=rf"no Slurm controller found .*SLURM_CONF='{missing}' does not exist"):
        stand_in().snapshot()
    assert _calls(_bindir()) == []  # (Slurm's CLIs would retry a missing file for a minute)


def test_the_cli_exits_3_with_the_hint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gpuq.cli.main import cli

    _no_config_cli()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    result = CliRunner().invoke(cli, ["--backend", "slurm", "queue"], prog_name="gpuq")
    assert result.exit_code == 3, result.output
    assert result.stderr.startswith("gpuq: error: no Slurm controller found (set SLURM_CONF")
    assert "Traceback" not in result.output


def test_resume_is_scontrol_resume_for_a_suspended_job() -> None:
    backend = stand_in()
    plan = backend.prepare_resume("68", reason="t")  # suspended in the capture
    assert plan.commands == (("scontrol", "resume", "68"),)
    assert (plan.before["state"], plan.after["state"]) == ("suspended", "running")
    assert plan.guard["state"] == "suspended"
    with pytest.raises(Refused, match="job 73 is running: only suspended jobs can be resumed"):
        backend.prepare_resume("73", reason="t")
    assert not [c for c in _calls(_bindir()) if " resume " in f" {c} "]  # prepared, never run
