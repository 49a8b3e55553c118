"""Clean exit, always (issue 32): a one-shot command lists each resource once and opens no watch,
and the process ends with no thread of gpuq's left — whatever way it ends (output, a usage error).

Real API servers crashed gpuq at exit (SIGSEGV) when the interpreter finalised under watch threads
inside OpenSSL; the double over TLS does not reproduce the crash itself, so these tests check its
cause: threads alive at exit. `benchmarks/bench_k8s_exit.py` counts exit codes over many runs on
any kubeconfig.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.k8s.conftest import Gpuq, Target, eventually
from tests.k8s.double import ApiDouble

ROOT = Path(__file__).resolve().parents[2]
JOB = "ml-team-a/urgent-pod"
#: each one-shot command and the exit code it ends with on the recorded cluster
COMMANDS: list[tuple[list[str], int]] = [
    (["queue"], 0),
    (["queue", "-o", "json"], 0),
    (["gpus"], 0),
    (["sla"], 0),
    (["overview"], 0),
    (["preemptions"], 0),
    (["job", JOB], 0),
    (["snapshot"], 0),
    (["preview", "--class", "nosuch"], 2),
]
#: runs of each command in a fresh process (GPUQ_TEST_EXIT_RUNS: more, for a soak)
RUNS = int(os.environ.get("GPUQ_TEST_EXIT_RUNS", "3"))

# The child runs gpuq's console script and, as it ends (through os._exit or SystemExit alike),
# reports on stderr the threads still alive besides its main one.
_CHILD = """
import json, os, sys, threading
def report():
    left = [t.name for t in threading.enumerate() if t is not threading.main_thread() and t.is_alive()]
    sys.stderr.write("\\nTHREADS-LEFT " + json.dumps(left) + "\\n")
    sys.stderr.flush()
real_exit = os._exit
def ending(code):
    report()
    real_exit(code)
os._exit = ending
from gpuq.cli.main import main
try:
    main()
finally:
    report()
"""


def _gpu_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("gpuq-") and t.is_alive()]


@pytest.mark.parametrize(("args", "code"), COMMANDS, ids=[" ".join(a) for a, _ in COMMANDS])
def test_a_one_shot_command_lists_once_and_never_watches(
    target: Target, gpuq: Gpuq, xdg: dict[str, Path], args: list[str], code: int
) -> None:
    target.config(xdg["config"])
    result = gpuq("--backend", "kubernetes", *args)
    assert result.exit_code == code, result.output
    assert target.double is not None
    assert target.double.requests(watch=True) == []
    listed = Counter(urlsplit(t).path for t in target.double.requests(watch=False))
    assert listed and all(n == 1 for n in listed.values()), listed  # (one list per resource, one page each)
    assert _gpu_threads() == []  # (the command closed its cluster: no list or watch thread left)


def test_the_console_and_watch_loop_still_watch(target: Target) -> None:
    """`read_once` is for one-shot commands only: a backend left as built keeps watching."""
    backend = target.backend()
    backend.snapshot()
    double = target.double
    assert double is not None
    assert eventually(lambda: bool(double.requests(watch=True)))  # (the watch starts after the list)
    backend.close()
    assert not any(informer.running for informer in backend.state.informers.values())


def test_close_wakes_a_watch_blocked_in_its_read(target: Target) -> None:
    backend = target.backend()
    backend.snapshot()
    informers = backend.state.informers.values()
    assert target.double is not None
    assert all(inf.running for inf in informers)
    assert backend.state.stop(timeout_s=5.0)  # (each is woken at once; 5 s only bounds a broken wake)
    assert not any(inf.running for inf in informers)
    backend.snapshot()  # a read after close lists again and starts no watch
    assert not any(inf.running for inf in informers)


def _run(args: list[str], kubeconfig: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env.update(KUBECONFIG=str(kubeconfig), XDG_CONFIG_HOME=str(home / "config"), XDG_STATE_HOME=str(home / "state"),
               HOME=str(home), PYTHONPATH=str(ROOT), COLUMNS="200")  # fmt: skip
    cmd = [sys.executable, "-c", _CHILD, "--backend", "kubernetes", *args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120, check=False)  # noqa: S603


def test_every_process_ends_cleanly_with_no_thread_left(tmp_path: Path) -> None:
    """Each command in its own process (over TLS where openssl is found, as a real server speaks):
    the expected exit code every time, and no thread alive as the process ends."""
    tls = tmp_path / "tls" if shutil.which("openssl") else None
    with ApiDouble(tls_dir=tls) as double:
        kubeconfig = double.kubeconfig(tmp_path / "kubeconfig")
        runs = [(args, code) for args, code in COMMANDS for _ in range(RUNS)]
        with ThreadPoolExecutor(2) as pool:
            done = list(pool.map(lambda run: _run(run[0], kubeconfig, tmp_path), runs))
        assert double.requests(watch=True) == []
    for (args, code), proc in zip(runs, done, strict=True):
        assert proc.returncode == code, (args, proc.returncode, proc.stderr[-2000:])
        reports = [line for line in proc.stderr.splitlines() if line.startswith("THREADS-LEFT ")]
        assert reports, (args, proc.stderr[-2000:])
        assert json.loads(reports[0].removeprefix("THREADS-LEFT ")) == [], (args, reports)
