"""Slurm's multifactor priority of a what-if or a held job, on the real 22.05 captures (the lab
test `test_lab_8_what_if_priority` checks it against slurmctld itself)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import MappingProxyType

import pytest
from click.testing import CliRunner

from gpuq.backends.slurm.config import (
    PreemptConfig,
    parse_partitions,
    parse_qos,
    parse_show_config,
    parse_weights,
)
from gpuq.backends.slurm.configread import class_key_of
from gpuq.backends.slurm.priority import estimate_priority, request_priority
from gpuq.backends.slurm.text import parse_squeue_format
from gpuq.cli.main import cli
from gpuq.cli.options import Injected
from gpuq.errors import BadInput
from gpuq.model import JobState, Node, PreviewRequest
from tests.factories import make_job, make_snapshot
from tests.slurm.samples import CAPTURED_AT, captured_clock, live
from tests.slurm.test_backend_fake_cli import _tool, fake  # noqa: F401 - the stand-in CLIs, by name below

SHOW = parse_show_config(live("scontrol-show-config.txt"))
CFG = PreemptConfig(
    "preempt/qos",
    "REQUEUE",
    qos=parse_qos(live("sacctmgr-show-qos.txt")),
    partitions=parse_partitions(live("scontrol-show-partition-o.txt")),
    weights=parse_weights(SHOW),
)
SNAP = make_snapshot("lab", "slurm", CAPTURED_AT, nodes=(Node("gpu1", 4), Node("gpu2", 4)), jobs=())


def test_weights_from_the_captured_config() -> None:
    w = CFG.weights
    assert w.multifactor
    assert (w.qos, w.partition, w.age, w.fairshare, w.job_size, w.assoc) == (100000, 1000, 100, 0, 0, 0)
    assert w.max_age_s == 7 * 86400
    assert w.tres == "" and w.site_plugin == ""
    assert {p.job_factor for p in CFG.partitions.values()} == {1}


def _captured_priorities() -> dict[str, set[int]]:
    """QOS -> the priorities slurmctld gave the captured queue's jobs (admin-set ones left out)."""
    read = parse_squeue_format(live("squeue-format.txt"), class_key_of(SHOW))
    out: dict[str, set[int]] = {}
    for job in read.jobs:
        if job.state in (JobState.RUNNING, JobState.PENDING) and job.priority not in (0, 5000):
            out.setdefault(job.qos or "", set()).add(job.priority)
    return out


def test_a_what_if_by_qos_is_what_slurmctld_gave_the_captured_jobs_of_that_qos() -> None:
    captured = _captured_priorities()
    assert set(captured) == {"low", "normal", "urgent"}
    for qos, seen in captured.items():
        found = request_priority(CFG, SNAP, PreviewRequest(gpus=1, hints={"qos": qos}))
        assert found is not None
        assert {found.priority} == seen, qos
        assert "no factor estimated" in found.how
    urgent = request_priority(CFG, SNAP, PreviewRequest(gpus=2, hints={"qos": "urgent"}))
    assert urgent is not None and urgent.priority == 101000
    assert urgent.how.endswith("101000 = qos 100000 + partition 1000 + age 0; no factor estimated")


def test_a_class_naming_a_qos_stands_for_it_and_an_explicit_priority_stays() -> None:
    found = request_priority(CFG, SNAP, PreviewRequest(gpus=1, job_class="normal"))
    assert found is not None and found.priority == 11000
    assert request_priority(CFG, SNAP, PreviewRequest(gpus=1, priority=7, hints={"qos": "urgent"})) is None
    assert request_priority(CFG, SNAP, PreviewRequest(gpus=1, urgent=True, hints={"qos": "urgent"})) is None
    assert request_priority(CFG, SNAP, PreviewRequest(gpus=1, job_class="not-a-qos")) is None


def test_only_a_partition_counts_the_default_qos_and_says_so() -> None:
    found = request_priority(CFG, SNAP, PreviewRequest(gpus=1, hints={"partition": "debug"}))
    assert found is not None and found.priority == 11000
    assert "estimated: QOS normal (none given" in found.how


@pytest.mark.parametrize(
    ("hints", "said"),
    [
        ({"qos": "nosuch"}, "--qos nosuch: no such QOS (QOS: exempt, low, lowgrace, normal, urgent)"),
        ({"partition": "nosuch"}, "--partition nosuch: no such partition (partitions: debug, gpu)"),
        ({"qos": "urgent", "partition": "nosuch"}, "--partition nosuch"),
    ],
)
def test_an_unknown_qos_or_partition_names_the_known_ones(hints: dict[str, str], said: str) -> None:
    snap = make_snapshot("", "slurm", CAPTURED_AT, nodes=(Node("gpu1", 4),), jobs=())
    with pytest.raises(BadInput, match=said.replace("(", r"\(").replace(")", r"\)")):
        request_priority(CFG, snap, PreviewRequest(gpus=1, priority=5, hints=hints))


