"""On the demo through the CLI: a suspended job keeps its GPUs until `gpuq resume`; bad what-if
previews, a no-op `exempt --off`, a corrupt state file and a full disk end in one clear line."""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from gpuq.backends import demo as demo_module
from tests.cli.conftest import json_doc
from tests.clock import TickingClock

Run = Callable[..., Result]


def _slots(demo: Run, job_id: str) -> set[tuple[str, int]]:
    grid = json_doc(demo("gpus", "-o", "json"))
    return {(node["name"], slot["index"]) for node in grid["nodes"] for slot in node["slots"] if slot["job"] == job_id}


def test_a_suspended_job_keeps_its_gpus_until_resumed(demo: Run) -> None:
    running = [j for j in json_doc(demo("queue", "-o", "json", "--state", "running"))["jobs"] if not j["exempt_until"]]
    job_id = running[0]["id"]
    held = _slots(demo, job_id)
    assert held
    done = demo("preempt", job_id, "--mode", "suspend", "--yes")
    assert done.exit_code == 0, done.output
    assert f"holding its GPUs until `gpuq resume {job_id}`" in done.stdout
    suspended = json_doc(demo("queue", "-o", "json", "--state", "suspended"))["jobs"]
    assert [j["id"] for j in suspended] == [job_id]
    assert {(n, i) for n, idx in suspended[0]["allocation"].items() for i in idx} == held
    assert _slots(demo, job_id) == held  # nobody else got them
    table = demo("gpus")
    assert table.exit_code == 0 and job_id in table.stdout
    assert job_id in demo("queue", "--state", "suspended").stdout
    assert f"suspended, holding its GPUs; `gpuq resume {job_id}` runs it again" in demo("job", job_id).stdout
    # A dry run changes nothing; the resume runs it again on the very same GPUs.
    assert demo("resume", job_id, "--dry-run").exit_code == 0
    assert [j["id"] for j in json_doc(demo("queue", "-o", "json", "--state", "suspended"))["jobs"]] == [job_id]
    resumed = demo("resume", job_id, "--yes")
    assert resumed.exit_code == 0, resumed.output
    assert "state: suspended -> running" in resumed.stdout
    job = json_doc(demo("job", job_id, "-o", "json"))["job"]
    assert job["state"] == "running"
    assert _slots(demo, job_id) == held
    again = demo("resume", job_id, "--yes")
    assert again.exit_code == 1 and f"job {job_id} is running, not suspended: nothing to resume" in again.stderr


def test_suspend_and_resume_keep_the_jobs_start_and_wait(demo: Run, clock: TickingClock) -> None:
    running = [j for j in json_doc(demo("queue", "-o", "json", "--state", "running"))["jobs"] if not j["exempt_until"]]
    job_id = running[0]["id"]
    before = json_doc(demo("job", job_id, "-o", "json"))["job"]
    assert demo("preempt", job_id, "--mode", "suspend", "--yes").exit_code == 0
    clock.start += 2 * 3600 / 0.01  # two simulated hours on the still demo (0.01 simulated s a second)
    # (exempt: a job that has run its minimum runtime may be preempted again as it resumes)
    assert demo("exempt", job_id, "--for", "1h", "--yes").exit_code == 0
    resumed = demo("resume", job_id, "--yes")
    assert resumed.exit_code == 0, resumed.output
    after = json_doc(demo("job", job_id, "-o", "json"))["job"]
    assert after["state"] == "running"
    assert (after["start_time"], after["wait_s"]) == (before["start_time"], before["wait_s"])
    assert 2 * 3600 <= after["suspended_s"] < 2 * 3600 + 60


