"""A Slurm job array of one batch script: submitted with sbatch, waited for with squeue (sacct
for the final states of tasks that failed), cancelled with scancel, every call through `Runner`.

The caller says when a task has done its work (`done(task)`: its result file exists); a task
that left the queue without doing it has failed, and the error names the task, its state and
exit code (where accounting keeps them), its log file and the log's last line. Waiting is
bounded (`timeout_s`); past it, or on Ctrl-C, the array is cancelled.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from gpuq.backends.slurm.runner import Runner
from gpuq.errors import GpuqError, NotFound, Refused, Unreachable
from gpuq.textsafe import visible

__all__ = ["LOG_PATTERN", "ArrayJob", "cancel_array", "final_states", "queued_tasks", "submit_array", "wait_array"]

#: the log file name of each task (sbatch's %a is the array index)
LOG_PATTERN = "task-%a.log"
#: how long a task that left the queue may take to show its result (a shared file system's lag)
SETTLE_S = 15.0


@dataclass(frozen=True, slots=True)
class ArrayJob:
    job_id: str
    tasks: int
    log_dir: Path

    def log(self, task: int) -> Path:
        return self.log_dir / LOG_PATTERN.replace("%a", str(task))


def submit_array(
    runner: Runner,
    script: Path,
    *,
    tasks: int,
    name: str,
    log_dir: Path,
    workdir: Path,
    partition: str | None = None,
    extra: Sequence[str] = (),
) -> ArrayJob:
    """``sbatch --array=0-(tasks-1)`` of `script`; the array's job id."""
    if tasks < 1:
        raise ValueError(tasks)
    argv = ["sbatch", "--parsable", f"--array=0-{tasks - 1}", "--job-name", name, "--chdir", str(workdir),
            "--output", str(log_dir / LOG_PATTERN), "--ntasks", "1"]  # fmt: skip
    if partition:
        argv += ["--partition", partition]
    argv += [*extra, str(script)]
    out = runner.run(argv, what="job array", timeout_s=60.0)
    job_id = out.strip().split(";")[0]
    if not job_id.isdigit():
        raise Refused(f"sbatch answered '{visible(out.strip()[:80])}', not a job id")
    return ArrayJob(job_id, tasks, log_dir)


def queued_tasks(runner: Runner, job: ArrayJob) -> dict[int, str]:
    """Task index -> state of the array's tasks still in the queue (pending, running, completing)."""
    try:
        out = runner.run(["squeue", "-h", "-r", "-j", job.job_id, "-o", "%K|%T"], what=job.job_id)
    except NotFound:  # every task finished and slurmctld forgot the array
        return {}
    found: dict[int, str] = {}
    for line in out.splitlines():
        index, _, state = line.strip().partition("|")
        if index.isdigit():
            found[int(index)] = state
        elif "-" in index or "[" in index:  # a pending record not yet split: all its tasks pend
            for task in _expand(index):
                found[task] = state
    return found


def _expand(text: str) -> list[int]:
    """Task indexes of ``0-47``, ``[3-5,7%2]``."""
    tasks: list[int] = []
    for part in text.strip("[]").split("%")[0].split(","):
        low, _, high = part.partition("-")
        if low.isdigit() and (not high or high.isdigit()):
            tasks.extend(range(int(low), int(high or low) + 1))
    return tasks


def final_states(runner: Runner, job: ArrayJob) -> dict[int, tuple[str, str]]:
    """Task index -> (state, exit code) from accounting; empty where sacct keeps nothing."""
    try:
        out = runner.run(["sacct", "-n", "-P", "-X", "-j", job.job_id, "-o", "JobID,State,ExitCode"], what=job.job_id)
    except GpuqError:  # accounting disabled or unreachable: the log says the rest
        return {}
    states: dict[int, tuple[str, str]] = {}
    for line in out.splitlines():
        fields = line.strip().split("|")
        if len(fields) >= 3 and "_" in fields[0]:
            index = fields[0].rsplit("_", 1)[1]
            if index.isdigit():
                states[int(index)] = (fields[1], fields[2])
    return states


def cancel_array(runner: Runner, job: ArrayJob) -> None:
    with contextlib.suppress(GpuqError):  # (already gone)
        runner.run(["scancel", job.job_id], what=job.job_id)


def _last_line(path: Path) -> str:
    try:
        with path.open("rb") as fh:
            fh.seek(0, 2)
            fh.seek(max(0, fh.tell() - 4096))
            lines = [line for line in fh.read().decode(errors="replace").splitlines() if line.strip()]
    except OSError:
        return "(no log file)"
    return visible(lines[-1][:300]) if lines else "(empty log)"


def wait_array(
    runner: Runner,
    job: ArrayJob,
    done: Callable[[int], bool],
    *,
    progress: Callable[[int, int], None] | None = None,
    timeout_s: float = 86400.0,
    poll_s: float = 2.0,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Return once every task is `done`; raise Refused naming the first failed task (the others
    are cancelled), Unreachable past `timeout_s` (the array is cancelled)."""
    start = clock()
    left_at: dict[int, float] = {}
    finished: set[int] = set()
    try:
        while True:
            queued = queued_tasks(runner, job)
            now = clock()
            for task in range(job.tasks):
                if task in finished or task in queued:
                    continue
                if done(task):
                    finished.add(task)
                    continue
                first = task not in left_at
                if now - left_at.setdefault(task, now) >= SETTLE_S or (first and _known_failure(runner, job, task)):
                    cancel_array(runner, job)
                    raise _failed(runner, job, task)
            if progress is not None:
                progress(len(finished), job.tasks)
            if len(finished) == job.tasks:
                return
            if now - start >= timeout_s:
                cancel_array(runner, job)
                missing = [t for t in range(job.tasks) if t not in finished]
                raise Unreachable(
                    f"job array {job.job_id}: {len(missing)} of {job.tasks} tasks not done after {timeout_s:g}s "
                    f"(first: task {missing[0]}, log {job.log(missing[0])}); the array was cancelled"
                )
            sleep(poll_s)
    except KeyboardInterrupt:
        cancel_array(runner, job)
        raise


def _known_failure(runner: Runner, job: ArrayJob, task: int) -> bool:
    """Whether accounting already says the task ended other than COMPLETED (then there is no
    result file to wait for)."""
    state = final_states(runner, job).get(task, ("", ""))[0]
    return bool(state) and state not in ("COMPLETED", "RUNNING", "PENDING", "COMPLETING")


def _failed(runner: Runner, job: ArrayJob, task: int) -> Refused:
    state, code = final_states(runner, job).get(task, ("left the queue", ""))
    how = f"{state}, exit code {code}" if code else state
    return Refused(
        f"job array {job.job_id}: task {task} failed ({visible(how)}) without writing its result; "
        f"its log {job.log(task)} ends: {_last_line(job.log(task))}; the other tasks were cancelled"
    )
