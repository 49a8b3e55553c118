"""How gpuq's one-shot commands end against a Kubernetes API server: exit codes over N runs each.

Issue 32: one-shot commands crashed at exit (SIGSEGV, exit 139) after printing complete output,
the interpreter finalising while watch threads were still inside OpenSSL. This runs each read
command, and a usage error, N times in a fresh process and counts the exit codes; a clean run is
all 0 (2 for the usage error).

    python benchmarks/bench_k8s_exit.py KUBECONFIG [-n 200] [--context NAME] [-j 2]
    GPUQ_TEST_KUBECONFIG=… python benchmarks/bench_k8s_exit.py
    python benchmarks/bench_k8s_exit.py --double [--tls]   # the tests' API server double

`job` reads the first GPU pod the server has (or `--job NS/NAME`). A negative code is the
signal that ended the process (-11: SIGSEGV; a shell shows it as 128+11 = 139).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: each command and the exit code a clean run ends with
COMMANDS: dict[str, tuple[list[str], int]] = {
    "queue": (["queue"], 0),
    "gpus": (["gpus"], 0),
    "sla": (["sla"], 0),
    "overview": (["overview"], 0),
    "preemptions": (["preemptions"], 0),
    "job": (["job", "JOB"], 0),
    "snapshot": (["snapshot"], 0),
    "preview --class nosuch": (["preview", "--class", "nosuch"], 2),
}


def _env(kubeconfig: str, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "GPUQ_PURE_PYTHON_OFF")}
    env.update(KUBECONFIG=kubeconfig, XDG_CONFIG_HOME=str(home / "config"), XDG_STATE_HOME=str(home / "state"),
               PYTHONPATH=str(ROOT) + os.pathsep + env.get("PYTHONPATH", ""))  # fmt: skip
    return env


def _gpuq(args: list[str], env: dict[str, str], context: str | None) -> subprocess.CompletedProcess[bytes]:
    flags = ["--backend", "kubernetes", *(["--context", context] if context else [])]
    cmd = [sys.executable, "-c", "from gpuq.cli.main import main; main()", *flags, *args]
    return subprocess.run(cmd, env=env, capture_output=True, timeout=300, check=False)  # noqa: S603


def _first_job(env: dict[str, str], context: str | None) -> str:
    done = _gpuq(["queue", "-o", "json"], env, context)
    if done.returncode != 0:
        sys.exit(f"gpuq queue failed ({done.returncode}): {done.stderr.decode(errors='replace')[-500:]}")
    jobs = json.loads(done.stdout).get("jobs", [])
    if not jobs:
        sys.exit("the server has no GPU pod for `job`: give --job NS/NAME")
    return str(jobs[0]["id"])


def run(kubeconfig: str, runs: int, context: str | None, job: str | None, parallel: int) -> bool:
    with tempfile.TemporaryDirectory(prefix="gpuq-exit-") as tmp:
        env = _env(kubeconfig, Path(tmp))
        job_id = job or _first_job(env, context)
        clean = True
        print(f"{'command':<24} {'runs':>5} {'s/run':>6}  exit codes (count)")
        for name, (args, expected) in COMMANDS.items():
            argv = [job_id if a == "JOB" else a for a in args]
            start = time.perf_counter()
            with ThreadPoolExecutor(parallel) as pool:
                done = list(pool.map(lambda _, argv=argv: _gpuq(argv, env, context), range(runs)))
            took = (time.perf_counter() - start) * parallel / runs
            codes = collections.Counter(d.returncode for d in done)
            shown = ", ".join(f"{code}: {count}" for code, count in sorted(codes.items()))
            bad = runs - codes[expected]
            clean &= bad == 0
            print(f"{name:<24} {runs:>5} {took:>6.2f}  {shown}" + (f"  <- {bad} not {expected}" if bad else ""))
            for d in done:
                if d.returncode != expected:
                    print("   e.g. stderr:", d.stderr.decode(errors="replace").strip()[-300:] or "(none)")
                    break
        return clean


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kubeconfig", nargs="?", default=os.environ.get("GPUQ_TEST_KUBECONFIG", ""))
    parser.add_argument("-n", "--runs", type=int, default=200)
    parser.add_argument("-j", "--parallel", type=int, default=2, help="processes at once (default 2)")
    parser.add_argument("--context", help="the kubeconfig context (default: its current one)")
    parser.add_argument("--job", help="NS/NAME for `job` (default: the first GPU pod found)")
    parser.add_argument("--double", action="store_true", help="the tests' API server double, not a kubeconfig")
    parser.add_argument("--tls", action="store_true", help="the double over HTTPS (self-signed, needs openssl)")
    opts = parser.parse_args()
    if opts.double:
        sys.path.insert(0, str(ROOT))
        from tests.k8s.double import ApiDouble

        with (
            tempfile.TemporaryDirectory(prefix="gpuq-double-") as tmp,
            ApiDouble(tls_dir=Path(tmp) if opts.tls else None) as double,
        ):
            kubeconfig = double.kubeconfig(Path(tmp) / "kubeconfig")
            print(f"API server double at {double.url}")
            clean = run(str(kubeconfig), opts.runs, None, opts.job, opts.parallel)
    elif not opts.kubeconfig:
        sys.exit("give a kubeconfig (argument or GPUQ_TEST_KUBECONFIG), or --double")
    else:
        clean = run(opts.kubeconfig, opts.runs, opts.context, opts.job, opts.parallel)
    sys.exit(0 if clean else 1)


if __name__ == "__main__":
    main()