def test_resume_without_a_terminal_needs_yes(demo: Run) -> None:
    running = json_doc(demo("queue", "-o", "json", "--state", "running"))["jobs"]
    job_id = running[-1]["id"]
    assert demo("preempt", job_id, "--mode", "suspend", "--yes").exit_code == 0
    result = demo("resume", job_id)
    assert result.exit_code == 1 and "pass --yes" in result.stderr
    assert [j["id"] for j in json_doc(demo("queue", "-o", "json", "--state", "suspended"))["jobs"]] == [job_id]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--gpus", "2", "--class", "nosuch"), "--class nosuch: no such class on cluster demo (classes: batch, high,"),
        (("--gpus", "2", "--priority", "-500"), "--priority -500: priority must be an integer from 0 to "),
        (("--gpus", "2", "--urgent", "--priority", "5"), "give --priority or --urgent, not both"),
    ],
)
def test_bad_what_if_previews_are_refused(demo: Run, args: tuple[str, ...], message: str) -> None:
    result = demo("preview", *args)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("gpuq: error: " + message)
    assert len(result.stderr.strip().splitlines()) == 1


def test_exempt_off_on_a_job_that_is_not_exempt_says_so(demo: Run, xdg: dict[str, Path]) -> None:
    job = next(j for j in json_doc(demo("queue", "-o", "json"))["jobs"] if not j["exempt_until"])
    result = demo("exempt", job["id"], "--off")  # no terminal, no --yes: nothing to confirm
    assert result.exit_code == 0, result.output
    assert f"job {job['id']} is not exempt: there was no exemption to lift; nothing changed" in result.stdout
    assert "lifted" not in result.stdout
    log = (xdg["state"] / "gpuq" / "audit.jsonl").read_text().splitlines()
    record = json.loads(log[-1])
    assert (record["action"], record["result"], record["noop"], record["phase"]) == ("exempt", "ok", True, "outcome")


def test_a_corrupt_state_file_is_reported_not_replaced(demo: Run, xdg: dict[str, Path]) -> None:
    path = xdg["state"] / "gpuq" / "demo-demo.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"format": "gpuq.demo-state/v1", "seed": 7, "sim": {"jobs": "truncated')
    result = demo("queue")
    assert result.exit_code == 2
    assert result.stderr.startswith(f"gpuq: error: {path}: cannot use the demo cluster's saved state: not valid JSON")
    assert f"`rm {path}`" in result.stderr and "Traceback" not in result.output
    assert path.read_text().endswith("truncated")


def test_a_full_disk_fails_an_action_cleanly(demo: Run, monkeypatch: pytest.MonkeyPatch, xdg: dict[str, Path]) -> None:
    running = json_doc(demo("queue", "-o", "json", "--state", "running"))["jobs"]
    job_id = running[0]["id"]
    real = os.fsync

    def full(fd: int) -> None:  # the state file's data cannot reach the disk
        if os.readlink(f"/proc/self/fd/{fd}").endswith(".tmp"):
            raise OSError(errno.ENOSPC, "No space left on device")
        real(fd)

    with monkeypatch.context() as patch:  # (undone alone: the XDG dirs stay private)
        patch.setattr(demo_module.os, "fsync", full)
        result = demo("bump", job_id, "--to", "4242", "--yes")
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith(f"gpuq: error: cannot bump job {job_id}: saving the demo cluster's state to ")
    assert "No space left on device" in result.stderr and "nothing was done" in result.stderr
    assert json_doc(demo("job", job_id, "-o", "json"))["job"]["priority"] != 4242
    doc = json_doc(demo("audit", "-o", "json"))
    assert doc["path"] == str(xdg["state"] / "gpuq" / "audit.jsonl")
    last = doc["records"][-1]  # applied? no: the outcome says it failed
    assert (last["action"], last["target"], last["result"], last["exit_code"]) == ("bump", job_id, "error", 1)


def test_the_audit_table_shows_a_no_op_as_such(demo: Run) -> None:
    job = next(j for j in json_doc(demo("queue", "-o", "json"))["jobs"] if not j["exempt_until"])
    assert demo("exempt", job["id"], "--off").exit_code == 0
    table = demo("audit")
    assert table.exit_code == 0
    row = next(line for line in table.stdout.splitlines() if f" {job['id']} " in line)
    assert "exempt" in row and "nothing to change (no-op)" in row
