"""The Slurm backend's cache between invocations ($XDG_CACHE_HOME/gpuq): what it spares, and that a
stale, foreign or corrupt cache is read again from the cluster rather than trusted."""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path

import pytest

from gpuq.backends.base import PriorityChange
from gpuq.backends.slurm.diskcache import SlurmDiskCache
from gpuq.backends.slurm.history import OVERLAP_S, HistoryCache
from gpuq.backends.slurm.sacct import AcctRecord
from gpuq.model import JobState
from tests.slurm import cachefile
from tests.slurm.samples import captured_clock, jobs_at_capture, stand_in
from tests.slurm.test_backend_fake_cli import fake  # noqa: F401 - the stand-in CLIs, by name below

pytestmark = pytest.mark.usefixtures("fake")

CONFIG_READS = ("scontrol show config", "scontrol show partition", "sacctmgr ")


def _calls() -> list[str]:
    return Path(os.environ["FAKE_LOG"]).read_text().splitlines()


def _count(prefix: str) -> int:
    return sum(c.startswith(prefix) for c in _calls())


def _reset_log() -> None:
    Path(os.environ["FAKE_LOG"]).write_text("")


def _cache_file() -> Path:
    return SlurmDiskCache("").path


def _sacct_start() -> float:
    (line,) = [c for c in _calls() if c.startswith("sacct ")]
    return datetime.strptime(line.split(" -S ")[1].split()[0], "%Y-%m-%dT%H:%M:%S").timestamp()


def test_cache_lives_under_xdg_cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    stand_in().snapshot()
    (path,) = (tmp_path / "xdg" / "gpuq").iterdir()
    assert path.name.startswith("slurm-") and path.suffix == ".json"
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert oct(path.parent.stat().st_mode & 0o777) == "0o700"
    assert not list(path.parent.glob("*.tmp"))  # written through a temporary file, renamed


def test_second_invocation_skips_slurmdbd_and_config_reads() -> None:
    first = stand_in().snapshot()
    assert _count("sacct ") == 1 and _count("sacctmgr ") == 1
    _reset_log()
    # A new backend object is what a new `gpuq` process gets.
    second = stand_in().snapshot()
    calls = _calls()
    assert not [c for c in calls if c.startswith(("sacct", *CONFIG_READS))], calls
    assert any(c.startswith("squeue ") for c in calls)  # the queue itself is always read live
    assert jobs_at_capture(second) == jobs_at_capture(first)
    # (the one job suspended in the captures has been suspended for as long again as the clock ran)
    suspended = [(a, b) for a, b in zip(first.jobs, second.jobs, strict=True) if a.state is JobState.SUSPENDED]
    assert suspended and all(b.suspended_s - a.suspended_s == pytest.approx(second.now - first.now, abs=1e-6)
                             for a, b in suspended)  # fmt: skip
    assert second.classes == first.classes
    assert second.preemption_events == first.preemption_events
    assert second.cluster == first.cluster == "gpuqlab"


def test_history_ttl_then_incremental_window() -> None:
    stand_in(history_ttl_s=15).snapshot()
    full_start = _sacct_start()
    assert abs(full_start - (captured_clock() - 86400)) < 5  # first read: the whole window
    _reset_log()
    stand_in(history_ttl_s=15).snapshot()
    assert _count("sacct ") == 0  # younger than the TTL: not asked at all
    # Age the cached read past the TTL: the next invocation asks, but only since the last read.
    cachefile.age(history=60)
    read_until = cachefile.read()["history"]["read_until"]
    backend = stand_in(history_ttl_s=15)
    backend.snapshot()
    assert _count("sacct ") == 1
    assert abs(_sacct_start() - (read_until - OVERLAP_S)) < 2
    assert backend.history_cache.read_until is not None and backend.history_cache.read_until > read_until


def test_history_ttl_zero_always_asks() -> None:
    stand_in(history_ttl_s=0).snapshot()
    _reset_log()
    stand_in(history_ttl_s=0).snapshot()
    assert _count("sacct ") == 1
    assert _sacct_start() > captured_clock() - OVERLAP_S - 60  # incremental, not a day back


