"""The job array's Slurm side against a scripted runner: the exact sbatch command, squeue and
sacct read, waiting with progress, a failed task named with its log, the timeout and Ctrl-C."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from gpuq.backends.slurm.array import ArrayJob, queued_tasks, submit_array, wait_array
from gpuq.backends.slurm.runner import Runner
from gpuq.errors import NotFound, Refused, Unreachable


class ScriptedRunner(Runner):
    """Answers each command from `answer(argv)`; records every argv."""

    def __init__(self, answer: Callable[[list[str]], str]) -> None:
        super().__init__()
        self.answer = answer
        self.calls: list[list[str]] = []

    def run(self, args: Sequence[str], **_: object) -> str:  # type: ignore[override]
        argv = list(args)
        self.calls.append(argv)
        return self.answer(argv)


def test_submit_builds_one_argument_list(tmp_path: Path) -> None:
    runner = ScriptedRunner(lambda argv: "4242;gpuqlab\n")
    job = submit_array(runner, tmp_path / "task.sh", tasks=48, name="gpuq-tune", log_dir=tmp_path, workdir=tmp_path,
                       partition="debug")  # fmt: skip
    assert job == ArrayJob("4242", 48, tmp_path)
    assert runner.calls == [["sbatch", "--parsable", "--array=0-47", "--job-name", "gpuq-tune", "--chdir",
                             str(tmp_path), "--output", str(tmp_path / "task-%a.log"), "--ntasks", "1", "--partition",
                             "debug", str(tmp_path / "task.sh")]]  # fmt: skip
    assert job.log(7) == tmp_path / "task-7.log"
    with pytest.raises(Refused, match="not a job id"):
        submit_array(ScriptedRunner(lambda argv: "Submitted batch job\n"), tmp_path / "t.sh", tasks=1, name="x",
                     log_dir=tmp_path, workdir=tmp_path)  # fmt: skip


def test_queued_tasks_reads_split_and_unsplit_records(tmp_path: Path) -> None:
    out = "3|RUNNING\n4|COMPLETING\n[5-7,9%2]|PENDING\n"
    runner = ScriptedRunner(lambda argv: out)
    assert queued_tasks(runner, ArrayJob("9", 10, tmp_path)) == {3: "RUNNING", 4: "COMPLETING", 5: "PENDING",
                                                                  6: "PENDING", 7: "PENDING", 9: "PENDING"}  # fmt: skip
    assert runner.calls == [["squeue", "-h", "-r", "-j", "9", "-o", "%K|%T"]]

    def gone(argv: list[str]) -> str:
        raise NotFound("no job 9")

    assert queued_tasks(ScriptedRunner(gone), ArrayJob("9", 10, tmp_path)) == {}


class Lab:
    """A scripted array of `tasks`: each poll, `leave` tasks leave the queue (and write their
    results unless they are in `fail`)."""

    def __init__(self, tmp_path: Path, tasks: int, fail: frozenset[int] = frozenset()) -> None:
        self.queue = list(range(tasks))
        self.done: set[int] = set()
        self.fail = fail
        self.now = 0.0
        self.cancelled = False
        self.job = ArrayJob("77", tasks, tmp_path)

    def answer(self, argv: list[str]) -> str:
        if argv[0] == "squeue":
            return "".join(f"{t}|RUNNING\n" for t in self.queue)
        if argv[0] == "sacct":
            return "".join(f"77_{t}|FAILED|3:0\n" for t in self.fail)
        if argv[0] == "scancel":
            self.cancelled = True
            return ""
        raise AssertionError(argv)

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        if self.queue:
            task = self.queue.pop(0)
            if task not in self.fail:
                self.done.add(task)


def test_wait_reports_progress_until_every_task_is_done(tmp_path: Path) -> None:
    lab = Lab(tmp_path, 3)
    seen: list[tuple[int, int]] = []
    wait_array(ScriptedRunner(lab.answer), lab.job, lab.done.__contains__, progress=lambda d, t: seen.append((d, t)),
               sleep=lab.sleep, clock=lambda: lab.now)  # fmt: skip
    assert seen == [(0, 3), (1, 3), (2, 3), (3, 3)]
    assert not lab.cancelled


def test_a_failed_task_is_named_with_its_state_and_log(tmp_path: Path) -> None:
    (tmp_path / "task-1.log").write_text("starting\nTraceback? no: gpuq: error: \x1b[31mboom\n")
    lab = Lab(tmp_path, 3, fail=frozenset({1}))
    with pytest.raises(Refused) as caught:
        wait_array(ScriptedRunner(lab.answer), lab.job, lab.done.__contains__, sleep=lab.sleep, clock=lambda: lab.now)
    message = str(caught.value)
    assert message.startswith("job array 77: task 1 failed (FAILED, exit code 3:0) without writing its result")
    assert f"its log {tmp_path / 'task-1.log'} ends: Traceback? no: gpuq: error: \\x1b[31mboom" in message
    assert lab.cancelled


def test_a_task_gone_without_result_or_accounting_fails_after_settling(tmp_path: Path) -> None:
    lab = Lab(tmp_path, 2, fail=frozenset({0}))
    quiet = ScriptedRunner(lambda argv: "" if argv[0] == "sacct" else lab.answer(argv))
    with pytest.raises(Refused, match=r"task 0 failed \(left the queue\).*\(no log file\)"):
        wait_array(quiet, lab.job, lab.done.__contains__, sleep=lab.sleep, clock=lambda: lab.now, poll_s=5)
    assert lab.now >= 15  # it waited for a slow shared file system first


def test_timeout_cancels(tmp_path: Path) -> None:
    lab = Lab(tmp_path, 2)
    lab.queue = [0, 1]
    stuck = ScriptedRunner(lambda argv: "0|PENDING\n1|PENDING\n" if argv[0] == "squeue" else lab.answer(argv))
    with pytest.raises(Unreachable, match=r"job array 77: 2 of 2 tasks not done after 10s .*the array was cancelled"):
        wait_array(stuck, lab.job, lambda t: False, timeout_s=10, poll_s=4, sleep=lab.sleep, clock=lambda: lab.now)
    assert lab.cancelled


def test_ctrl_c_cancels(tmp_path: Path) -> None:
    lab = Lab(tmp_path, 2)

    def interrupt(seconds: float) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        wait_array(ScriptedRunner(lab.answer), lab.job, lambda t: False, sleep=interrupt, clock=lambda: 0.0)
    assert lab.cancelled
