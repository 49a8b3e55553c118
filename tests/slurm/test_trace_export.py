"""`gpuq trace export` on the real lab (qos mode): short jobs (GPU counts 1/2/4, an array, one
requeued by an operator) run to the end, then the export, read back with the trace reader,
agrees with what sacct itself says of them: ids, GPUs, states, submit/start/end and run times,
the requeued job once with both runs' time."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpuq.backends.slurm import SlurmBackend
from gpuq.backends.slurm.trace import TRACE_FIELDS, read_sacct_parsable
from gpuq.backends.slurm.values import text_time
from gpuq.trace.record import TraceJob
from tests.clock import real_time
from tests.slurm import lab

pytestmark = [pytest.mark.slurm, pytest.mark.usefixtures("qos_lab")]

_DONE = ("COMPLETED", "CANCELLED", "FAILED", "TIMEOUT")


def _sacct_rows(ids: list[str]) -> dict[str, list[dict[str, str]]]:
    """sacct's own records of `ids` (every run), by JobIDRaw."""
    out = lab.sh(["sacct", "-a", "-X", "-D", "--parsable2", "-j", ",".join(ids), "-o", ",".join(TRACE_FIELDS)])
    names, *lines = out.splitlines()
    rows: dict[str, list[dict[str, str]]] = defaultdict(list)
    for line in lines:
        row = dict(zip(names.split("|"), line.split("|"), strict=True))
        rows[row["JobIDRaw"]].append(row)
    return rows


def _finished(ids: list[str], runs: dict[str, int]) -> bool:
    rows = _sacct_rows(ids)
    ours = [rs for rs in rows.values() if rs[-1]["JobID"].split("_")[0] in ids or rs[-1]["JobID"] in ids]
    return (
        len(ours) >= len(ids)
        and all(rs[-1]["State"].split()[0] in _DONE for rs in ours)
        and all(len(rows[raw]) >= n for raw, n in runs.items())
    )


def _gpus(tres: str) -> int:
    part = [p for p in tres.split(",") if p.startswith("gres/gpu=")]
    return int(part[0].split("=")[1]) if part else 0


def test_export_agrees_with_sacct(tmp_path: Path) -> None:
    lab.cancel_all()
    began = real_time()
    plain = [lab.sbatch(gpus=g, qos="normal", name=f"trace-{g}", sleep=2) for g in (1, 2, 4)]
    array = lab.sbatch("--array=0-2", gpus=1, qos="normal", name="trace-arr", sleep=1)
    requeued = lab.sbatch(gpus=1, qos="normal", name="trace-rq", sleep=4)
    lab.wait_running([requeued], timeout=60)
    lab.sh(["scontrol", "requeue", requeued])
    lab.start_requeued(requeued)
    ids = [*plain, array, requeued]
    lab.wait_for(lambda: not any(j.split("_")[0] in ids for j in lab.states()), 180, "the jobs to finish")
    lab.wait_for(lambda: _finished(ids, {requeued: 2}), 60, "sacct to record every run")
    until = real_time() + 5

    # The export in sacct's own format, read back with the trace reader …
    from gpuq.cli.main import cli
    from gpuq.cli.options import Injected

    raw = tmp_path / "sacct.txt"
    span = int(until - began) + 60  # (whole seconds: the CLI's window and the direct one are the same)
    since = f"{span}s"
    args = ["--backend", "slurm", "trace", "export", "--since", since, "--until", "now"]
    result = CliRunner().invoke(
        cli, [*args, "--format", "sacct", "-o", str(raw)], prog_name="gpuq", obj=Injected(clock=lambda: until)
    )
    assert result.exit_code == 0, result.output
    exported = {j.id: j for j in read_sacct_parsable(str(raw))}
    # … equals the job log the same export writes, and what the backend streams itself.
    direct = list(SlurmBackend(persist=False).export_history(until - span, until))
    assert {j.id: j for j in direct} == exported
    assert len(direct) == len(exported)  # each job once

    rows = _sacct_rows(ids)
    mine = {rs[-1]["JobID"]: rs for rs in rows.values()}
    assert {f"{array}_{i}" for i in range(3)} <= set(mine)
    assert set(plain) | {requeued} <= set(mine)
    for jid, rs in mine.items():
        job: TraceJob = exported[jid]
        last = rs[-1]
        assert job.state == last["State"]
        assert job.gpus == max(_gpus(r["AllocTRES"]) for r in rs)
        assert job.submit_time == min(text_time(r["Submit"]) or 0.0 for r in rs)
        assert job.end_time == text_time(last["End"])
        assert job.duration_s == sum(int(r["ElapsedRaw"]) for r in rs)
        assert job.job_class == "normal" and job.user == "root"
        assert job.start_time is not None and began - 1 <= job.start_time <= until
        assert job.recorded_wait_s is not None and job.recorded_wait_s >= 0
    assert [g for g, jid in zip((1, 2, 4), plain, strict=True) if exported[jid].gpus != g] == []
    assert all(exported[jid].state == "COMPLETED" for jid in plain)
    assert len(rows[requeued]) == 2 and exported[requeued].duration_s >= 4  # both runs, counted once
    lab.cancel_all()