def test_a_held_job_is_previewed_at_its_priority_on_release() -> None:
    held = make_job("80", "j", "root", "ops", "urgent", 0, JobState.PENDING, CAPTURED_AT - 60, 2,
                    reason="JobHeldAdmin", qos="urgent", partition="gpu", allocation=MappingProxyType({}))  # fmt: skip
    snap = make_snapshot("lab", "slurm", CAPTURED_AT, nodes=(Node("gpu1", 4), Node("gpu2", 4)), jobs=(held,))
    found = request_priority(CFG, snap, PreviewRequest(gpus=2, job_id="80"), nice=0)
    assert found is not None and found.priority == 101000
    assert found.how.startswith("job 80 is held (JobHeldAdmin: held by an operator")
    # nice lowers it; an unread nice is said to be estimated
    assert request_priority(CFG, snap, PreviewRequest(gpus=2, job_id="80"), nice=500).priority == 100500  # type: ignore[union-attr]
    assert "nice 0 (not read)" in request_priority(CFG, snap, PreviewRequest(gpus=2, job_id="80")).how  # type: ignore[union-attr]


def test_a_job_not_held_keeps_its_priority() -> None:
    job = make_job("81", "j", "root", "ops", "low", 2000, JobState.PENDING, CAPTURED_AT - 60, 1, qos="low")
    snap = make_snapshot("lab", "slurm", CAPTURED_AT, nodes=(Node("gpu1", 4),), jobs=(job,))
    assert request_priority(CFG, snap, PreviewRequest(gpus=1, job_id="81")) is None


def test_estimated_factors_are_named() -> None:
    show = dict(SHOW, PriorityWeightFairShare="5000", PriorityWeightJobSize="100", PriorityWeightAssoc="10",
                PriorityWeightTRES="CPU=1000,GRES/gpu=2000", PrioritySiteFactorPlugin="site_factor/x")  # fmt: skip
    est = estimate_priority(parse_weights(show), qos_priority=1000, qos_max=1000, partition_factor=1,
                            partition_max=1, nodes=1, cluster_nodes=2)  # fmt: skip
    assert est.priority == 101000 + 2500 + 50
    said = " ".join(est.estimated)
    for word in ("fairshare", "job size", "assoc", "TRES", "site"):
        assert word in said
    flat = estimate_priority(parse_weights(dict(SHOW, PriorityFlags="NO_NORMAL_QOS")), qos_priority=1,
                             qos_max=1000, partition_factor=1, partition_max=1)  # fmt: skip
    assert flat.priority == 100000 + 1000


def test_a_cluster_without_multifactor_keeps_the_request() -> None:
    basic = PreemptConfig("preempt/qos", qos=CFG.qos, partitions=CFG.partitions,
                          weights=parse_weights(dict(SHOW, PriorityType="priority/basic")))  # fmt: skip
    assert request_priority(basic, SNAP, PreviewRequest(gpus=1, hints={"qos": "urgent"})) is None


# ------------------------------------------------------------------ the CLI on the stand-in CLIs


def _gpuq(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--backend", "slurm", *args], obj=Injected(clock=captured_clock))
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.usefixtures("fake")
def test_cli_what_if_by_qos_counts_slurmctlds_priority(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    code, out, err = _gpuq("preview", "--gpus", "2", "--qos", "urgent", "-o", "json")
    assert code == 0, err
    request = json.loads(out)["request"]
    assert request["priority"] == 101000  # not the QOS's own Priority (1000)
    assert "as slurmctld would give a new job (QOS urgent, partition gpu)" in request["priority_note"]
    code, out, err = _gpuq("preview", "--gpus", "2", "--qos", "urgent")
    assert code == 0, err
    assert out.splitlines()[0].startswith("note: priority as slurmctld would give a new job")


@pytest.mark.usefixtures("fake")
@pytest.mark.parametrize(
    ("flag", "known"),
    [("--qos", "(QOS: exempt, low, lowgrace, normal, urgent)"), ("--partition", "(partitions: debug, gpu)")],
)
def test_cli_unknown_qos_or_partition_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flag: str, known: str
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    code, out, err = _gpuq("preview", "--gpus", "2", flag, "nosuch", "--priority", "5")
    assert code == 2
    assert f"{flag} nosuch: no such" in err and known in err
    assert "Traceback" not in err + out
    assert os.environ["SLURM_CONF"]  # (the stand-in's cluster)
