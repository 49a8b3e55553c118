"""Revalidating the Slurm backend's slowly changing reads instead of re-reading them through
slurmdbd: the preemption config against slurmctld's QOS cache (a fingerprint), and the sacct
window against the queue's restart counts (a due sacct read is stopped when the queue shows
nothing it would change). Stand-in CLIs replaying real 22.05 output; the lab test covers the real
thing (test_lab_6_revalidation.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from gpuq.backends.base import PriorityChange
from gpuq.backends.slurm import SlurmBackend
from gpuq.backends.slurm.config import assoc_mgr_qos_digest
from gpuq.backends.slurm.history import OVERLAP_S, HistoryCache
from gpuq.backends.slurm.runner import Cancelled, CancelToken, Runner
from gpuq.backends.slurm.values import text_time
from gpuq.errors import BadInput
from gpuq.model import Job, JobState, PreviewRequest, Snapshot, from_epoch
from gpuq.policy.config import Mode
from tests.clock import real_time
from tests.factories import make_job
from tests.slurm import cachefile
from tests.slurm.samples import LIVE
from tests.slurm.test_backend_fake_cli import _tool, fake  # noqa: F401 - the stand-in CLIs, by name below

DELIM = "\x1f"
#: the captured queue (squeue-format-extended.txt): its first SubmitTime, moved to 3 h ago
CAPTURED_T0 = text_time("2026-11-29T19:38:36") or 0.0
BASE = float(int(real_time() - 3 * 3600))
SHIFT = BASE - CAPTURED_T0


def revalidation_backend(**options: Any) -> SlurmBackend:
    """The backend on the real wall clock: the stand's times are relative to it, as they must be
    for the tests that run gpuq in a fresh process (which reads the real clock)."""
    return SlurmBackend(clock=real_time, **options)


# Stand-ins that serve what each test writes; everything else goes to the captures' stand-ins.
SCONTROL = """#!/bin/bash
case "$1 $2" in
  "show assoc_mgr") echo "scontrol $*" >> "$FAKE_LOG"; cat "$FAKE_ASSOC_FILE"; exit ;;
  "show partition")
    if [ -n "${FAKE_PARTS_FILE:-}" ]; then echo "scontrol $*" >> "$FAKE_LOG"; cat "$FAKE_PARTS_FILE"; exit; fi ;;
  "show job")
    if [ -n "$5" ]; then echo "scontrol $*" >> "$FAKE_LOG"
      grep "^JobId=$5 " "$FAKE_DETAIL_FILE" || { echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1; }
      exit; fi ;;
esac
exec "$(dirname "$0")/scontrol-orig" "$@"
"""
# FAKE_SQUEUE_AFTER_SACCT=n: squeue answers only once sacct has started more than n times (at most
# 10 s), so a test of the stopped read knows sacct was running when it was stopped.
SQUEUE = """#!/bin/bash
echo "squeue $*" >> "$FAKE_LOG"
if [ -n "${FAKE_SQUEUE_AFTER_SACCT:-}" ]; then
  for _ in $(seq 100); do
    [ "$(cat "$FAKE_SACCT_PIDS" 2>/dev/null | wc -l)" -gt "$FAKE_SQUEUE_AFTER_SACCT" ] && break
    sleep 0.1
  done
