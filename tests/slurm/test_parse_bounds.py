"""Issue 9 on Slurm's output: ranges bounded by what can exist (a host list of 99,999,999 nodes, a
GPU index range of 100 million), numbers and times checked, JSON held to what Slurm can print —
each refused in well under a second with an error naming the command, never a traceback — and a
placement Slurm shows only for a moment marked on the live snapshot instead of refused."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gpuq.backends.slurm.jsonread import load_json, parse_jobs_json, parse_sinfo_json
from gpuq.backends.slurm.runner import parse_output
from gpuq.backends.slurm.sacct import parse_sacct_json, parse_sacct_parsable
from gpuq.backends.slurm.text import (
    DELIM,
    parse_scontrol_detail,
    parse_scontrol_jobs,
    parse_sinfo_nodes,
    parse_squeue_format,
)
from gpuq.errors import BadInput
from tests.slurm.samples import LIVE, live, read, stand_in

SQUEUE = live("squeue-format.txt")
DETAIL = live("scontrol-show-job-d-o.txt")


def _refused(command: str, parse: Callable[[], Any]) -> str:
    """The parse fails as gpuq reports it: BadInput naming the command (before the bounds, the
    ranges below ran for minutes and gigabytes instead: pytest-timeout stops those)."""
    with pytest.raises(BadInput) as err:
        parse_output(command, parse)
    message = str(err.value)
    assert message.startswith(f"could not parse the output of `{command}`: ") and "\n" not in message
    return message


def _squeue_field(line_of: str, index: int, value: str) -> str:
    """squeue-format.txt with field `index` of job `line_of`'s line set to `value`."""
    lines = SQUEUE.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(line_of + DELIM))
    fields = lines[at].split(DELIM)
    fields[index] = value
    lines[at] = DELIM.join(fields)
    return "\n".join(lines) + "\n"


_NODELIST, _PRIORITY, _SUBMIT, _TRES_ALLOC, _NUMNODES, _JOBID = 21, 10, 13, 19, 20, 0


@pytest.mark.parametrize(
    ("index", "value", "message"),
    [
        (_NODELIST, "gpu[1-99999999]", "host list 'gpu[1-99999999]' names more than 100000 nodes"),
        (_NODELIST, "gpu[1-1000]x[1-1000]", "names more than 100000 nodes"),
        (_NODELIST, "gpu[1-3", "host list 'gpu[1-3': not a Slurm host list"),
        (_NODELIST, "gpu[3-1]", "range 3-1 runs backwards"),
        (_PRIORITY, "9" * 4400, "priority '99999999999999999999… (4400 characters)': not a whole number from 0 to"),
        (_PRIORITY, "²", "priority '²': not a whole number"),
        (_SUBMIT, "0099-01-01T00:00:00", "time '0099-01-01T00:00:00' is outside 1970..9999"),
        (_SUBMIT, "1969-12-31T23:59:59", "time '1969-12-31T23:59:59' is outside 1970..9999"),
        (_TRES_ALLOC, "cpu=1,gres/gpu=" + "9" * 30, "gres/gpu '99999999999999999999… (30 characters)': not a whole"),
        (_NUMNODES, "9" * 30, "NumNodes '99999999999999999999… (30 characters)': not a whole number from 0 to 100000"),
        (_JOBID, "7" * 600, "job id '77777777777777777777'…: not 1 to 512 characters"),
    ],
)
def test_squeue_values_past_what_can_exist_name_the_command(index: int, value: str, message: str) -> None:
    text = _squeue_field("73", index, value)
    assert message in _refused("squeue --Format", lambda: parse_squeue_format(text, "qos"))


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            "GRES=gpu:h100:3(IDX:1-3)",
            "GRES=gpu:h100:3(IDX:0-99999999)",
            "GPU indexes '0-99999999': not indexes from 0 to 1023",
        ),
        ("GRES=gpu:h100:3(IDX:1-3)", "GRES=gpu:h100:3(IDX:1024)", "GPU indexes '1024': not indexes from 0 to 1023"),
        (
            "GRES=gpu:h100:3(IDX:1-3)",
            "GRES=gpu:h100:3(IDX:" + "9" * 5000 + ")",
            "GPU indexes '99999999999999999999… (5000",
        ),
        ("Nodes=gpu1 CPU_IDs=1", "Nodes=gpu[1-99999999] CPU_IDs=1", "names more than 100000 nodes"),
        (" Restarts=0 ", " Restarts=" + "9" * 5000 + " ", "Restarts '99999999999999999999… (5000 characters)'"),
    ],
)
def test_scontrol_detail_ranges_are_bounded(old: str, new: str, message: str) -> None:
    line = next(line for line in DETAIL.splitlines() if line.startswith("JobId=73 "))
    assert old in line
    text = line.replace(old, new) + "\n"
    assert message in _refused("scontrol show job -d -o", lambda: parse_scontrol_detail(text))


