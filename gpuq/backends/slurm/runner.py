"""Every Slurm CLI call goes through here: argument lists only, a timeout, errors mapped.

Mapping (stderr texts verified on 22.05):
- ``Invalid job id specified`` -> NotFound
- ``Access/permission denied``, ``Invalid user id`` -> PermissionDenied (operator/admin needed)
- ``Unable to contact slurm controller`` / connection failures / a hung CLI -> Unreachable
- no configuration at all (no slurm.conf and no DNS SRV record: ``resolve_ctls_from_dns_srv``,
  ``Could not establish a configuration source``; or a ``SLURM_CONF`` naming a missing file,
  checked before any call, since the CLIs retry that for a minute) -> Unreachable, "no Slurm
  controller found"

A read whose answer may turn out not to be needed (`SlurmBackend.snapshot` starts ``sacct``
before it knows) runs with a `CancelToken`: `CancelToken.cancel` kills the command's process
group, the call reaps it and raises `Cancelled` (nothing half-read is returned).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Literal, TypeVar, overload

from gpuq.errors import BadInput, GpuqError, NotFound, PermissionDenied, Refused, Unreachable

__all__ = ["CancelToken", "Cancelled", "Runner", "controller_address", "parse_output"]

T = TypeVar("T")

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
#: What the Slurm CLIs print when they find no configuration: no slurm.conf, and configless mode
#: finds no DNS SRV record either (verified on 22.05).
_NO_CONFIG = (
    "resolve_ctls_from_dns_srv",
    "Could not establish a configuration source",
    "_establish_config_source",
    "fetch_config: DNS SRV lookup failed",
    "Unable to process configuration file",
)
_DEFAULT_CONF = "/etc/slurm/slurm.conf"


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


def no_controller(why: str) -> Unreachable:
    """The error for a Slurm client that finds no cluster to talk to."""
    return Unreachable(f"no Slurm controller found (set SLURM_CONF to the cluster's slurm.conf): {why}")


def _missing_conf() -> Unreachable | None:
    """A ``SLURM_CONF`` that names no file: Slurm's CLIs would retry it for a minute first."""
    conf = os.environ.get("SLURM_CONF")
    if conf and not os.path.exists(conf):
        return no_controller(f"SLURM_CONF={conf!r} does not exist")
    return None


def _no_config(shown: str, message: str) -> Unreachable:
    conf = os.environ.get("SLURM_CONF") or _DEFAULT_CONF
    if not os.environ.get("SLURM_CONF") and not os.path.exists(conf):
        why = f"no {conf}, and DNS has no SRV record for slurmctld"
    else:
        why = f"{conf} is not usable ({message.splitlines()[-1].strip()})"
    return no_controller(f"`{shown}` found no configuration: {why}")


