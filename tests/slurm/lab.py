"""Helpers for the integration tests: drive the real lab started by ``scripts/slurm-lab``."""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "slurm-lab"
LAB_DIR = Path(os.environ.get("GPUQ_SLURM_LAB_DIR") or REPO / ".slurm-lab")
TEST_USER = "gpuqtest"


class LabError(AssertionError):
    """The lab did not do what a test needs: a failure, never a skip."""


def start(mode: str) -> dict[str, str]:
    """Start (or switch) the lab; return an environment with SLURM_CONF for the CLIs."""
    proc = subprocess.run(  # noqa: S603 - fixed argument list
        [str(SCRIPT), "start", "--mode", mode], capture_output=True, text=True, timeout=600, check=False
    )
    if proc.returncode != 0:
        raise LabError(f"scripts/slurm-lab start --mode {mode} failed:\n{proc.stderr[-3000:]}")
    match = re.search(r"export SLURM_CONF=(\S+)", proc.stdout)
    if not match:
        raise LabError(f"no SLURM_CONF in: {proc.stdout!r}")
    os.environ["SLURM_CONF"] = match.group(1)
    return {"SLURM_CONF": match.group(1)}


def running() -> bool:
    proc = subprocess.run([str(SCRIPT), "status"], capture_output=True, text=True, timeout=60, check=False)  # noqa: S603
    return proc.returncode == 0


def stop() -> None:
    proc = subprocess.run([str(SCRIPT), "stop"], capture_output=True, text=True, timeout=300, check=False)  # noqa: S603
    if proc.returncode != 0:
        raise LabError(f"scripts/slurm-lab stop failed:\n{proc.stderr[-2000:]}")


def sh(args: Sequence[str], *, user: str | None = None, check: bool = True, timeout: float = 60) -> str:
    argv = list(args)
    if user:
        argv = ["runuser", "-u", user, "--", "env", f"SLURM_CONF={os.environ['SLURM_CONF']}", *argv]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False, cwd="/tmp")  # noqa: S603
    if check and proc.returncode != 0:
        raise LabError(f"{' '.join(argv)} -> rc {proc.returncode}: {proc.stderr.strip()}")
    return proc.stdout


def sbatch(
    *args: str,
    gpus: int = 1,
    qos: str | None = None,
    partition: str | None = None,
    user: str | None = None,
    name: str = "t",
    sleep: int = 600,
    nodes: int = 1,
) -> str:
    """Submit ``sleep`` with ``--gres=gpu:N`` (N per node; none for ``gpus=0``, a CPU-only job) on
    `nodes` nodes; return the job id."""
    gres = [f"--gres=gpu:{gpus}"] if gpus else []
    argv = ["sbatch", "--parsable", f"-N{nodes}", *gres, "-J", name, "-o", "/dev/null"]
    if qos:
        argv += ["-q", qos]
    if partition:
        argv += ["-p", partition]
    argv += [*args, "--wrap", f"sleep {sleep}"]
    return sh(argv, user=user).strip().split(";")[0]


def states() -> dict[str, tuple[str, str, str]]:
    """job id -> (state, reason, nodes) from plain squeue."""
    out = sh(["squeue", "-h", "-O", "JobID:|,State:|,Reason:|,NodeList:|"])
    result: dict[str, tuple[str, str, str]] = {}
    for line in out.splitlines():
        f = line.split("|")
        if len(f) >= 4:
            result[f[0]] = (f[1], f[2], f[3])
    return result


def wait_for(pred: Callable[[], bool], timeout: float, what: str, step: float = 0.5) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(step)
    raise LabError(f"timed out after {timeout:g}s waiting for {what}")


def wait_running(ids: Sequence[str], timeout: float = 30) -> None:
    try:
        wait_for(lambda: all(states().get(i, ("",))[0] == "RUNNING" for i in ids), timeout, f"jobs {list(ids)} to run")
    except LabError as error:  # say why they wait: squeue's reasons and sinfo's nodes
        nodes = sh(["sinfo", "-h", "-N", "-O", "NodeList:|,StateLong:|,GresUsed:|"], check=False)
        raise LabError(f"{error}\nsqueue: {states()}\nsinfo:\n{nodes}") from None


def start_requeued(job: str, timeout: float = 60) -> None:
    """Run a requeued job at once instead of after slurmctld's requeue delay (about 120 s).

    slurmctld sets that delay when the old run's clean-up ends, which can come after squeue first
    shows the job PENDING and so after an earlier ``StartTime=now``: the begin time is set again
    each time the job waits for it, until the job runs.
    """
    wait_for(lambda: states().get(job, ("",))[0] == "PENDING", 30, f"requeued job {job} to be pending")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state, reason = states().get(job, ("", "", ""))[:2]
        if state in ("RUNNING", "COMPLETING", ""):  # "": a short job that already ran and left the queue
            return
        if state == "PENDING" and reason == "BeginTime":
            sh(["scontrol", "update", f"JobId={job}", "StartTime=now"], check=False)
        time.sleep(0.5)
    detail = sh(["scontrol", "show", "job", job], check=False)
    raise LabError(f"timed out after {timeout:g}s waiting for requeued job {job} to run:\n{detail}")


def cancel_all() -> None:
    ids = [i for i in states()]
    if ids:
        sh(["scancel", *ids], check=False)
    wait_for(
        lambda: not any(s[0] in ("RUNNING", "PENDING", "COMPLETING", "SUSPENDED") for s in states().values()),
        60,
        "the queue to drain",
    )


def ctld_log_offset() -> int:
    return (LAB_DIR / "log" / "slurmctld.log").stat().st_size


def preempted_since(offset: int) -> set[str]:
    """Job ids slurmctld logged as preempted after `offset` (requeued or killed)."""
    with open(LAB_DIR / "log" / "slurmctld.log", errors="replace") as fh:
        fh.seek(offset)
        text = fh.read()
    found = set()
    for match in re.finditer(r"preempted JobId=(\S+) has been (?:requeued|killed)", text):
        found.add(match.group(1).split("(")[0])
    return found


def states_running_one() -> str:
    """The id of some running job (tests that need any root-owned running job)."""
    for jid, (state, _reason, _nodes) in states().items():
        if state == "RUNNING":
            return jid
    raise LabError("no running job")


def current_mode() -> str:
    try:
        return (LAB_DIR / "mode").read_text().strip() or "qos"
    except OSError:
        return "qos"