def test_scontrol_jobs_and_sinfo_and_sacct_counts_are_bounded() -> None:
    job = read("24.11", "scontrol-show-job-d.txt")
    assert "NumNodes=1" in job
    text = job.replace("NumNodes=1", "NumNodes=" + "9" * 5000, 1)
    assert "NumNodes '99999999999999999999… (5000" in _refused(
        "scontrol show job -d", lambda: parse_scontrol_jobs(text, "qos")
    )
    nodes = live("sinfo-format.txt").replace("gpu:h100:4", "gpu:h100:99999999999", 1)
    assert "GPUs of a node '99999999999': not a whole number from 0 to 1024" in _refused(
        "sinfo --Format", lambda: parse_sinfo_nodes(nodes)
    )
    lines = live("sacct-parsable.txt").splitlines()
    at = next(i for i, line in enumerate(lines) if line.count("|") == 16)  # (a JobName without a '|')
    fields = lines[at].split("|")
    fields[13] = "1969-12-31T23:59:59"  # End
    lines[at] = "|".join(fields)
    bad = "\n".join(lines)
    assert "time '1969-12-31T23:59:59' is outside 1970..9999" in _refused("sacct", lambda: parse_sacct_parsable(bad))


def test_preemption_setup_numbers_are_bounded() -> None:
    from gpuq.backends.slurm.config import parse_partitions, parse_qos

    qos = live("sacctmgr-show-qos.txt")
    first = qos.splitlines()[0].split("|")
    bad = "|".join([first[0], "9" * 30, *first[2:]]) + "\n"
    assert "QOS Priority '99999999999999999999… (30 characters)': not a whole number from 0 to" in _refused(
        "sacctmgr show qos", lambda: parse_qos(bad)
    )
    parts = live("scontrol-show-partition-o.txt")
    assert "PriorityTier=" in parts
    tier = re.sub(r"PriorityTier=\S+", "PriorityTier=99999999", parts, count=1)
    assert "PriorityTier '99999999': not a whole number from 0 to 65535" in _refused(
        "scontrol show partition -o", lambda: parse_partitions(tier)
    )


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('"priority": 858', '"priority": NaN', "not JSON (JSON is malformed: invalid character"),
        ('"priority": 858', '"priority": Infinity', "not JSON (JSON is malformed: invalid character"),
        ('"priority": 858', '"priority": 1e400', "not JSON (Number out of range"),
        ('"priority": 858', '"priority": ' + "9" * 4400, "not JSON (Integer value out of range"),
        (
            '"priority": 858',
            '"priority": ' + "9" * 30,
            "priority 999999999999999999999999999999: not a number from 0 to",
        ),
        ('"priority": 858', '"priority": ' + "[" * 5000 + "]" * 5000, "nested deeper than the decoder goes"),
        ('"name": "train-low1"', '"name": "\\ud800"', "not JSON ("),
        ('"name": "train-low1"', '"name": 5', "name: expected a string, got int"),
        ('"submit_time": 1795976265', '"submit_time": 1e20', "time 1e+20 (epoch seconds) is outside 1970..9999"),
        ('"nodes": "gpu1"', '"nodes": "gpu[1-99999999]"', "names more than 100000 nodes"),
    ],
)
def test_squeue_json_is_held_to_what_slurm_prints(old: str, new: str, message: str) -> None:
    text = read("22.05", "squeue.json")
    assert old in text, old
    bad = text.replace(old, new)
    assert message in _refused("squeue --json", lambda: parse_jobs_json(load_json(bad, "squeue --json")[0], "qos"))


def test_sinfo_and_sacct_json_are_held_to_what_slurm_prints() -> None:
    nodes = read("22.05", "sinfo.json").replace('"name": "gpu1"', '"name": null', 1)
    assert "a node without a name" in _refused("sinfo --json", lambda: parse_sinfo_json(load_json(nodes, "s")[0]))
    acct = read("22.05", "sacct.json")
    assert '"priority": ' in acct
    bad = acct.replace('"priority": ', '"priority": 1e300, "x": ', 1)
    assert "priority 1e+300: not a number from 0 to" in _refused(
        "sacct --json", lambda: parse_sacct_json(load_json(bad, "sacct --json")[0])
    )


