"""Concurrent use: processes bumping one job at once lose nothing, and a `Cluster` may be read
from one thread while another acts (the console refreshes while an action runs)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from gpuq.audit import AuditLog
from gpuq.config import Config
from gpuq.model import JobState
from gpuq.service import Cluster, open_cluster
from gpuq.views.queue import QueueFilter, queue_view
from tests.clock import TickingClock

START = 1_795_100_400.0  # 2026-11-19T15:00:00Z
ROOT = Path(__file__).resolve().parents[2]
#: The demo nearly still (one simulated second per 1,000 s): the job stays as it is meanwhile.
STILL: dict[str, Any] = {"seed": 7, "speed": 0.001}


def _demo(state: Path) -> Cluster:
    return open_cluster(config=Config(), audit=AuditLog(state / "audit.jsonl"), clock=TickingClock(START), **STILL)


_WORKER = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, {root!r})
    os.environ["XDG_STATE_HOME"] = {state!r}
    from tests.service.test_concurrency import _demo
    from pathlib import Path
    cluster = _demo(Path({state!r}))
    for _ in range({count}):
        cluster.prepare_bump({job!r}, by=1, reason="concurrency test").confirm()
""")


def test_eight_processes_bumping_one_job_by_one_raise_it_by_exactly_their_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    cluster = _demo(tmp_path)
    job = next(j for j in cluster.refresh().jobs if j.state is JobState.RUNNING and j.exempt_until is None)
    workers, each = 8, 25
    script = _WORKER.format(root=str(ROOT), state=str(tmp_path), count=each, job=job.id)
    procs = [subprocess.Popen([sys.executable, "-c", script], stderr=subprocess.PIPE, text=True)  # noqa: S603
             for _ in range(workers)]  # fmt: skip
    errors = [p.communicate(timeout=300)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * workers, errors
    after = _demo(tmp_path).refresh().job(job.id)
    assert after is not None and after.priority == job.priority + workers * each
    records = [e.record for e in AuditLog(tmp_path / "audit.jsonl").entries() if e.record]
    done = [r for r in records if r["phase"] == "outcome"]
    assert len(done) == workers * each and {r["result"] for r in done} == {"ok"}
    # Every before/after pair is the truth: together they are the steps p, p+1, …, p+200.
    pairs = sorted((r["before"]["priority"], r["after"]["priority"]) for r in done)
    assert pairs == [(job.priority + i, job.priority + i + 1) for i in range(workers * each)]
    assert len([r for r in records if r["phase"] == "intent"]) == workers * each


def test_a_cluster_is_read_in_one_thread_while_another_acts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    cluster = _demo(tmp_path)
    job = next(j for j in cluster.refresh().jobs if j.state is JobState.RUNNING and j.exempt_until is None)
    stop = threading.Event()
    seen: list[int] = []
    failures: list[BaseException] = []

    def reader() -> None:
        try:
            while not stop.is_set():
                snapshot = cluster.refresh(ledger=False)
                view = queue_view(cluster, snapshot, QueueFilter())
                row = next(r for r in view.rows if r.job.id == job.id)
                seen.append(row.job.priority)
        except BaseException as exc:  # pragma: no cover - reported below
            failures.append(exc)

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for _ in range(15):
            cluster.prepare_bump(job.id, by=1).confirm()
    finally:
        stop.set()
        thread.join()
    assert not failures
    assert seen and seen == sorted(seen)  # each read saw a whole state, never one going back
    assert seen[-1] <= job.priority + 15
    final = cluster.refresh().job(job.id)
    assert final is not None and final.priority == job.priority + 15
