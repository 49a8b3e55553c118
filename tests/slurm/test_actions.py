"""Slurm actions in two steps against the stand-in CLIs (real 22.05 captures): `apply` runs exactly
the prepared commands, refuses with JobChanged (running nothing) when the job changed since the
plan was prepared, and stays consistent with snapshots taken meanwhile in another thread."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from gpuq.backends.base import ActionPlan, PriorityChange
from gpuq.backends.slurm import SlurmBackend
from gpuq.backends.slurm.history import HistoryCache
from gpuq.backends.slurm.sacct import AcctRecord
from gpuq.errors import BadInput, JobChanged, NotFound, Refused
from gpuq.model import JobState
from gpuq.policy.config import Mode
from tests.slurm import cachefile
from tests.slurm.samples import LIVE, captured_clock, jobs_at_capture, stand_in
from tests.slurm.test_backend_fake_cli import _tool, fake  # noqa: F401 - the stand-in CLIs, by name below

pytestmark = pytest.mark.usefixtures("fake")

#: 2027-01-15T08:00:00Z: after the captures, an exemption's end
UNTIL = 1_800_000_000.0
#: job 69 (pending, priority 5000, QOS low) started since it was read
STARTED = {
    "JobState=PENDING Reason=Resources": "JobState=RUNNING Reason=None",
    "StartTime=2027-11-29T19:20:59": "StartTime=2026-11-29T19:30:00",
    "NodeList= ": "NodeList=gpu2 ",
}


def _calls() -> list[str]:
    return Path(os.environ["FAKE_LOG"]).read_text().splitlines()


def _changes() -> list[str]:
    """The calls that change the cluster."""
    return [c for c in _calls() if any(f" {verb} " in f" {c} " for verb in ("update", "requeue", "suspend", "scancel"))]


def _reset_log() -> None:
    Path(os.environ["FAKE_LOG"]).write_text("")


def _edit(job: str, changes: dict[str, str]) -> None:
    """From now on scontrol shows ``job`` with ``changes`` made to its line (old text -> new)."""
    lines = (LIVE / "scontrol-show-job-d-o.txt").read_text().splitlines()
    for i, line in enumerate(lines):
        if line.startswith(f"JobId={job} "):
            for old, new in changes.items():
                assert old in line, old
                line = line.replace(old, new)
            lines[i] = line
    edited = Path(os.environ["FAKE_LOG"]).with_name("jobs-edited.txt")
    edited.write_text("\n".join(lines) + "\n")
    os.environ["FAKE_JOBS_FILE"] = str(edited)


@pytest.fixture(autouse=True)
def _captured_jobs(monkeypatch: pytest.MonkeyPatch) -> None:
    # Each test starts from the captures; `_edit`'s file is dropped again after it.
    monkeypatch.setenv("FAKE_JOBS_FILE", str(LIVE / "scontrol-show-job-d-o.txt"))


def test_apply_runs_exactly_the_prepared_commands() -> None:
    backend = stand_in()
    plan = backend.prepare_bump("69", PriorityChange(to=9000), reason="t")
    assert plan.guard == {
        "state": "pending",
        "start_time": None,
        "submit_time": plan.guard["submit_time"],
        "restarts": 0,
    }
    assert _changes() == []
    result = backend.apply(plan)
    assert _changes() == [" ".join(plan.commands[0])] == ["scontrol update JobId=69 Priority=9000"]
    assert result.commands == plan.commands
    assert result.before == {"priority": 5000} and plan.after == {"priority": 9000}
    assert result.after == {"priority": 5000}  # the stand-in does not change: reported as read back
    assert result.message == "bumped job 69 to priority 9000 on cluster gpuqlab"
    assert plan.message == "bump job 69 to priority 9000 on cluster gpuqlab"


@pytest.mark.parametrize(
    ("prepare", "job", "changes", "said"),
    [
        pytest.param(
            lambda b: b.prepare_bump("69", PriorityChange(by=100), reason="t"), "69",
            {"Priority=5000 ": "Priority=5001 "}, r"priority 5000 -> 5001\); nothing was done \(Slurm has no relative",
            id="relative-bump-on-another-priority",
        ),
        pytest.param(
            lambda b: b.prepare_bump("69", PriorityChange(to=9000), reason="t"), "69",
            STARTED, r"state pending -> running; run started none -> 2026-11-29T", id="bump-of-a-job-that-started",
        ),
        pytest.param(
            lambda b: b.prepare_exempt("69", UNTIL, reason="t"), "69",
            {"Reason=Resources ": "Reason=Resources AdminComment=site-note "}, r"AdminComment '' -> 'site-note'",
            id="exempt-over-a-new-admin-comment",
        ),
        pytest.param(
            lambda b: b.prepare_bump("69", PriorityChange(urgent=True), reason="t"), "69",
            {"QOS=low ": "QOS=normal "}, r"QOS low -> normal", id="urgent-qos-of-a-job-moved-since",
        ),
        pytest.param(
            lambda b: b.prepare_preempt("73", Mode.REQUEUE, reason="t"), "73",
            {"Restarts=0 ": "Restarts=1 ", "StartTime=2026-11-29T19:20:59 ": "StartTime=2026-11-29T19:40:00 "},
            r"run started 2026-11-29T\S+ -> 2026-11-29T\S+; restarts 0 -> 1", id="preempt-of-another-run",
        ),
        pytest.param(
            lambda b: b.prepare_preempt("73", Mode.GRACEFUL, reason="t"), "73",
            {"Reason=None ": "Reason=None AdminComment=gpuq:exempt-until=2027-01-15T08:00:00Z "},
            r"exempt until none -> 2027-01-15T08:00:00Z", id="preempt-of-a-job-exempted-since",
        ),
    ],
)  # fmt: skip
def test_the_guard_refuses_a_job_that_changed(
    prepare: Callable[[SlurmBackend], ActionPlan], job: str, changes: dict[str, str], said: str
) -> None:
    backend = stand_in(urgent_qos="urgent", exempt_qos="exempt")
    plan = prepare(backend)
    _edit(job, changes)
    with pytest.raises(JobChanged, match=rf"^job {job} changed since the {plan.action} was prepared \(.*{said}") as err:
        backend.apply(plan)
    assert str(err.value).endswith("look again and retry")
    assert isinstance(err.value, Refused) and err.value.exit_code == 1
    assert _changes() == []  # nothing was done


def test_an_absolute_bump_still_applies_on_a_new_priority() -> None:
    backend = stand_in()
    plan = backend.prepare_bump("69", PriorityChange(to=9000), reason="t")
    assert "priority" not in plan.guard
    _edit("69", {"Priority=5000 ": "Priority=5001 "})
    result = backend.apply(plan)
    assert _changes() == ["scontrol update JobId=69 Priority=9000"]
    assert result.after == {"priority": 5001}


def test_a_relative_bump_is_fixed_when_prepared() -> None:
    backend = stand_in()
    plan = backend.prepare_bump("69", PriorityChange(by=-4999), reason="t")
    assert plan.commands == (("scontrol", "update", "JobId=69", "Priority=1"),)
    assert plan.guard["priority"] == 5000 and plan.message.startswith("bump job 69 to priority 1 (5000 -4999)")
    with pytest.raises(Refused, match="priority 0 would hold job 69"):
        backend.prepare_bump("69", PriorityChange(by=-5000), reason="t")
    with pytest.raises(BadInput, match=r"priority 4294967294 is above the highest Slurm accepts \(4294967293\)"):
        backend.prepare_bump("69", PriorityChange(to=4294967294), reason="t")
    top = backend.prepare_bump("69", PriorityChange(by=4294967293 - 5000), reason="t")
    assert top.after == {"priority": 4294967293}


def test_a_job_gone_since_is_not_found_and_nothing_runs() -> None:
    backend = stand_in()
    plan = backend.prepare_preempt("73", Mode.CANCEL, reason="t")
    _edit("73", {"JobId=73 ": "JobId=7300 "})
    with pytest.raises(NotFound, match="no job 73"):
        backend.apply(plan)
    assert _changes() == []


def test_a_plan_this_backend_did_not_prepare_is_refused() -> None:
    plan = stand_in().prepare_bump("69", PriorityChange(to=9000), reason="t")
    with pytest.raises(Refused, match="was not prepared by this Slurm backend"):
        stand_in().apply(plan)
    forged = ActionPlan("bump", "69", {}, {}, (("scancel", "69"),))
    with pytest.raises(Refused, match="was not prepared by this Slurm backend"):
        stand_in().apply(forged)
    assert _changes() == []


def test_typed_native_victims_from_a_snapshot() -> None:
    from gpuq.backends.base import NativeVictim
    from gpuq.model import PreviewRequest

    backend = stand_in()
    snap = backend.snapshot()
    plan = backend.native_preview(snap, PreviewRequest(gpus=4, hints={"qos": "urgent"}))
    assert plan is not None
    for victim in plan.victims:
        assert isinstance(victim, NativeVictim) and isinstance(victim.nodes, tuple)
        assert victim.reason.startswith(f"QOS urgent may preempt {victim.details['qos']}; PreemptMode=")
        doc = victim.to_dict()
        assert "node" not in doc and doc["nodes"] == list(victim.nodes)
        assert set(doc) == {"id", "nodes", "gpus", "priority", "reason", "qos", "partition", "mode"}


# ---------------------------------------------------------------- snapshots beside actions


def test_snapshots_in_a_thread_while_actions_are_applied() -> None:
    """The service's console refreshes in a worker thread while an action is applied: every
    snapshot is whole, every action applies, the disk cache stays a whole file."""
    reference = stand_in(persist=False).snapshot()
    # TTLs of 0: every snapshot reads the config, the sacct window and the queue, and saves.
    backend = stand_in(history_ttl_s=0, config_ttl_s=0, timeout_s=2.0, urgent_qos="urgent", exempt_qos="exempt")
    errors: list[BaseException] = []
    snaps = []
    stop = threading.Event()

    def refresh() -> None:
        try:
            while not stop.is_set():
                snaps.append(backend.snapshot(ledger=len(snaps) % 2 == 0))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    reader = threading.Thread(target=refresh)
    reader.start()
    try:
        for _ in range(3):
            backend.apply(backend.prepare_bump("69", PriorityChange(to=9000), reason="t"))
            backend.apply(backend.prepare_exempt("69", UNTIL, reason="t"))
        backend.apply(backend.prepare_preempt("73", Mode.SUSPEND, reason="t"))
        while len(snaps) < 3 and not errors:
            time.sleep(0.05)
    finally:
        stop.set()
        reader.join(timeout=60)
    assert not errors, errors
    assert len(_changes()) == 7
    by_id = jobs_at_capture(reference)
    for snap in snaps:
        assert jobs_at_capture(snap) == by_id
        assert snap.classes == reference.classes and snap.nodes == reference.nodes
    data = cachefile.read()
    assert {"config", "history", "queue"} <= set(data)
    assert sorted(data["queue"]["held"]) == sorted(backend.queue_reader.saved_part()["held"])  # type: ignore[index]


def test_an_action_during_a_sacct_read_is_not_hidden_by_the_ttl(tmp_path: Path) -> None:
    """A snapshot's sacct read that started before an action must not mark the window fresh after
    the action expired it: the next snapshot asks sacct for what the action did."""
    started, go = tmp_path / "sacct-started", tmp_path / "sacct-go"
    _tool(
        Path(os.environ["PATH"].split(os.pathsep)[0]),  # the stand-ins' directory
        "sacct",
        f'#!/bin/bash\necho "sacct $*" >> "$FAKE_LOG"\ntouch {started}\n'
        f"for i in $(seq 200); do [ -e {go} ] && break; sleep 0.05; done\ncat {LIVE}/sacct-parsable.txt\n",
    )
    backend = stand_in(history_ttl_s=3600)
    reader = threading.Thread(target=backend.snapshot)
    reader.start()
    deadline = time.monotonic() + 10
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert started.exists(), _calls()
    backend.apply(backend.prepare_bump("69", PriorityChange(to=9000), reason="t"))  # expires the window
    go.touch()
    reader.join(timeout=30)
    _reset_log()
    backend.snapshot()
    assert sum(c.startswith("sacct ") for c in _calls()) == 1  # within the TTL, and still asked
    assert cachefile.read()["history"]["fresh_at"] is not None
    _reset_log()
    stand_in(history_ttl_s=3600).snapshot()  # the next invocation: fresh again, not asked
    assert sum(c.startswith("sacct ") for c in _calls()) == 0


def _rec(job: str, end: float | None) -> AcctRecord:
    return AcctRecord(job, job, "n", "u", "a", "p", "q", 1, JobState.COMPLETED, "COMPLETED", 1.0, 2.0, 3.0, end, 1)


def test_history_cache_expired_during_a_read_stays_expired() -> None:
    now = captured_clock()
    cache = HistoryCache(3600, ttl_s=600)

    def fetch(_start: float) -> list[AcctRecord]:
        cache.expire()  # an action, in another thread, while sacct runs
        return [_rec("1", now - 10)]

    assert [r.id for r in cache.refresh(now, fetch)] == ["1"]
    assert cache.fresh_at is None and cache.due(now + 1)
    assert cache.refresh(now + 1, lambda _s: [_rec("2", now)]) and not cache.due(now + 2)
