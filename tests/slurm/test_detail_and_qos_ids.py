"""Two read-path shortcuts against the stand-in CLIs (real 22.05 captures), and their fallbacks:

- sacct asked for QOS ids (QOSRAW), named from slurmctld's ``scontrol show assoc_mgr flags=qos``,
  which spares sacct its slurmdbd round trip for the QOS list;
- the full ``scontrol show job -d -o`` started beside squeue when the last read had to read many
  GPU holders' indexes (kept in the disk cache), whose details only fill jobs in the same run.
  (The indexes kept for running jobs are tested in test_held_indexes.py.)

The lab tests (test_lab_5_read_path.py) check the same on the real cluster.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpuq.backends.slurm.diskcache import SlurmDiskCache
from gpuq.errors import BadInput
from gpuq.model import Job, Snapshot
from tests.slurm.samples import jobs_at_capture, stand_in
from tests.slurm.test_backend_fake_cli import fake  # noqa: F401 - the stand-in CLIs, by name below

pytestmark = pytest.mark.usefixtures("fake")


def _calls() -> list[str]:
    return Path(os.environ["FAKE_LOG"]).read_text().splitlines()


def _reset_log() -> None:
    Path(os.environ["FAKE_LOG"]).write_text("")


def _indexes(snap: Snapshot) -> dict[str, tuple[int, dict[str, tuple[int | None, ...]]]]:
    return {j.id: (j.gpus, dict(j.allocation)) for j in snap.jobs if j.allocation}


def _jobs(snap: Snapshot) -> dict[str, Job]:
    return jobs_at_capture(snap)


# ---------------------------------------------------------------------------- sacct QOS ids
def test_history_asks_sacct_for_qos_ids_when_slurmctld_names_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_SACCT_NAMES", "sacct-parsable-qosnames.txt")
    by_name = stand_in(persist=False).history(since=0.0)
    named_calls = [c for c in _calls() if c.startswith("sacct ")]
    assert len(named_calls) == 1 and ",QOS," in named_calls[0]  # no map: sacct prints the names
    _reset_log()
    monkeypatch.setenv("FAKE_ASSOC_MGR", "1")
    by_id = stand_in(persist=False).history(since=0.0)
    (call,) = [c for c in _calls() if c.startswith("sacct ")]
    assert ",QOSRAW," in call
    assert "scontrol show assoc_mgr flags=qos" in _calls()
    assert by_id == by_name
    assert {j.qos for j in by_id} >= {"normal", "low", "urgent"}


def test_a_qos_slurmctld_forgot_makes_sacct_print_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_SACCT_NAMES", "sacct-parsable-qosnames.txt")
    expected = stand_in(persist=False).history(since=0.0)
    _reset_log()
    # urgent deleted: slurmctld drops it, while sacct still names it for old jobs.
    monkeypatch.setenv("FAKE_ASSOC_MGR", "1")
    monkeypatch.setenv("FAKE_ASSOC_MGR_DROP", "urgent")
    got = stand_in(persist=False).history(since=0.0)
    sacct = [c for c in _calls() if c.startswith("sacct ")]
    assert [",QOSRAW," in c for c in sacct] == [True, False]
    assert got == expected
    assert any(j.qos == "urgent" for j in got)


def test_snapshot_history_uses_qos_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_ASSOC_MGR", "1")
    snap = stand_in().snapshot()
    (call,) = [c for c in _calls() if c.startswith("sacct ")]
    assert ",QOSRAW," in call
    assert snap.preemption_events  # the capture's PREEMPTED runs made it into the ledger
    assert {e.mode for e in snap.preemption_events} == {"requeue"}


# ---------------------------------------------------------------------------- details beside squeue
def _full_reads() -> int:
    return sum(c == "scontrol show job -d -o" for c in _calls())


def _single_reads() -> int:
    return sum(c.startswith("scontrol show job -d -o ") for c in _calls())


def test_many_holders_read_all_details_beside_squeue_next_time() -> None:
    reference = stand_in(persist=False).snapshot()  # 6 GPU holders, one by one
    assert _single_reads() == 6 and _full_reads() == 0
    _reset_log()
    first = stand_in(detail_one_by_one_max=2)
    snap1 = first.snapshot()
    # No hint yet: after squeue. All 6 are kept, so the next read need read none: no hint now either.
    assert first.detail_read == "full" and first.gpu_holders == 0
    assert json.loads(SlurmDiskCache("").path.read_text())["queue"]["gpu_holders"] == 0
    _hint(6)  # as if the last read had found 6 holders it had to read (started since the one before)
    second = stand_in(detail_one_by_one_max=2)  # the next invocation
    snap2 = second.snapshot()
    assert second.detail_read == "beside"
    assert _full_reads() == 1 and _single_reads() == 0
    assert _indexes(snap1) == _indexes(snap2) == _indexes(reference)
    assert _jobs(snap2) == _jobs(reference)
    assert any(None not in idx for _gpus, alloc in _indexes(reference).values() for idx in alloc.values())


def _hint(holders: int) -> Path:
    """Leave a disk cache whose last read had to read ``holders`` GPU-holding jobs' indexes, and
    kept none (as if they had all started since)."""
    stand_in(detail_one_by_one_max=2).snapshot()
    cache = SlurmDiskCache("").path
    data = json.loads(cache.read_text())
    data["queue"]["gpu_holders"] = holders
    data["queue"]["held"] = {}
    cache.write_text(json.dumps(data))
    _reset_log()
    return cache


def test_few_holders_last_time_read_one_by_one() -> None:
    reference = stand_in(persist=False).snapshot()
    _hint(6)
    backend = stand_in()  # 6 <= 32: nothing beside squeue
    snap = backend.snapshot()
    assert backend.detail_read == "one-by-one" and _full_reads() == 0
    assert _indexes(snap) == _indexes(reference)


def test_a_wrong_guess_still_gives_every_index() -> None:
    reference = stand_in(persist=False).snapshot()
    cache = _hint(500)  # the last read saw many; now there are 6, under the threshold of 8
    backend = stand_in(detail_one_by_one_max=8)
    snap = backend.snapshot()
    assert backend.detail_read == "beside" and _full_reads() == 1 and _single_reads() == 0
    assert _indexes(snap) == _indexes(reference)
    assert json.loads(cache.read_text())["queue"]["gpu_holders"] == 6  # crossed back below: saved
    _reset_log()
    again = stand_in(detail_one_by_one_max=8)
    again.snapshot()  # the 6 are kept now: nothing to read
    assert again.detail_read == "none" and again.detail_cached == 6 and _full_reads() == _single_reads() == 0


def test_a_job_restarted_between_the_reads_is_read_again(monkeypatch: pytest.MonkeyPatch) -> None:
    reference = stand_in(persist=False).snapshot()
    _hint(6)
    # The full read (beside squeue) shows job 73 with another StartTime: another run's indexes.
    monkeypatch.setenv("FAKE_FULL_RESTARTED", "73")
    backend = stand_in(detail_one_by_one_max=2)
    snap = backend.snapshot()
    assert backend.detail_read == "beside+1"
    assert [c for c in _calls() if c.startswith("scontrol show job -d -o ")] == ["scontrol show job -d -o 73"]
    assert _indexes(snap) == _indexes(reference)


def test_a_failed_read_beside_squeue_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    reference = stand_in(persist=False).snapshot()
    _hint(500)
    monkeypatch.setenv("FAKE_FULL_ERR", "slurm_load_jobs error: Socket timed out on send/recv operation")
    backend = stand_in(detail_one_by_one_max=8)
    snap = backend.snapshot()
    assert _full_reads() == 1  # it was tried beside squeue...
    assert backend.detail_read == "one-by-one" and _single_reads() == 6  # ...and its loss cost only time
    assert _indexes(snap) == _indexes(reference)


def test_a_failed_full_read_that_is_needed_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    from gpuq.errors import Unreachable

    _hint(500)
    monkeypatch.setenv("FAKE_FULL_ERR", "slurm_load_jobs error: Socket timed out on send/recv operation")
    with pytest.raises(Unreachable, match="scontrol show job -d"):
        stand_in(detail_one_by_one_max=2).snapshot()  # 6 > 2: the full read is needed after all


def test_the_threshold_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUQ_SLURM_DETAIL_ONE_BY_ONE_MAX", "3")
    assert stand_in().detail_one_by_one_max == 3
    assert stand_in(detail_one_by_one_max=5).detail_one_by_one_max == 5
    monkeypatch.setenv("GPUQ_SLURM_DETAIL_ONE_BY_ONE_MAX", "many")
    with pytest.raises(BadInput, match="GPUQ_SLURM_DETAIL_ONE_BY_ONE_MAX='many' is not a whole number"):
        stand_in()
    monkeypatch.setenv("GPUQ_SLURM_DETAIL_ONE_BY_ONE_MAX", "-2")
    with pytest.raises(BadInput, match="GPUQ_SLURM_DETAIL_ONE_BY_ONE_MAX='-2': must be 0 or more"):
        stand_in()
    with pytest.raises(BadInput, match="0 or more"):
        stand_in(detail_one_by_one_max=-1)


def test_a_bad_threshold_is_a_clear_cli_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from gpuq.cli.main import cli

    monkeypatch.setenv("GPUQ_SLURM_DETAIL_ONE_BY_ONE_MAX", "many")
    result = CliRunner().invoke(cli, ["--backend", "slurm", "queue", "-o", "json"])
    assert result.exit_code != 0
    assert "GPUQ_SLURM_DETAIL_ONE_BY_ONE_MAX='many' is not a whole number" in result.output
    assert "Traceback" not in result.output and not isinstance(result.exception, BadInput)