def test_config_ttl_is_respected_between_invocations() -> None:
    stand_in(config_ttl_s=60).snapshot()
    cachefile.age(config=61)
    _reset_log()
    stand_in(config_ttl_s=60).snapshot()
    for prefix in CONFIG_READS:
        assert _count(prefix) == 1, (prefix, _calls())
    # ... and the fresh read was saved: the next invocation is spared it again.
    _reset_log()
    stand_in(config_ttl_s=60).snapshot()
    assert not [c for c in _calls() if c.startswith(CONFIG_READS)]


@pytest.mark.parametrize(
    "content",
    [
        "",
        '{"format": "gpuq.slurm-cache/v1", "cluster": "", "conf',  # cut short mid-write
        "\xff\xfe not json",
        "[1, 2, 3]",
        None,  # right header, broken parts: filled in below
    ],
)
def test_corrupt_cache_is_read_again(content: str | None) -> None:
    reference = stand_in(persist=False).snapshot()
    stand_in().snapshot()
    path = _cache_file()
    if content is None:
        data = json.loads(path.read_text())
        data["config"] = {"read_at": captured_clock(), "show": {"PreemptType": 5}, "partitions": [], "qos": 7}
        data["history"]["records"] = [["1", "1", "x"], "nonsense"]
        content = json.dumps(data)
    path.write_text(content, encoding="utf-8", errors="surrogateescape")
    _reset_log()
    snap = stand_in().snapshot()
    calls = _calls()
    for prefix in ("sacct ", *CONFIG_READS):
        assert any(c.startswith(prefix) for c in calls), (prefix, calls)
    assert jobs_at_capture(snap) == jobs_at_capture(reference) and snap.classes == reference.classes
    json.loads(path.read_text())  # rewritten whole


def test_another_slurm_conf_or_cluster_does_not_share_the_cache(tmp_path: Path) -> None:
    stand_in().snapshot()
    _reset_log()
    stand_in(cluster="prod").snapshot()  # -M prod: its own file
    assert _count("sacct ") == 1 and _count("sacctmgr ") == 1
    # slurm.conf edited (a lab switched set-ups, a site changed PreemptType): read everything again.
    conf = Path(os.environ["SLURM_CONF"])
    conf.write_text(conf.read_text() + "# edited\n")
    _reset_log()
    stand_in().snapshot()
    assert _count("sacct ") == 1 and _count("scontrol show config") >= 1
    assert abs(_sacct_start() - (captured_clock() - 86400)) < 5  # the whole window again


def test_an_action_expires_the_history_ttl() -> None:
    stand_in().snapshot()
    backend = stand_in()
    backend.apply(backend.prepare_bump("69", PriorityChange(to=9000), reason="t"))
    _reset_log()
    stand_in().snapshot()
    assert _count("sacct ") == 1  # the change gpuq just made is looked for at once ...
    assert _sacct_start() > captured_clock() - OVERLAP_S - 60  # ... incrementally


def test_dry_run_keeps_the_cache() -> None:
    stand_in().snapshot()
    stand_in().prepare_bump("69", PriorityChange(to=9000), reason="t")  # a dry run: prepared, never applied
    _reset_log()
    stand_in().snapshot()
    assert _count("sacct ") == 0


def test_unwritable_cache_only_costs_speed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    assert stand_in().snapshot().jobs
    _reset_log()
    assert stand_in().snapshot().jobs
    assert _count("sacct ") == 1


def test_persist_false_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    stand_in(persist=False).snapshot()
    assert not (tmp_path / "xdg").exists()


def _rec(job: str, end: float | None, state: JobState = JobState.COMPLETED) -> AcctRecord:
    return AcctRecord(job, job, "n", "u", "a", "p", "q", 1, state, state.value.upper(), 1.0, 2.0, 3.0, end, 1)


def test_history_json_round_trip_and_window_check() -> None:
    now = captured_clock()
    cache = HistoryCache(3600)
    cache.refresh(now, lambda _start: [_rec("1", now - 10), _rec("2", None, JobState.RUNNING)])
    data = json.loads(json.dumps(cache.to_json()))
    back = HistoryCache(3600, ttl_s=15)
    assert back.load_json(data)
    assert sorted(back.refresh(now + 1, lambda _s: pytest.fail("within the TTL"))) == sorted(
        cache.refresh(now + 1, lambda _s: [])
    )
    # A cache that covers a shorter window than asked for is not adopted.
    wider = HistoryCache(7200)
    assert not wider.load_json(data)
    assert wider.read_until is None
