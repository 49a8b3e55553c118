"""The read-path shortcuts on the real lab (qos mode): GPU indexes from a full detail read run
beside squeue equal those read one job at a time, and sacct's QOS ids named by slurmctld equal the
names sacct prints itself."""

from __future__ import annotations

import time

import pytest

from gpuq.backends.slurm import SlurmBackend
from gpuq.model import Snapshot
from tests.slurm import lab

pytestmark = [pytest.mark.slurm, pytest.mark.usefixtures("qos_lab")]


class _NamesOnly(SlurmBackend):
    """The fallback: slurmctld names no QOS, so sacct is asked for names (its own QOS lookup)."""

    def _qos_names(self) -> dict[str, str] | None:
        return None


def _indexes(snap: Snapshot, ids: list[str]) -> dict[str, tuple[int, dict[str, tuple[int | None, ...]]]]:
    return {j.id: (j.gpus, dict(j.allocation)) for j in snap.jobs if j.id in ids}


def test_many_holders_path_gives_the_one_by_one_indexes() -> None:
    lab.cancel_all()
    ids = [lab.sbatch(gpus=g, qos="normal", name="holder") for g in (1, 2, 1, 2, 1, 1)]  # all 8 GPUs
    lab.wait_running(ids)
    one = SlurmBackend(persist=False)
    reference = _indexes(one.snapshot(), ids)
    assert one.detail_read == "one-by-one"
    # Every GPU of the lab, each held once, with a real index.
    held = [(node, i) for _gpus, alloc in reference.values() for node, idx in alloc.items() for i in idx]
    assert len(held) == len(set(held)) == 8 and None not in {i for _n, i in held}
    assert {g for g, _alloc in reference.values()} == {1, 2}
    first = SlurmBackend(detail_one_by_one_max=2)  # no hint yet: one full read after squeue
    assert _indexes(first.snapshot(), ids) == reference
    assert first.detail_read == "full" and first.gpu_holders == 6
    second = SlurmBackend(detail_one_by_one_max=2)  # the next invocation: the full read beside squeue
    assert _indexes(second.snapshot(), ids) == reference
    assert second.detail_read == "beside"
    lab.cancel_all()


def test_sacct_with_qos_ids_equals_sacct_with_names() -> None:
    backend = SlurmBackend(persist=False)
    names = backend._qos_names()
    assert names is not None
    assert set(names.values()) == set(backend.preempt_config(fresh=True).qos)
    # A closed window (records reach slurmdbd a few seconds late): both reads see the same runs.
    until = time.time() - 120
    by_id = backend.history(until - 86400, until)
    by_name = _NamesOnly(persist=False).history(until - 86400, until)
    assert by_id == by_name
    assert by_id, "the lab's accounting has no jobs of the last day"