fi
cat "$FAKE_SQUEUE_FILE"
"""
SACCT = """#!/bin/bash
echo "sacct $*" >> "$FAKE_LOG"
echo $$ >> "$FAKE_SACCT_PIDS"
sleep "${FAKE_SACCT_SLEEP:-0}"
cat "$FAKE_SACCT_FILE"
echo "sacct done" >> "$FAKE_LOG"
"""

# sacct rows (QOSRAW: low=2, exempt=4) matching the captured queue: 9680_1 (raw 9683) was requeued
# once (RestartCnt 1 in squeue); its first run ended 4 s after it started.
_ROWS = [
    ("9681", "9681", "pend", "ops", "4", "PENDING", 0, 0, None, None, "None assigned", "", "gres/gpu=4"),
    ("9680_1", "9683", "sw", "research", "2", "REQUEUED", 0, 0, 1, 4, "gpu2", "gres/gpu=1", "gres/gpu=1"),
    ("9680_1", "9683", "sw", "research", "2", "PENDING", 7, 128, None, None, "None assigned", "", "gres/gpu=1"),
    ("9679", "9679", "big|one", "research", "2", "RUNNING", 0, 0, 1, None, "gpu1", "gres/gpu=2", "gres/gpu=2"),
    ("9680_0", "9682", "sw", "research", "2", "RUNNING", 0, 0, 1, None, "gpu1", "gres/gpu=1", "gres/gpu=1"),
    ("9680_2", "9680", "sw", "research", "2", "RUNNING", 0, 0, 1, None, "gpu2", "gres/gpu=1", "gres/gpu=1"),
]


def _stamp(t: float | None) -> str:
    return "Unknown" if t is None else datetime.fromtimestamp(t).strftime("%Y-%m-%dT%H:%M:%S")


def _sacct_text(rows: list[tuple[Any, ...]]) -> str:
    lines = []
    for jid, raw, name, account, qos, state, submit, eligible, start, end, nodes, alloc, req in rows:
        times = [_stamp(BASE + submit), _stamp(BASE + eligible)]
        times += [_stamp(None if start is None else BASE + start), _stamp(None if end is None else BASE + end)]
        fields = [jid, raw, name, "root", account, "gpu", qos, "2000", state, "None", *times, nodes, alloc, req]
        lines.append("|".join(fields))
    return "\n".join(lines) + "\n"


def _squeue_text(changes: dict[str, dict[int, str]] | None = None) -> str:
    """The captured extended squeue output, its times moved to now - 3 h; ``changes``: by raw job
    id, field index -> new text (11 State, 13 SubmitTime, 24 RestartCnt)."""
    out = []
    for line in (LIVE / "squeue-format-extended.txt").read_text().splitlines():
        f = line.split(DELIM)
        for i in (13, 14, 15):
            t = text_time(f[i])
            if t is not None:
                f[i] = _stamp(t + SHIFT)
        for i, value in (changes or {}).get(f[0], {}).items():
            f[i] = value
        out.append(DELIM.join(f))
    return "\n".join(out) + "\n"


def _detail_text() -> str:
    """The captured details of the captured queue's jobs, StartTimes moved like squeue's."""
    out = []
    for line in (LIVE / "scontrol-show-job-d-o-extended.txt").read_text().splitlines():
        if line.startswith(("JobId=9679 ", "JobId=9680 ", "JobId=9681 ", "JobId=9682 ", "JobId=9683 ")):
            for key in ("SubmitTime=", "EligibleTime=", "StartTime="):
                value = line.split(" " + key, 1)[1].split(" ", 1)[0]
                t = text_time(value)
                if t is not None:
                    line = line.replace(f" {key}{value}", f" {key}{_stamp(t + SHIFT)}")
            out.append(line)
    return "\n".join(out) + "\n"


class Stand:
    """The stand-in cluster of one test: files the stand-ins serve, the calls they logged."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.squeue(_squeue_text())
        self.sacct(_ROWS)
        self.assoc((LIVE / "scontrol-show-assoc_mgr-qos.txt").read_text())
        (root / "detail.txt").write_text(_detail_text())

    def squeue(self, text: str) -> None:
        (self.root / "squeue.txt").write_text(text)

    def sacct(self, rows: list[tuple[Any, ...]], sleep: float = 0.0) -> None:
        (self.root / "sacct.txt").write_text(_sacct_text(rows))
        os.environ["FAKE_SACCT_SLEEP"] = str(sleep)

    def assoc(self, text: str) -> None:
        (self.root / "assoc.txt").write_text(text)

    def calls(self, prefix: str = "") -> list[str]:
        return [c for c in Path(os.environ["FAKE_LOG"]).read_text().splitlines() if c.startswith(prefix)]

    def reset_log(self) -> None:
        Path(os.environ["FAKE_LOG"]).write_text("")

    def sacct_pids(self) -> list[int]:
        path = self.root / "sacct-pids"
        return [int(p) for p in path.read_text().split()] if path.exists() else []

    # -- the disk cache, as a later invocation finds it
    def cache(self) -> dict[str, Any]:
        return cachefile.read()

    def age(self, *, config: float = 0.0, history: float = 0.0) -> None:
        """Move the cache's config and/or sacct read ``config``/``history`` seconds into the past."""
        cachefile.age(config=config, history=history)

    def later(self, *, config: float = 0.0, **backend: Any) -> tuple[SlurmBackend, Snapshot]:
        """A later invocation: the config read ``config`` seconds older, the call log emptied, a
        new backend (``backend``: its settings) and its snapshot."""
        self.age(config=config)
        self.reset_log()
        fresh = revalidation_backend(**backend)
        return fresh, fresh.snapshot()


