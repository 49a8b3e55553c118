"""Service checks from issue 9: a what-if preview's class and priority are validated; lifting an
exemption a job does not have is a no-op that says so; a bump's outcome agrees with what the
operator was shown, or says what really happened."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuq.audit import AuditLog
from gpuq.backends.demo import DemoBackend
from gpuq.backends.snapshot_file import SnapshotFileBackend
from gpuq.config import PolicySource
from gpuq.errors import BadInput
from gpuq.model import JobState
from gpuq.policy.config import DEFAULT_POLICY, ClassPolicy, Policy
from gpuq.service import Cluster
from tests.cli.conftest import FakeBackend

SMALL = Path(__file__).resolve().parents[1] / "fixtures" / "snapshots" / "small.json"
T0 = 1_800_000_000.0


def _file_cluster(policy: Policy = DEFAULT_POLICY) -> Cluster:
    return Cluster(SnapshotFileBackend(SMALL), "file", PolicySource(policy, "test"), AuditLog(Path("/nonexistent/a")))


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"job_class": "nosuch"}, r"^--class nosuch: no such class on cluster \S+ \(classes: low, normal, urgent\)$"),
        ({"priority": -500}, r"^--priority -500: priority must be an integer from 0 to 1000000 \(use --urgent"),
        ({"priority": 10**7}, r"^--priority 10000000: priority must be an integer from 0 to 1000000"),
        (
            {"priority": 5, "urgent": True},
            r"^give --priority or --urgent, not both \(--urgent previews at the "
            r"policy's urgent priority, 1000000\)$",
        ),
    ],
)
def test_what_if_requests_are_validated(kwargs: dict[str, object], error: str) -> None:
    cluster = _file_cluster()
    snapshot = cluster.snapshot()
    with pytest.raises(BadInput, match=error):
        cluster.what_if_request(snapshot, gpus=1, **kwargs)  # type: ignore[arg-type]


def test_a_jobs_own_preview_is_validated_the_same_way() -> None:
    cluster = _file_cluster()
    snapshot = cluster.snapshot()
    with pytest.raises(BadInput, match="--priority -500: priority must be"):
        cluster.job_request("201", snapshot, priority=-500)
    with pytest.raises(BadInput, match="not both"):
        cluster.job_request("201", snapshot, priority=5, urgent=True)
    assert cluster.job_request("201", snapshot, priority=900).priority == 900


def test_valid_what_if_requests_pass() -> None:
    # A class the policy defines counts as well as the cluster's own.
    cluster = _file_cluster(Policy(classes={"burst": ClassPolicy(preemptible=True)}))
    snapshot = cluster.snapshot()
    assert cluster.what_if_request(snapshot, gpus=2, job_class="burst").job_class == "burst"
    assert cluster.what_if_request(snapshot, gpus=2, job_class="low", priority=0).priority == 0
    assert cluster.what_if_request(snapshot, gpus=2, urgent=True).urgent
    assert cluster.preview(cluster.what_if_request(snapshot, gpus=1, priority=1000000)).plan.request.gpus == 1


@pytest.fixture
def fake() -> type[FakeBackend]:
    FakeBackend.reset()
    return FakeBackend


def test_lifting_an_exemption_the_job_does_not_have_is_an_audited_no_op(
    tmp_path: Path, fake: type[FakeBackend]
) -> None:
    log = AuditLog(tmp_path / "audit.jsonl")
    cluster = Cluster(fake(), "fake", PolicySource(DEFAULT_POLICY, "test"), log)
    pending = cluster.prepare_exempt("101", off=True)  # 101 is not exempt
    assert pending.noop and pending.commands == ()
    outcome = pending.confirm()
    assert outcome.result.message == "job 101 is not exempt: there was no exemption to lift; nothing changed"
    assert fake.state["calls"] == []  # the backend was not asked to change anything
    records = [e.record for e in log.entries() if e.record is not None]
    assert [(r["phase"], r["result"], r["noop"], r["commands"]) for r in records] == [("outcome", "ok", True, [])]
    # A job that is exempt is lifted as before (not a no-op).
    lift = cluster.prepare_exempt("103", off=True)
    assert not lift.noop and lift.message != outcome.result.message
    lift.confirm()
    assert [c[0] for c in fake.state["calls"]] == ["exempt"]


class _Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


def _demo(tmp_path: Path) -> tuple[Cluster, DemoBackend, _Clock]:
    clock = _Clock()
    backend = DemoBackend(state_dir=tmp_path / "state", clock=clock, speed=0.001)
    cluster = Cluster(backend, "demo", PolicySource(backend.policy, "demo"), AuditLog(tmp_path / "audit.jsonl"))
    return cluster, backend, clock


def _a_pending_job_that_would_preempt(cluster: Cluster, clock: _Clock) -> tuple[str, list[str]]:
    for _ in range(60):
        snapshot = cluster.refresh()
        for job in snapshot.jobs:
            if job.state is JobState.PENDING:
                plan = cluster.preview(cluster.job_request(job.id, snapshot, priority=900000), snapshot).plan
                if plan.would_preempt and len(plan.victims) >= 1:
                    return job.id, [v.job_id for v in plan.victims]
        clock.now += 600
    raise AssertionError("the demo never showed a pending job whose bump would preempt")


def test_a_bumps_outcome_names_the_victims_it_was_shown(tmp_path: Path) -> None:
    cluster, _, clock = _demo(tmp_path)
    job_id, _ = _a_pending_job_that_would_preempt(cluster, clock)
    pending = cluster.prepare_bump(job_id, to=900000)
    assert pending.plan.foreseen is not None and pending.preview is not None
    shown = {v.job_id: v.nodes for v in pending.preview.plan.victims}
    assert dict(pending.plan.foreseen.victims) == shown
    outcome = pending.confirm()
    assert outcome.result.preempted == shown
    assert not any("not as previewed" in w for w in outcome.result.warnings)
    assert outcome.record["preempted"] == {k: list(v) for k, v in shown.items()}
    assert cluster.refresh().job(job_id).state is JobState.RUNNING  # type: ignore[union-attr]


def test_a_bump_whose_preview_went_stale_reports_what_really_happened(tmp_path: Path) -> None:
    cluster, _, clock = _demo(tmp_path)
    job_id, victims = _a_pending_job_that_would_preempt(cluster, clock)
    pending = cluster.prepare_bump(job_id, to=900000)
    # Between the preview and the confirmation, its victims became exempt.
    for victim in victims:
        cluster.prepare_exempt(victim, for_s=7200.0).confirm()
    outcome = pending.confirm()
    actual = outcome.result.preempted
    assert actual is not None and not set(actual) & set(victims)
    warning = next(w for w in outcome.result.warnings if "not as previewed" in w)
    assert all(v in warning for v in victims)
    assert "(not as previewed)" in outcome.result.message
    assert outcome.record["preempted"] == {k: list(v) for k, v in actual.items()}
