"""The embedded simulated cluster (`--backend demo`): gpuq's default when no cluster is configured.

The simulator (`gpuq.sim`) is pure; this backend gives it a home on disk and a clock. State lives
in `state_dir/demo-<cluster>.json` with its own clock anchor: on every call

    simulated_now = sim_time_at_save + (wall_now − wall_at_save) × speed

and the simulation is advanced to that instant before anything is read or changed, so a
`gpuq bump` followed by `gpuq queue` shows the bump, and queue, occupancy, SLA and preemption
counts move while you watch. A lock file (fcntl) serialises concurrent CLI calls, and the state
is replaced atomically (temp file + os.replace), so no action is ever lost or half-written.

Faults: an action is done only once its state is saved; a save that fails (disk full, a read-only
directory) leaves the old file as it was and the action undone, and says so. Reads do not need to
save (the next call replays from the saved state to the same moment), so they work from a state
directory gpuq cannot write; actions there are refused before anything is asked, saying why. A
state file that cannot be read back (corrupt, another format) is an error naming it, never
replaced: the operator decides whether to delete it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import shlex
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import IO, TYPE_CHECKING, Any, ClassVar

import msgspec

from gpuq.backends.base import (
    ActionPlan,
    ActionResult,
    Backend,
    Capabilities,
    OptionSpec,
    PriorityChange,
)
from gpuq.errors import BadInput, GpuqError, JobChanged, PermissionDenied, Refused
from gpuq.model import Snapshot
from gpuq.policy.config import DEFAULT_POLICY, Mode, Policy
from gpuq.sim import ClusterSpec, Simulator, WorkloadStream, actions, convert
from gpuq.sim import state as sim_state
from gpuq.sim.incident import shows_incident
from gpuq.sim.jobs import PENDING, SimJob
from gpuq.timefmt import format_time

if TYPE_CHECKING:
    from gpuq.trace.record import TraceJob

__all__ = ["DEFAULT_SEED", "DEFAULT_SPEED", "STATE_FORMAT", "DemoBackend", "StateNotSaved"]

STATE_FORMAT = "gpuq.demo-state/v1"
DEFAULT_SEED = 1
DEFAULT_SPEED = 60.0  # one simulated minute per wall-clock second
MAX_SPEED = 3600.0  # a simulated hour per second; faster, every call would skip MAX_CATCHUP_S ahead
MAX_SEED = 2**63 - 1  # the state file stores it as a JSON integer (msgspec: 64 bits)
WARMUP_S = 12 * 3600.0  # simulated before the first look: queues, SLA history, preemptions
MAX_CATCHUP_S = 2 * 86400.0  # replayed at most per call; beyond it the simulated clock skips ahead
HISTORY_LIMIT = 1500  # finished jobs kept for SLA figures
EVENT_LIMIT = 2000  # preemption events kept
MAX_PENDING = 300  # simulated users stop submitting into a longer queue
LOAD = 1.2  # offered GPU-time / capacity, on average over a day (more in the afternoon)
#: The hour of the workload's day at which a fresh cluster's warm-up ends, whatever the wall clock
#: says: the evening rush, when the queue is at its longest.
FIRST_LOOK_HOUR = 20.0
#: From there a fresh cluster runs on in these steps until it shows an incident (gpuq.sim.incident),
#: at most this many: the first look is that moment.
INCIDENT_STEP_S = 300.0
INCIDENT_STEPS = 48


def _default_state_dir() -> Path:
    from gpuq.locations import state_dir

    return state_dir()


#: The simulated site's policy, used when the operator configured none: a site of its own, with
#: a shorter minimum runtime than gpuq's defaults and no assumed checkpoints for jobs that report
#: none (a third of its jobs report theirs). Preview and simulator both use it, so they agree.
DEMO_POLICY = Policy(delta=50, min_runtime_s=900.0, max_preemptions_per_day=3, default_checkpoint_interval_s=0.0)


class StateNotSaved(GpuqError):
    """The simulated cluster's state could not be saved (disk full, an I/O error): the action
    it would have recorded was not applied."""

    exit_code = 1


#: errnos that mean "gpuq may not write there" (rather than "the write failed")
_NOT_WRITABLE = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})


#: The fields an action's guard holds, as the refusal names them.
_GUARDED = {"state": "state", "run_start": "run started at", "submit": "submitted at"}


def _shown(value: Any) -> str:
    return format_time(value) if isinstance(value, float) else "-" if value is None else str(value)


class DemoBackend(Backend):
    """A simulated 16-node × 8-GPU multi-tenant cluster that lives between CLI invocations."""

    name = "demo"
    options: ClassVar[Mapping[str, OptionSpec]] = MappingProxyType({
        "cluster": OptionSpec(str, "the simulated cluster's name: each name is a cluster of its own"),
        "seed": OptionSpec(int, "a fresh, reproducible cluster per seed", minimum=0, maximum=MAX_SEED),
        "speed": OptionSpec(float, "simulated seconds per wall-clock second", minimum=0.0, exclusive=True,
                            maximum=MAX_SPEED),
    })  # fmt: skip
    internals: ClassVar[frozenset[str]] = frozenset({"state_dir", "policy", "clock"})
    default_policy = DEMO_POLICY

    def __init__(
        self,
        cluster: str = "demo",
        state_dir: Path | None = None,
        seed: int | None = None,
        speed: float | None = None,
        policy: Policy = DEFAULT_POLICY,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if speed is not None and not 0 < speed <= MAX_SPEED:
            raise BadInput(f"--speed must be a number of simulated seconds per second, > 0 and <= {MAX_SPEED:g}, "
                           f"got {speed:g}")  # fmt: skip
        if not cluster or "/" in cluster or cluster.startswith("."):
            raise BadInput(f"not a usable demo cluster name: {cluster!r}")
        self.cluster = cluster
        self.state_dir = Path(state_dir) if state_dir is not None else _default_state_dir()
        self.seed = seed
        self.speed = speed
        self.policy = policy
        self.clock = clock

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(
            actions=frozenset({"bump", "exempt", "preempt", "resume"}), priority_range=(0, 2**31 - 1), history=True
        )

    @property
    def state_path(self) -> Path:
        return self.state_dir / f"demo-{self.cluster}.json"

    @property
    def _lock_path(self) -> Path:
        return self.state_dir / f"demo-{self.cluster}.lock"

    # ---- state on disk ---------------------------------------------------------------------

    def _fresh(self, seed: int, wall: float) -> Simulator:
        """A new cluster, warmed up so that it is already busy when first looked at."""
        spec = ClusterSpec()
        start = float(int(wall - WARMUP_S))
        day_origin = float(int(wall - FIRST_LOOK_HOUR * 3600.0))
        stream = WorkloadStream(seed, spec, load=LOAD, day_origin=day_origin)
        sim = Simulator(policy=self.policy, cluster=spec, start=start, name=self.cluster,
                        stream=stream, max_pending=MAX_PENDING,
                        history_limit=HISTORY_LIMIT, event_limit=EVENT_LIMIT)
        sim.run_until(wall)
        for _ in range(INCIDENT_STEPS):
            if shows_incident(sim.snapshot(), self.policy):
                break
            sim.run_until(sim.now + INCIDENT_STEP_S)
        return sim

    def _load(self) -> dict[str, Any] | None:
        """The saved state (None: there is none yet). A file that is there but cannot be used is
        an error: replacing it would throw away a cluster someone may still want."""
        path = self.state_path
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            kind = PermissionDenied if exc.errno in _NOT_WRITABLE else BadInput
            raise kind(f"{path}: cannot read the demo cluster's state ({exc.strerror or exc})") from None
        try:
            raw = json.loads(data)
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            raise self._unusable(f"not valid JSON ({exc})") from None
        if not isinstance(raw, dict):
            raise self._unusable("not a gpuq demo state file (not a JSON object)")
        if raw.get("format") != STATE_FORMAT:
            raise self._unusable(f"format {str(raw.get('format'))[:80]!r}, not {STATE_FORMAT} (another gpuq version?)")
        return raw

    def _unusable(self, why: str) -> BadInput:
        path = str(self.state_path)
        return BadInput(f"{path}: cannot use the demo cluster's saved state: {why}; gpuq leaves the file as it is: "
                        f"delete or move it to start a fresh simulated cluster (`rm {shlex.quote(path)}`)")  # fmt: skip

    def _save(self, sim: Simulator, seed: int, speed: float, wall: float) -> None:
        state = {
            "format": STATE_FORMAT,
            "seed": seed,
            "speed": speed,
            "wall_at_save": wall,
            "sim_at_save": sim.now,
            "sim": sim_state.dump(sim),
        }
        data = msgspec.json.encode(state)  # (json.dump streams through pure Python: 4x slower)
        fd, tmp = tempfile.mkstemp(prefix=f".demo-{self.cluster}.", suffix=".tmp", dir=self.state_dir)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, self.state_path)  # (the old state stays whole until this instant)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def _not_saved(self, exc: OSError, what: str) -> GpuqError:
        """The error for a save that failed: nothing of `what` took effect."""
        why = exc.strerror or str(exc)
        if exc.errno in _NOT_WRITABLE:
            return PermissionDenied(f"cannot {what}: the demo cluster's state in {self.state_dir} is not writable "
                                    f"({why}); nothing was done (read commands still work)")  # fmt: skip
        return StateNotSaved(f"cannot {what}: saving the demo cluster's state to {self.state_path} failed ({why}); "
                             "nothing was done, the saved cluster is as it was")  # fmt: skip

    def _check_writable(self, what: str) -> None:
        """Refuse an action up front where its outcome could not be saved (a read-only state
        directory); a full disk is only found by the save itself, which then undoes it."""
        try:
            self.state_dir.mkdir(parents=True, exist_ok=True)
            fd, probe = tempfile.mkstemp(prefix=f".demo-{self.cluster}.", suffix=".probe", dir=self.state_dir)
        except OSError as exc:
            raise self._not_saved(exc, what) from None
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(probe)

    def _open_lock(self, write: bool) -> IO[str] | None:
        """The lock file, for writing; where the directory cannot be written, for reading (flock
        needs no write access), or, if there is none, no lock at all (a read writes nothing)."""
        try:
            self.state_dir.mkdir(parents=True, exist_ok=True)
            return open(self._lock_path, "a+")  # noqa: SIM115 - held for the whole session
        except OSError as exc:
            if write:
                raise BadInput(f"{self.state_dir}: cannot keep the demo cluster's state there "
                               f"({exc.strerror})") from None  # fmt: skip
        try:
            return open(self._lock_path)  # noqa: SIM115 - held for the whole session
        except OSError:
            return None

    @contextlib.contextmanager
    def _session(self, write: bool = True, action: str = "") -> Iterator[Simulator]:
        """Lock, load (or create), advance to simulated now, yield, save. `action` (what an
        action does, in words): the save must succeed, else nothing of it is kept and the error
        says so; otherwise (a read) a save that fails is skipped: the next call replays from the
        state on disk to the same moment."""
        lock = self._open_lock(write=bool(action))
        with lock if lock is not None else contextlib.nullcontext():
            if lock is not None:
                fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            wall = self.clock()
            raw = self._load()
            sim: Simulator | None = None
            if raw is not None and (self.seed is None or raw.get("seed") == self.seed):
                try:
                    sim = sim_state.load(raw["sim"], policy=self.policy)
                    seed = int(raw["seed"])
                    speed = float(raw["speed"]) if self.speed is None else self.speed
                    if not 0 < float(raw["speed"]) <= MAX_SPEED:  # (a file from before the bound, or edited)
                        raise ValueError(f"speed {raw['speed']!r} is not > 0 and <= {MAX_SPEED:g}")
                    target = float(raw["sim_at_save"]) + (wall - float(raw["wall_at_save"])) * float(raw["speed"])
                except (KeyError, TypeError, ValueError, IndexError, AttributeError, RecursionError) as exc:
                    raise self._unusable(f"damaged or from an incompatible gpuq ({type(exc).__name__}: "
                                         f"{str(exc)[:200]})") from None  # fmt: skip
            if sim is None:
                seed = DEFAULT_SEED if self.seed is None else self.seed
                speed = DEFAULT_SPEED if self.speed is None else self.speed
                sim = self._fresh(seed, wall)
                target = sim.now
            # Never run backwards (wall clock changes), and replay at most MAX_CATCHUP_S at once.
            sim.run_until(min(max(target, sim.now), sim.now + MAX_CATCHUP_S))
            yield sim
            if not write:
                return
            try:
                self._save(sim, seed, speed, wall)
            except OSError as exc:
                if action:
                    raise self._not_saved(exc, action) from None

    # ---- reading ---------------------------------------------------------------------------

    def snapshot(self, *, ledger: bool = True) -> Snapshot:  # ledger: nothing cached to skip
        with self._session() as sim:
            return sim.snapshot()

    def cluster_time(self) -> float:
        """The simulated clock, run up to now (every demo time is on it)."""
        with self._session(write=False) as sim:
            return sim.now

    def export_history(self, since: float, until: float) -> Iterator[TraceJob]:
        """The simulated jobs over ``[since, until]``: the live ones and the finished ones it keeps
        (the last `HISTORY_LIMIT`), with the run time each needs (`jobtrace.trace_job`)."""
        from gpuq.backends.jobtrace import in_window, trace_job

        with self._session(write=False) as sim:
            snap = sim.snapshot()
        now = snap.taken_at.timestamp()
        traced = (trace_job(job, now) for job in snap.jobs)
        return (job for job in traced if in_window(job, since, until))

    def reset(self) -> None:
        """Forget the cluster: the next call starts a fresh one (with this backend's seed)."""
        try:
            self.state_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise BadInput(f"{self.state_dir}: cannot keep the demo cluster's state there ({exc.strerror})") from None
        with open(self._lock_path, "a+") as lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            with contextlib.suppress(FileNotFoundError):
                self.state_path.unlink()

    # ---- actions: prepared on a look at the cluster, applied in one locked session ----------

    def _guard(self, sim: Simulator, job_id: str) -> dict[str, Any]:
        """What must not change between preparing and applying: the job and its current run."""
        job = actions.visible(sim, job_id)
        return {"state": job.state, "run_start": job.run_start, "submit": job.submit}

    def _check(self, sim: Simulator, plan: ActionPlan) -> SimJob:
        job = actions.visible(sim, plan.target)
        now = {"state": job.state, "run_start": job.run_start, "submit": job.submit}
        changed = [
            f"{_GUARDED[key]} {_shown(plan.guard[key])} -> {_shown(now[key])}" for key in plan.guard
            if plan.guard[key] != now[key]
        ]  # fmt: skip
        if changed:
            what = "; ".join(changed)
            raise JobChanged(f"job {plan.target} changed since the {plan.action} was prepared ({what}); "
                             "nothing was done: look again and retry")  # fmt: skip
        return job

    def prepare_bump(self, job_id: str, change: PriorityChange, *, reason: str) -> ActionPlan:
        self._check_writable(f"bump job {job_id}")
        with self._session(write=False) as sim:
            job = actions.visible(sim, job_id)
            before, after = actions.bump(sim, job_id, priority=change.new_priority(job.priority),
                                         urgent=change.urgent, dry_run=True)  # fmt: skip
            if change.urgent and not job.urgent:
                # Urgency stands for the policy's urgent priority: never lower a job already above it.
                now_at = sim.rules.priority_of(job, sim.now, queued=job.state == PENDING)
                if now_at > sim.rules.urgent:
                    said = (f"job {job_id} is already at effective priority {now_at:g}, above the "
                            f"urgent priority {sim.rules.urgent:g}: --urgent would lower it; "
                            "nothing changed")  # fmt: skip
                    return ActionPlan("bump", job_id, before, before, message=said, noop=True)
            what = "urgent" if after["urgent"] and not before["urgent"] else f"priority {after['priority']}"
            return ActionPlan("bump", job_id, before, after, message=f"bump job {job_id} to {what}",
                              guard=self._guard(sim, job_id), payload={"change": change})  # fmt: skip

    def prepare_exempt(self, job_id: str, until: float | None, *, reason: str) -> ActionPlan:
        self._check_writable(f"exempt job {job_id}")
        with self._session(write=False) as sim:
            before, after = actions.exempt(sim, job_id, until=until, dry_run=True)
            if until is None:
                message = f"lift the exemption of job {job_id}"
            else:
                message = f"exempt job {job_id} from preemption until {format_time(until)}"
            return ActionPlan("exempt", job_id, before, after, message=message, guard=self._guard(sim, job_id),
                              payload={"until": until})  # fmt: skip

    def prepare_preempt(self, job_id: str, mode: Mode, *, reason: str) -> ActionPlan:
        self._check_writable(f"preempt job {job_id}")
        with self._session(write=False) as sim:
            self._refuse_exempt(sim, job_id)
            before, after = actions.preempt(sim, job_id, mode=mode, dry_run=True)
            message = f"preempt job {job_id} ({mode.value})"
            warnings: tuple[str, ...] = ()
            if mode is Mode.SUSPEND:
                message += f", keeping its GPUs until `gpuq resume {job_id}`"
                warnings = ("a suspended job keeps its GPUs: nothing is freed for other jobs",)
            return ActionPlan("preempt", job_id, before, after, message=message, warnings=warnings,
                              guard=self._guard(sim, job_id), payload={"mode": mode})  # fmt: skip

    def prepare_resume(self, job_id: str, *, reason: str) -> ActionPlan:
        self._check_writable(f"resume job {job_id}")
        with self._session(write=False) as sim:
            before, after = actions.resume(sim, job_id, dry_run=True)
            return ActionPlan("resume", job_id, before, after, message=f"resume job {job_id} on the GPUs it kept",
                              guard=self._guard(sim, job_id))  # fmt: skip

    def apply(self, plan: ActionPlan) -> ActionResult:
        with self._session(action=f"{plan.action} job {plan.target}") as sim:
            job = self._check(sim, plan)
            payload = plan.payload
            preempted: dict[str, tuple[str, ...]] | None = None
            if plan.action == "bump":
                change: PriorityChange = payload["change"]
                foreseen = plan.foreseen
                # A relative bump is computed here, inside the lock that writes it; the plan the
                # operator was shown is carried out while it is still valid.
                before, after, preempted = actions.bump_reported(
                    sim, plan.target, priority=change.new_priority(job.priority), urgent=change.urgent,
                    planned=None if foreseen is None else (foreseen.victims, foreseen.nodes),
                )  # fmt: skip
                what = "urgent" if after["urgent"] and not before["urgent"] else f"priority {after['priority']}"
                message = f"bumped job {plan.target} to {what} on cluster {self.cluster}"
            elif plan.action == "exempt":
                before, after = actions.exempt(sim, plan.target, until=payload["until"])
                until = payload["until"]
                message = (f"lifted the exemption of job {plan.target}" if until is None
                           else f"exempted job {plan.target} from preemption until {format_time(until)}")  # fmt: skip
            elif plan.action == "preempt":
                self._refuse_exempt(sim, plan.target)
                mode: Mode = payload["mode"]
                before, after = actions.preempt(sim, plan.target, mode=mode)
                message = f"preempted job {plan.target} ({mode.value}); now {after['state']}"
                if mode is Mode.SUSPEND:
                    message += f", holding its GPUs until `gpuq resume {plan.target}`"
            elif plan.action == "resume":
                before, after = actions.resume(sim, plan.target)
                message = f"resumed job {plan.target} on cluster {self.cluster}: running again on the GPUs it kept"
            else:  # pragma: no cover - the service only applies plans this backend prepared
                raise Refused(f"backend demo cannot {plan.action} jobs")
            return ActionResult(plan.action, plan.target, before, after, warnings=plan.warnings, message=message,
                                preempted=preempted)  # fmt: skip

    def _refuse_exempt(self, sim: Simulator, job_id: str) -> None:
        job = convert.model_job(actions.visible(sim, job_id), sim.now)
        if job.exempt_at(sim.now):
            assert job.exempt_until is not None
            raise Refused(f"job {job_id} is exempt from preemption until {format_time(job.exempt_until)}; "
                          f"lift that first with `gpuq exempt {job_id} --off`")  # fmt: skip