def parse_output(command: str, parse: Callable[[], T]) -> T:
    """``parse()``, with a parser's failure on unexpected output turned into BadInput naming the
    command (what an operator can act on), never a traceback."""
    try:
        return parse()
    except GpuqError:
        raise
    except (ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
        raise BadInput(f"could not parse the output of `{command}`: {exc}") from None


class Cancelled(Exception):
    """A command stopped by its `CancelToken` (or not started, the token being cancelled already).

    Deliberately not a `GpuqError`: it never reaches an operator, the code that cancels catches it.
    """


class CancelToken:
    """Lets one thread stop commands another thread runs through `Runner.run` (``cancel=``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancelled = False
        self._procs: set[subprocess.Popen[str]] = set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self) -> None:
        """Kill every command running under this token; later ones are not started."""
        with self._lock:
            self._cancelled = True
            procs = list(self._procs)
        for proc in procs:
            if proc.returncode is None:  # not reaped yet (its pid cannot have been reused)
                _kill_group(proc)

    def _attach(self, proc: subprocess.Popen[str]) -> bool:
        with self._lock:
            if self._cancelled:
                return False
            self._procs.add(proc)
            return True

    def _detach(self, proc: subprocess.Popen[str]) -> None:
        with self._lock:
            self._procs.discard(proc)


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

    def run(
        self,
        args: Sequence[str],
        *,
        timeout_s: float | None = None,
        what: str = "",
        cancel: CancelToken | None = None,
        as_is: bool = False,
    ) -> str:
        """Run; return stdout. Raises NotFound/PermissionDenied/Unreachable/Refused on failure, and
        `Cancelled` when ``cancel`` was cancelled before the command finished. ``as_is``: ``args``
        is already what `argv` made of a command (an action plan's exact command line)."""
        argv = list(args) if as_is else self.argv(args)
        shown = _shown(argv)
        missing = _missing_conf()
        if missing is not None:
            raise missing
        if cancel is not None:
            return self._run_cancellable(argv, shown, timeout_s or self.timeout_s, what, cancel)
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
            raise _no_client(argv) from None
        except subprocess.TimeoutExpired:
            raise _no_answer(shown, timeout_s or self.timeout_s) from None
        if proc.returncode != 0:
            raise self.error(argv, proc.stderr.strip() or proc.stdout.strip(), what)
        return proc.stdout

    def _run_cancellable(self, argv: list[str], shown: str, limit: float, what: str, cancel: CancelToken) -> str:
        if cancel.cancelled:
            raise Cancelled(shown)
        proc = _spawn(argv, text=True)
        try:
            if not cancel._attach(proc):
                _kill_group(proc)
            try:
                out, err = proc.communicate(timeout=limit)
            except subprocess.TimeoutExpired:
                _kill_group(proc)
                proc.communicate()  # reap it: no zombie left behind
                raise _no_answer(shown, limit) from None
        finally:
            cancel._detach(proc)
            if proc.poll() is None:  # an exception in between (KeyboardInterrupt): never leave it running
                _kill_group(proc)
                proc.wait()
        if cancel.cancelled and proc.returncode != 0:
            raise Cancelled(shown)  # killed by the token (a command that had finished keeps its answer)
        if proc.returncode != 0:
            raise self.error(argv, err.strip() or out.strip(), what)
        return out

    def stream(
        self,
        args: Sequence[str],
        consume: Callable[[Iterable[str]], T],
        *,
        timeout_s: float | None = None,
        what: str = "",
    ) -> T:
        """Like `run`, but ``consume`` gets stdout's lines while the command still writes them, so
        parsing overlaps a large queue's printing. Errors are mapped as in `run`, and a failed
        command's error wins over whatever ``consume`` made of its output."""
        lines = self.lines(args, timeout_s=timeout_s, what=what)
        try:
            result = consume(lines)
        except Exception:
            for _ in lines:  # (to the end: a failed command's error is raised there, and wins)
                pass
            raise
        for _ in lines:  # (the rest, and the exit status, checked where the output ends)
            pass
        return result

    def lines(self, args: Sequence[str], *, timeout_s: float | None = None, what: str = "") -> Iterator[str]:
        """stdout's lines as the command writes them, for a caller that takes them one at a time
        (a trace export writes sacct's output on as it comes). The command starts at the first
        line taken; errors are mapped as in `run` and raised where the output ends (a command
        that fails at once: at the first line taken). Closing the iterator early kills it."""
        argv = self.argv(args)
        shown = _shown(argv)
        missing = _missing_conf()
        if missing is not None:
            raise missing
        limit = timeout_s or self.timeout_s
        proc = _spawn(argv, text=False)
        timed_out = threading.Event()

        def kill() -> None:
            timed_out.set()
            _kill_group(proc)

        timer = threading.Timer(limit, kill)
        timer.daemon = True
        errors: list[bytes] = []
        assert proc.stdout is not None and proc.stderr is not None  # noqa: S101 - both are pipes
        err_stream = proc.stderr
        reader = threading.Thread(target=lambda: errors.append(err_stream.read()), daemon=True)
        timer.start()
        reader.start()
        try:
            yield from _lines(proc.stdout)
            proc.wait()
        finally:  # (also when the caller stops early: the command is killed, never left running)
            timer.cancel()
            if proc.poll() is None:
                _kill_group(proc)
                proc.wait()
            reader.join()
            proc.stdout.close()
            proc.stderr.close()
        if timed_out.is_set():
            raise _no_answer(shown, limit)
        if proc.returncode != 0:
            stderr = b"".join(errors).decode(errors="replace").strip()
            raise self.error(argv, stderr or f"exit status {proc.returncode} from {argv[0]}", what)

    def error(self, argv: Sequence[str], message: str, what: str = "") -> GpuqError:
        shown = _shown(argv)
        first = message.splitlines()[0] if message else f"exit status non-zero from {argv[0]}"
        where = f" on cluster {self.cluster}" if self.cluster else ""
        if any(text in message for text in _NO_CONFIG):  # (before the others: a config error may say "denied")
            return _no_config(shown, message)
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


def _shown(argv: Sequence[str]) -> str:
    """A command as error messages name it: its first words."""
    return " ".join(argv[:4]) + (" ..." if len(argv) > 4 else "")


def _no_client(argv: Sequence[str]) -> Unreachable:
    return Unreachable(f"`{argv[0]}` not found: is the Slurm client installed and on PATH?")


def _no_answer(shown: str, limit: float) -> Unreachable:
    return Unreachable(f"`{shown}` did not answer within {limit:g}s; is slurmctld at {controller_address()} up?")


@overload
def _spawn(argv: list[str], *, text: Literal[True]) -> subprocess.Popen[str]: ...


@overload
def _spawn(argv: list[str], *, text: Literal[False]) -> subprocess.Popen[bytes]: ...


def _spawn(argv: list[str], *, text: bool) -> subprocess.Popen[str] | subprocess.Popen[bytes]:
    """Start a command with both outputs piped, in its own process group, so a kill (timeout,
    cancel) reaches any child it started too, holding the pipe or not."""
    try:
        if text:
            return subprocess.Popen(  # noqa: S603 - an argument list, never a shell
                argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace",
                start_new_session=True,
            )
        return subprocess.Popen(  # noqa: S603 - an argument list, never a shell
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
        )
    except FileNotFoundError:
        raise _no_client(argv) from None


def _kill_group(proc: subprocess.Popen[bytes] | subprocess.Popen[str]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        proc.kill()


def _lines(stdout: IO[bytes]) -> Iterator[str]:
    """Lines of a byte stream as they arrive, decoded as `run` decodes (replacing bad bytes) and
    split as ``str.splitlines`` splits the whole text (cut at ``\\n``, which no UTF-8 sequence holds)."""
    rest = b""
    read = stdout.read1  # type: ignore[attr-defined]
    while True:
        chunk = read(1 << 16)
        if not chunk:
            break
        chunk = rest + chunk
        cut = chunk.rfind(b"\n")
        if cut < 0:
            rest = chunk
            continue
        rest = chunk[cut + 1 :]
        yield from chunk[: cut + 1].decode(errors="replace").splitlines()
    if rest:
        yield from rest.decode(errors="replace").splitlines()
