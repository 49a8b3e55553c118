"""preempt/qos on the real lab: gpuq's prediction of slurmctld's victims == what slurmctld did."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.slurm import lab, scenario

pytestmark = [pytest.mark.slurm, pytest.mark.usefixtures("qos_lab")]


def test_single_victim_after_slurmctld_reorders() -> None:
    # gpu1: 1-GPU, 2-GPU, 1-GPU low jobs; gpu2: four normal ones. Removing candidates in order,
    # the first two make room; slurmctld's re-sort then finds the 2-GPU job alone suffices.
    out = scenario.run([(1, "low"), (2, "low"), (1, "low")] + [(1, "normal")] * 4, 2, qos="urgent")
    assert out.predicted == out.preempted == {out.fill_ids[1]}
    assert lab.states()[out.fill_ids[1]][:2] == ("PENDING", "BeginTime")  # requeued


def test_several_victims() -> None:
    out = scenario.run([(1, "low")] * 8, 3, qos="urgent")
    assert len(out.preempted) == 3
    assert out.predicted == out.preempted
    assert out.plan.would_preempt
    assert len(out.plan.nodes) == 1


def test_preempt_exempt_time_protects_young_jobs() -> None:
    out = scenario.run([(1, "lowgrace")] * 4 + [(1, "low")] * 4, 2, qos="urgent")
    protected = set(out.fill_ids[:4])
    assert out.predicted == out.preempted
    assert len(out.preempted) == 2
    assert not out.preempted & protected
    assert sum("PreemptExemptTime" in n for n in out.plan.notes) == 4


def test_fits_without_preemption() -> None:
    out = scenario.run([(1, "low")] * 6, 2, qos="urgent")
    assert out.preempted == out.predicted == set()
    assert not out.plan.would_preempt


def test_cli_preview_shows_the_native_plan() -> None:
    lab.cancel_all()
    ids = [lab.sbatch(gpus=1, qos="low") for _ in range(8)]
    lab.wait_running(ids)
    gpuq = Path(sys.executable).with_name("gpuq")
    proc = subprocess.run(  # noqa: S603
        [str(gpuq), "--backend", "slurm", "preview", "--gpus", "2", "--class", "urgent", "-o", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    native = json.loads(proc.stdout)["native"]
    offset = lab.ctld_log_offset()
    urgent = lab.sbatch(gpus=2, qos="urgent")
    lab.wait_running([urgent], timeout=60)
    assert native["would_preempt"] is True
    assert {v["id"] for v in native["victims"]} == lab.preempted_since(offset)


def _gpuq_json(*args: str) -> dict[str, object]:
    gpuq = Path(sys.executable).with_name("gpuq")
    proc = subprocess.run(  # noqa: S603
        [str(gpuq), "--backend", "slurm", *args, "-o", "json"], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr
    doc: dict[str, object] = json.loads(proc.stdout)
    return doc


def test_a_normal_job_is_never_told_it_could_preempt_a_qos_normal_may_not() -> None:
    """Each node: a low job, then a younger lowgrace one (the cheaper victim by lost work). A
    4-GPU normal job needs a whole node; normal may preempt only low (Preempt=low), so slurmctld
    keeps it pending, and gpuq job and the overview now say it cannot preempt anything."""
    lab.cancel_all()
    low = [lab.sbatch("-w", node, gpus=2, qos="low") for node in ("gpu1", "gpu2")]
    lab.wait_running(low)
    grace = [lab.sbatch("-w", node, gpus=2, qos="lowgrace") for node in ("gpu1", "gpu2")]
    lab.wait_running(grace)
    normal = lab.sbatch(gpus=4, qos="normal")
    lab.wait_for(lambda: lab.states().get(normal, ("",))[0] == "PENDING", 30, "the normal job to be pending")
    job = _gpuq_json("job", normal)
    explanation = job["explanation"]
    assert isinstance(explanation, list)
    assert not any("could preempt" in line for line in explanation), explanation
    assert any(line.startswith("it cannot preempt anything") for line in explanation), explanation
    overview = _gpuq_json("overview")
    rows = [row for row in overview["top_pending"] if row["id"] == normal]  # type: ignore[attr-defined]
    assert rows and rows[0]["victims"] == []
    assert lab.states()[normal][0] == "PENDING" and all(lab.states()[j][0] == "RUNNING" for j in low + grace)
