"""Every Slurm CLI call goes through here: argument lists only, a timeout, errors mapped.

Mapping (stderr texts verified on 22.05):
- ``Invalid job id specified`` -> NotFound
- ``Access/permission denied``, ``Invalid user id`` -> PermissionDenied (operator/admin needed)
- ``Unable to contact slurm controller`` / connection failures / a hung CLI -> Unreachable
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Sequence
from pathlib import Path

from gpuq.errors import GpuqError, NotFound, PermissionDenied, Refused, Unreachable

__all__ = ["Runner", "controller_address"]

#: Commands that accept ``-M/--clusters`` (sacctmgr does not: QOS are shared by the database).
_TAKES_CLUSTER = frozenset({"squeue", "sinfo", "sacct", "scontrol", "scancel", "sbatch"})

_UNREACHABLE = (
    "Unable to contact slurm controller",
    "Socket timed out",
    "Connection refused",
    "Zero Bytes were transmitted",
    "Unable to establish controller",
    "Communication connection failure",
    "slurm_persist_conn_open",
    "Unable to connect to database",
    "Connection timed out",
)
_DENIED = ("Access/permission denied", "Invalid user id", "Permission denied", "Security violation")


def controller_address(conf: str | None = None) -> str:
    """``host:port`` of slurmctld from slurm.conf (``SLURM_CONF`` or /etc/slurm/slurm.conf)."""
    path = Path(conf or os.environ.get("SLURM_CONF") or "/etc/slurm/slurm.conf")
    host, port = "", "6817"
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return f"the slurmctld named in {path}"
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        key, _, value = line.partition("=")
        key = key.strip().lower()
        if key in ("slurmctldhost", "controlmachine") and not host:
            match = re.match(r"([^()\s]+)(?:\(([^)]+)\))?", value.strip())
            if match:
                host = match.group(2) or match.group(1)
        elif key == "slurmctldport":
            port = value.strip().split("-")[0]
    return f"{host or 'unknown host'}:{port} (from {path})"


class Runner:
    """Runs Slurm CLIs for one cluster."""

    def __init__(self, cluster: str | None = None, timeout_s: float = 10.0) -> None:
        self.cluster = cluster
        self.timeout_s = timeout_s

    def argv(self, args: Sequence[str]) -> list[str]:
        """The exact argument list that will run (with ``-M cluster`` where it applies)."""
        argv = list(args)
        if self.cluster and argv and argv[0] in _TAKES_CLUSTER:
            argv[1:1] = ["-M", self.cluster]
        return argv

    def run(self, args: Sequence[str], *, timeout_s: float | None = None, what: str = "") -> str:
        """Run; return stdout. Raises NotFound/PermissionDenied/Unreachable/Refused on failure."""
        argv = self.argv(args)
        shown = " ".join(argv[:4]) + (" ..." if len(argv) > 4 else "")
        try:
            proc = subprocess.run(  # noqa: S603 - an argument list, never a shell
                argv,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=timeout_s or self.timeout_s,
                check=False,
            )
        except FileNotFoundError:
            raise Unreachable(f"`{argv[0]}` not found: is the Slurm client installed and on PATH?") from None
        except subprocess.TimeoutExpired:
            raise Unreachable(
                f"`{shown}` did not answer within {timeout_s or self.timeout_s:g}s; "
                f"is slurmctld at {controller_address()} up?"
            ) from None
        if proc.returncode != 0:
            raise self.error(argv, proc.stderr.strip() or proc.stdout.strip(), what)
        return proc.stdout

    def error(self, argv: Sequence[str], message: str, what: str = "") -> GpuqError:
        shown = " ".join(argv[:4]) + (" ..." if len(argv) > 4 else "")
        first = message.splitlines()[0] if message else f"exit status non-zero from {argv[0]}"
        where = f" on cluster {self.cluster}" if self.cluster else ""
        if "known by database" in message or "No cluster" in message:
            return NotFound(f"no cluster {self.cluster!r} in the Slurm database (`{shown}`: {first})")
        if "Invalid job id specified" in message:
            return NotFound(f"no job {what or '?'}{where} (`{shown}`: {first})")
        if any(text in message for text in _DENIED):
            need = "a Slurm operator or admin (AdminLevel=Operator in sacctmgr, or root/SlurmUser)"
            return PermissionDenied(f"`{shown}` needs {need}: {first}")
        if any(text in message for text in _UNREACHABLE):
            return Unreachable(f"slurmctld at {controller_address()} is unreachable (`{shown}`: {first})")
        return Refused(f"`{shown}` failed: {first}")