def test_the_captures_still_parse() -> None:
    """(The bounds refuse only what cannot exist: every captured output still reads.)"""
    assert len(parse_squeue_format(SQUEUE, "qos", parse_scontrol_detail(DETAIL)).jobs) == 10
    for version in ("22.05", "24.11", "26.05"):
        assert parse_jobs_json(load_json(read(version, "squeue.json"), "squeue --json")[0], "qos").jobs
        assert parse_sinfo_json(load_json(read(version, "sinfo.json"), "sinfo --json")[0])
    assert parse_sacct_json(load_json(read("22.05", "sacct.json"), "sacct --json")[0])


# ---------------------------------------------------------------------------- the live snapshot


def _tool(bindir: Path, name: str, body: str) -> None:
    path = bindir / name
    path.write_text("#!/bin/bash\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


@pytest.fixture
def completing_overlap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Stand-in Slurm CLIs replaying the live capture, with job 68 COMPLETING and still listed on
    GPU 2 of gpu2, which slurmctld has already given to job 72 (the moment before the epilog ends)."""
    queue = _squeue_field("68", 11, "COMPLETING")
    detail = DETAIL.replace(
        "Nodes=gpu2 CPU_IDs=1 Mem=1000 GRES=gpu:h100:1(IDX:1)",
        "Nodes=gpu2 CPU_IDs=1 Mem=1000 GRES=gpu:h100:1(IDX:2)",
        1,
    )
    assert detail != DETAIL
    (tmp_path / "squeue.txt").write_text(queue)
    (tmp_path / "detail.txt").write_text(detail)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    _tool(
        bindir,
        "scontrol",
        f"""case "$1 $2" in
  "show config") cat {LIVE}/scontrol-show-config.txt ;;
  "show partition") cat {LIVE}/scontrol-show-partition-o.txt ;;
  "show job") if [ -n "$5" ]; then grep "^JobId=$5 " {tmp_path}/detail.txt; else cat {tmp_path}/detail.txt; fi ;;
esac
""",
    )
    _tool(bindir, "squeue", f"cat {tmp_path}/squeue.txt\n")
    _tool(bindir, "sinfo", f"cat {LIVE}/sinfo-format.txt\n")
    _tool(bindir, "sacct", f"cat {LIVE}/sacct-parsable.txt\n")
    _tool(bindir, "sacctmgr", f"cat {LIVE}/sacctmgr-show-qos.txt\n")
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=fake\nSlurmctldHost=ctl01(10.1.2.3)\n")
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("SLURM_CONF", str(conf))
    return tmp_path


def test_a_completing_jobs_gpus_given_to_another_are_marked_not_refused(completing_overlap: Path) -> None:
    import dataclasses

    from msgspec.structs import replace

    from gpuq.model import JobState, PreviewRequest
    from gpuq.model.codec import decode_snapshot, encode_snapshot
    from gpuq.policy.config import DEFAULT_POLICY
    from gpuq.policy.engine import plan_preemption

    backend = stand_in(persist=False)
    snap = backend.snapshot()
    jobs = {j.id: j for j in snap.jobs}
    assert jobs["68"].state is JobState.COMPLETING and jobs["68"].allocation == {"gpu2": (2,)}
    assert jobs["65_2"].allocation == {"gpu2": (2,)}  # (array task 65_2 is Slurm's job 72)
    assert "GPU 2 on gpu2 is held by job 65_2 (running) and by job 68 (completing)" in (jobs["65_2"].conflict or "")
    assert jobs["68"].conflict and not jobs["73"].conflict
    # previews leave the marked running job out: it frees nothing while 68 still holds the GPU
    assert all(j.id != "65_2" for on in snap.running_on().values() for j in on)
    request = PreviewRequest(gpus=1, priority=10**7)
    unmarked = dataclasses.replace(snap, jobs=tuple(replace(j, conflict=None) for j in snap.jobs))
    assert [v.job_id for v in plan_preemption(unmarked, DEFAULT_POLICY, request, snap.now).victims] == ["65_2"]
    assert [v.job_id for v in plan_preemption(snap, DEFAULT_POLICY, request, snap.now).victims] == ["65_3"]
    # `gpuq snapshot` of that moment is a file gpuq reads back, marks and all
    again = decode_snapshot(encode_snapshot(snap), "written.json")
    assert {j.id for j in again.jobs if j.conflict} == {"68", "65_2"}