@pytest.fixture
def stand(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Stand:
    bindir: Path = request.getfixturevalue("fake")  # the capture-replaying stand-ins
    (bindir / "scontrol").rename(bindir / "scontrol-orig")
    _tool(bindir, "scontrol", SCONTROL)
    _tool(bindir, "squeue", SQUEUE)
    _tool(bindir, "sacct", SACCT)
    root = tmp_path / "stand"
    root.mkdir()
    for name, file in (
        ("FAKE_SQUEUE_FILE", "squeue.txt"),
        ("FAKE_SACCT_FILE", "sacct.txt"),
        ("FAKE_ASSOC_FILE", "assoc.txt"),
        ("FAKE_DETAIL_FILE", "detail.txt"),
        ("FAKE_SACCT_PIDS", "sacct-pids"),
    ):
        monkeypatch.setenv(name, str(root / file))
    monkeypatch.setenv("FAKE_SACCT_SLEEP", "0")
    return Stand(root)


def _alive(pid: int) -> bool:
    """Whether the process exists at all (a zombie, not yet reaped, counts as existing)."""
    return Path(f"/proc/{pid}").exists()


# ---------------------------------------------------------------- A: the preemption config


def test_digest_of_the_captured_qos_cache() -> None:
    text = (LIVE / "scontrol-show-assoc_mgr-qos.txt").read_text()
    digest = assoc_mgr_qos_digest(text)
    assert digest[0] == "exempt(4) Priority=10 PreemptMode=REQUEUE"
    assert "urgent(5) Priority=1000 PreemptMode=REQUEUE" in digest
    assert len(digest) == 5
    # Usage counters change with every job; the digest does not.
    busier = text.replace("UsageRaw=", "UsageRaw=9").replace("GrpJobs=N(0)", "GrpJobs=N(7)")
    assert assoc_mgr_qos_digest(busier) == digest
    # The one-line form (-o) gives the same.
    one_line = "QOS=low(2) UsageRaw=1.0 GrpJobs=N(0) PreemptMode=REQUEUE Priority=10\n"
    assert assoc_mgr_qos_digest(one_line) == ["low(2) Priority=10 PreemptMode=REQUEUE"]
    assert assoc_mgr_qos_digest("No QOS currently cached in Slurm.\n") == []
    with pytest.raises(ValueError, match="unexpected QOS record head"):
        assoc_mgr_qos_digest("QOS=broken\n")


def test_unchanged_fingerprint_keeps_the_qos_table_without_sacctmgr(stand: Stand) -> None:
    first = revalidation_backend().snapshot()
    assert len(stand.calls("sacctmgr ")) == 1
    read_at = stand.cache()["config"]["read_at"]
    backend, snap = stand.later(config=90)  # past config_ttl_s (60 s), well within config_max_age_s (600 s)
    assert backend.config_check == "kept"
    assert not stand.calls("sacctmgr "), stand.calls()
    # ... checked against slurmctld's own reads instead.
    for prefix in ("scontrol show config", "scontrol show partition", "scontrol show assoc_mgr"):
        assert stand.calls(prefix), prefix
    assert len(stand.calls("scontrol show assoc_mgr")) == 1  # one read serves sacct's QOS names too
    assert snap.classes == first.classes
    config = stand.cache()["config"]
    assert config["read_at"] == read_at - 90  # the table's age keeps counting
    assert config["checked_at"] > real_time() - 5  # the TTL starts again
    stand.reset_log()
    revalidation_backend().snapshot()
    assert not stand.calls("scontrol show config") and not stand.calls("sacctmgr ")  # within the TTL again


@pytest.mark.parametrize(
    "change",
    [
        lambda t: t.replace("    Priority=10\n", "    Priority=11\n", 1),  # low's (the first Priority=10)
        lambda t: t.replace("    PreemptMode=REQUEUE\n", "    PreemptMode=CANCEL\n", 1),
        lambda t: t.replace("QOS=exempt(4)", "QOS=exempt2(6)"),
        lambda t: t + "QOS=new(7)\n    PreemptMode=OFF\n    Priority=5\n",
    ],
    ids=["priority", "preempt-mode", "renamed", "added"],
)
def test_changed_fingerprint_reads_sacctmgr(stand: Stand, change: Any) -> None:
    revalidation_backend().snapshot()
    text = (LIVE / "scontrol-show-assoc_mgr-qos.txt").read_text()
    changed = change(text)
    assert changed != text
    stand.assoc(changed)
    backend, _ = stand.later(config=90)
    assert backend.config_check == "read"
    assert len(stand.calls("sacctmgr ")) == 1


def test_changed_partitions_read_sacctmgr(stand: Stand, monkeypatch: pytest.MonkeyPatch) -> None:
    revalidation_backend().snapshot()
    parts = (LIVE / "scontrol-show-partition-o.txt").read_text().replace("PriorityTier=1 ", "PriorityTier=2 ", 1)
    (stand.root / "parts.txt").write_text(parts)
    monkeypatch.setenv("FAKE_PARTS_FILE", str(stand.root / "parts.txt"))
    backend, _ = stand.later(config=90)
    assert backend.config_check == "read" and len(stand.calls("sacctmgr ")) == 1


def test_past_config_max_age_reads_sacctmgr(stand: Stand) -> None:
    revalidation_backend().snapshot()
    backend, _ = stand.later(config=601)
    assert backend.config_check == "read" and len(stand.calls("sacctmgr ")) == 1
    # config_max_age_s=0: never kept, every check past the TTL reads sacctmgr (the old behaviour).
    strict, _ = stand.later(config=90, config_max_age_s=0)
    assert strict.config_check == "read" and len(stand.calls("sacctmgr ")) == 1


def test_no_qos_in_slurmctlds_cache_means_no_fingerprint(stand: Stand) -> None:
    stand.assoc("")  # slurmctld shows no QOS while slurmdbd has five: nothing to check against
    revalidation_backend().snapshot()
    assert stand.cache()["config"]["fingerprint"] is None
    backend, _ = stand.later(config=90)
    assert backend.config_check == "read" and len(stand.calls("sacctmgr ")) == 1


def test_qos_cache_disagreeing_with_sacctmgr_is_not_used(stand: Stand) -> None:
    text = (LIVE / "scontrol-show-assoc_mgr-qos.txt").read_text()
    stand.assoc(text.split("QOS=urgent(5)")[0])  # slurmctld misses a QOS sacctmgr lists
    revalidation_backend().snapshot()
    assert stand.cache()["config"]["fingerprint"] is None


def test_preview_and_actions_read_the_config_fresh(stand: Stand) -> None:
    backend = revalidation_backend(urgent_qos="urgent", exempt_qos="exempt")
    revalidation_backend().snapshot()
    stand.age(config=90)
    snap = backend.snapshot()
    assert backend.config_check == "kept"
    stand.reset_log()
    # The prediction needs the Preempt lists a kept table may not have seen change: sacctmgr now.
    backend.native_preview(snap, PreviewRequest(gpus=1, hints={"qos": "urgent"}))
    assert len(stand.calls("sacctmgr ")) == 1
    # A second prediction on the same snapshot uses that read (made after the snapshot was taken).
    backend.native_preview(snap, PreviewRequest(gpus=2, hints={"qos": "urgent"}))
    assert len(stand.calls("sacctmgr ")) == 1
    # A later snapshot within the TTL still gets a fresh read for its prediction.
    later = backend.snapshot()
    stand.reset_log()
    backend.native_preview(later, PreviewRequest(gpus=1, hints={"qos": "urgent"}))
    assert len(stand.calls("sacctmgr ")) == 1
    # Every action reads it afresh when it is prepared (a dry run is a prepared plan), whatever is cached.
    for act in (
        lambda: backend.prepare_bump("9681", PriorityChange(to=9000), reason="t"),
        lambda: backend.prepare_exempt("9681", None, reason="t"),
        lambda: backend.prepare_preempt("9679", Mode.REQUEUE, reason="t"),
    ):
        stand.reset_log()
        act()
        assert len(stand.calls("sacctmgr ")) == 1, stand.calls()


@pytest.mark.parametrize("kwargs", [{"config_max_age_s": -1}, {"history_max_age_s": "300"}, {"config_max_age_s": True}])
def test_bad_max_ages_are_usage_errors(kwargs: dict[str, Any]) -> None:
    with pytest.raises(BadInput, match=r"_max_age_s must be a number of seconds, 0 or more"):
        revalidation_backend(**kwargs)


# ---------------------------------------------------------------- B: the sacct window


def _warm(stand: Stand) -> dict[str, Any]:
    """A first invocation (full sacct read, its restart counts recorded); then the cached read is
    made 60 s old (past history_ttl_s) and the next sacct sleeps 5 s: waiting for it shows."""
    first = revalidation_backend().snapshot(ledger=False)
    job = first.job("9680_1")
    assert job is not None and job.preemption_times == (from_epoch(BASE + 4),) and job.submit_time == from_epoch(BASE)
    assert stand.cache()["history"]["accounted"]["restarts"] == {"9680_1": 1}
    stand.age(history=60)
    stand.sacct(_ROWS, sleep=5)
    stand.reset_log()
    return stand.cache()["history"]


def _timed(backend: SlurmBackend, *, ledger: bool) -> tuple[float, Any]:
    started = time.monotonic()
    snap = backend.snapshot(ledger=ledger)
    return time.monotonic() - started, snap


def test_unchanged_queue_does_not_wait_for_sacct(
    stand: Stand, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    before = _warm(stand)
    # squeue answers once the due sacct has started (on a loaded machine it could otherwise be
    # stopped before its first line ran, or never started), so the stop below is of a running sacct.
    monkeypatch.setenv("FAKE_SQUEUE_AFTER_SACCT", str(len(stand.sacct_pids())))
    backend = revalidation_backend()
    took, snap = _timed(backend, ledger=False)
    assert took < 3, took  # not the 5 s sacct
    assert backend.history_skipped and backend.history_wait == ""
    # sacct was started beside squeue, then stopped: killed and reaped (no zombie), no output kept.
    assert stand.calls("sacct -n"), stand.calls()
    assert not stand.calls("sacct done")
    (pid,) = stand.sacct_pids()[-1:]
    assert not _alive(pid)
    # The cached records stood in; the cache's window did not move, in memory or on disk.
    job = snap.job("9680_1")
    assert job is not None and job.preemption_times == (from_epoch(BASE + 4),) and job.submit_time == from_epoch(BASE)
    assert backend.history_cache.read_until == before["read_until"]
    assert backend.history_cache.reads == 0
    assert stand.cache()["history"] == before
    assert capfd.readouterr().err == ""  # no traceback, no warning


def test_restart_count_increase_waits(stand: Stand) -> None:
    _warm(stand)
    stand.sacct(_ROWS, sleep=0.3)
    stand.squeue(_squeue_text({"9679": {11: "PENDING", 24: "1"}}))  # requeued since the cached read
    backend = revalidation_backend()
    snap = backend.snapshot(ledger=False)
    assert not backend.history_skipped
    assert "job 9679 has RestartCnt 1" in backend.history_wait
    assert stand.calls("sacct done") and backend.history_cache.reads == 1
    assert snap.job("9679") is not None


def test_restart_count_of_a_job_new_to_the_queue_waits(stand: Stand) -> None:
    _warm(stand)
    stand.sacct(_ROWS, sleep=0.3)
    # 9681 requeued from... a count the cached read never saw: a job new to the queue counts as 0.
    stand.squeue(_squeue_text({"9681": {24: "2"}}))
    backend = revalidation_backend()
    backend.snapshot(ledger=False)
    assert not backend.history_skipped and "job 9681 has RestartCnt 2" in backend.history_wait


@pytest.mark.parametrize(("state", "why"), [("SUSPENDED", "is suspended"), ("COMPLETING", "is completing")])
def test_newly_suspended_or_completing_job_waits(stand: Stand, state: str, why: str) -> None:
    _warm(stand)
    stand.sacct(_ROWS, sleep=0.3)
    stand.squeue(_squeue_text({"9679": {11: state}}))
    backend = revalidation_backend()
    backend.snapshot(ledger=False)
    assert not backend.history_skipped
    assert f"job 9679 {why}" in backend.history_wait
    assert backend.history_cache.reads == 1


def test_suspended_job_the_cached_read_shows_suspended_does_not_wait(stand: Stand) -> None:
    rows = [r if r[0] != "9679" else (*r[:5], "SUSPENDED", *r[6:]) for r in _ROWS]
    stand.sacct(rows)
    stand.squeue(_squeue_text({"9679": {11: "SUSPENDED"}}))
    revalidation_backend().snapshot(ledger=False)
    stand.age(history=60)
    stand.sacct(rows, sleep=5)
    backend = revalidation_backend()
    took, _snap = _timed(backend, ledger=False)
    assert backend.history_skipped and took < 3


def test_ledger_true_waits(stand: Stand) -> None:
    _warm(stand)
    stand.sacct(_ROWS, sleep=0.3)
    backend = revalidation_backend()
    backend.snapshot()  # ledger=True is the default
    assert not backend.history_skipped and backend.history_wait == "the caller needs the ledger"
    assert backend.history_cache.reads == 1
    # That read advanced the window and recorded what it accounts for.
    hist = stand.cache()["history"]
    assert hist["accounted"]["at"] == hist["read_until"] > real_time() - 5


def test_past_history_max_age_waits(stand: Stand) -> None:
    _warm(stand)
    stand.sacct(_ROWS, sleep=0.3)
    stand.age(history=250)  # 310 s old now: past history_max_age_s (300 s)
    backend = revalidation_backend()
    backend.snapshot(ledger=False)
    assert not backend.history_skipped and "history_max_age_s=300" in backend.history_wait
    stand.age(history=60)
    strict = revalidation_backend(history_max_age_s=0)
    strict.snapshot(ledger=False)
    assert not strict.history_skipped and "history_max_age_s=0" in strict.history_wait


def test_a_requeue_slurmdbd_had_not_recorded_waits_until_it_has(stand: Stand) -> None:
    """slurmdbd lag: squeue already shows the requeue (RestartCnt 1, SubmitTime reset a minute ago)
    but the sacct read beside it has no ended run yet. That read accounts for 0 restarts, so the
    next queue read waits for sacct; once sacct holds the run, the count is accounted for."""
    recent = _stamp(real_time() - 60)
    stand.squeue(_squeue_text({"9683": {13: recent, 14: recent}}))
    lagging = [r for r in _ROWS if r[5] != "REQUEUED"]
    stand.sacct(lagging)
    revalidation_backend().snapshot(ledger=False)
    assert stand.cache()["history"]["accounted"]["restarts"] == {}
    stand.age(history=20)
    stand.sacct(_ROWS, sleep=0.3)  # slurmdbd has it now
    backend = revalidation_backend()
    snap = backend.snapshot(ledger=False)
    assert not backend.history_skipped and "job 9680_1 has RestartCnt 1" in backend.history_wait
    job = snap.job("9680_1")
    assert job is not None and job.preemption_times == (from_epoch(BASE + 4),)
    assert stand.cache()["history"]["accounted"]["restarts"] == {"9680_1": 1}
    stand.age(history=20)
    stand.sacct(_ROWS, sleep=5)
    again = revalidation_backend()
    took, _snap = _timed(again, ledger=False)
    assert again.history_skipped and took < 3


def test_an_old_requeue_outside_the_window_is_accounted_for(stand: Stand) -> None:
    """A job requeued long ago (SubmitTime reset 3 h back) whose ended runs the read does not hold
    (say, older than the window): nothing a new read could add, so it does not force waits."""
    stand.sacct([r for r in _ROWS if r[5] != "REQUEUED"])
    revalidation_backend().snapshot(ledger=False)
    assert stand.cache()["history"]["accounted"]["restarts"] == {"9680_1": 1}


def test_action_expiry_makes_the_next_read_wait(stand: Stand) -> None:
    _warm(stand)
    stand.sacct(_ROWS, sleep=0.3)
    backend = revalidation_backend()
    backend.expire_history()  # what every applied action does
    backend.snapshot(ledger=False)
    assert not backend.history_skipped and "an action" in backend.history_wait


def _gpuq(*args: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    """``gpuq --backend slurm ARGS`` in a fresh process, as an operator runs it; (seconds, result)."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    argv = [sys.executable, "-m", "gpuq", "--backend", "slurm", *args]
    started = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60, check=False)  # noqa: S603
    return time.monotonic() - started, proc


def test_queue_command_skips_and_preemptions_command_waits(stand: Stand) -> None:
    """The CLI's call sites, end to end in fresh processes as an operator runs them."""
    _warm(stand)
    took, proc = _gpuq("queue", "-o", "json")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert took < 4, took
    rows = {j["id"]: j for j in json.loads(proc.stdout)["jobs"]}
    assert rows["9680_1"]["preemptions"] == 1
    assert not stand.calls("sacct done")
    took, proc = _gpuq("gpus", "-o", "json")
    assert proc.returncode == 0 and took < 4
    took, proc = _gpuq("queue", "--state", "all", "-o", "json")  # finished jobs: the ledger is needed
    assert proc.returncode == 0 and took > 5
    stand.age(history=60)
    took, proc = _gpuq("preemptions", "-o", "json")
    assert proc.returncode == 0 and took > 5


def test_job_command_reads_the_ledger_for_a_job_not_in_the_queue(stand: Stand) -> None:
    _warm(stand)
    took, proc = _gpuq("job", "9679", "-o", "json")
    assert proc.returncode == 0 and took < 4, proc.stderr
    took, proc = _gpuq("job", "424242", "-o", "json")
    assert proc.returncode != 0 and "no job 424242" in proc.stderr
    assert took > 5  # not in the queue: looked up again with the ledger, sacct waited for


# ---------------------------------------------------------------- the pieces


def test_cancel_token_stops_a_running_command_and_reaps_it(tmp_path: Path) -> None:
    script = tmp_path / "slow"
    script.write_text(f"#!/bin/bash\necho $$ > {tmp_path}/pid\nsleep 30\necho late\n")
    script.chmod(0o755)
    runner = Runner(timeout_s=60)
    token = CancelToken()
    timer = threading.Timer(0.3, token.cancel)
    timer.start()
    started = time.monotonic()
    with pytest.raises(Cancelled):
        runner.run([str(script)], cancel=token)
    assert time.monotonic() - started < 5
    timer.join()
    assert not _alive(int((tmp_path / "pid").read_text()))
    # Cancelled before it starts: it never runs.
    (tmp_path / "pid").unlink()
    with pytest.raises(Cancelled):
        runner.run([str(script)], cancel=token)
    assert not (tmp_path / "pid").exists()


def test_cancellable_run_maps_errors_and_returns_output_like_run(tmp_path: Path) -> None:
    runner = Runner(timeout_s=0.5)
    assert runner.run(["echo", "hi"], cancel=CancelToken()) == "hi\n"
    from gpuq.errors import Unreachable

    with pytest.raises(Unreachable, match="did not answer within 0.5s"):
        runner.run(["sleep", "5"], cancel=CancelToken())
    with pytest.raises(Unreachable, match="not found"):
        runner.run([str(tmp_path / "no-such-command")], cancel=CancelToken())


def _job(jid: str, state: JobState, submit: float) -> Job:
    return make_job(jid, "n", "u", "t", "low", 1, state, submit, 1)


def test_history_cache_keeps_what_it_accounts_for_on_disk() -> None:
    cache = HistoryCache(86400.0, 15.0)
    now = real_time()
    cache.refresh(now, lambda _start: [])
    cache.note_queue([_job("1", JobState.PENDING, now - 2 * OVERLAP_S), _job("2", JobState.COMPLETING, now - 7200)],
                     {"1": 2, "2": 1})  # fmt: skip
    # 1: requeued long before the read; 2: mid-requeue (COMPLETING: SubmitTime not reset yet)
    assert cache.accounted == {"1": 2}
    again = HistoryCache(86400.0, 15.0)
    assert again.load_json(json.loads(json.dumps(cache.to_json())))
    assert again.accounted == {"1": 2} and again.accounted_at == cache.read_until
    assert again.stand_in_reason([], {"1": 2}, now + 20, 300.0) is None
    assert "RestartCnt 3" in (again.stand_in_reason([], {"1": 3}, now + 20, 300.0) or "")
    broken = cache.to_json()
    broken["accounted"] = {"at": "yesterday", "restarts": {"1": 2}}
    assert again.load_json(broken) and again.accounted is None
    assert again.stand_in_reason([], {}, now + 20, 300.0) == "no queue read recorded with the cached sacct read"
