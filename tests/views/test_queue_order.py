"""One order for pending jobs everywhere (issue 31): the queue view's default order among its
pending rows is `gpuq.policy.order.pending_order`, and each pending job's place in it is what
`gpuq job` says is ahead of it (`queue_position`), the overview's top pending list its head; on
Slurm, ties go to the earlier submit time then the lower id, as slurmctld breaks them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuq.config import PolicySource
from gpuq.model import Job, JobClass, JobState, Node, Snapshot
from gpuq.model.codec import encode_snapshot
from gpuq.policy.config import Policy
from gpuq.policy.order import pending_order, queue_position, tie_field
from gpuq.service import Cluster
from gpuq.views.job import pending_reasons
from gpuq.views.overview import overview_view
from gpuq.views.queue import QueueFilter, queue_rows
from tests.factories import make_job, make_snapshot
from tests.properties import examples

NOW = 1_800_000_000.0
CLASSES = (JobClass("urgent", 1000, False, 600, 1800), JobClass("normal", 100, True, 3600, 3600),
           JobClass("low", 10, True))  # fmt: skip
PENDING, RUNNING = JobState.PENDING, JobState.RUNNING


def _cluster(snapshot: Snapshot, policy: Policy) -> Cluster:
    from gpuq.backends.snapshot_file import SnapshotFileBackend

    backend = SnapshotFileBackend("-")
    backend._snapshot = snapshot
    return Cluster(backend, "snapshot", PolicySource(policy, "test"))


def _shown(snapshot: Snapshot, policy: Policy, reverse: bool = False) -> list[str]:
    """The pending jobs' ids in the queue view's default order."""
    rows = queue_rows(_cluster(snapshot, policy), snapshot, QueueFilter(reverse=reverse))
    return [r.job.id for r in rows if r.job.is_pending]


@st.composite
def _jobs(draw: Any, job_id: str) -> Job:
    """Many ties: few priorities, submit times a second apart or equal, eligibility sometimes later."""
    state = draw(st.sampled_from([PENDING, PENDING, PENDING, RUNNING]))
    submit = NOW - draw(st.sampled_from([600.0, 3000.0, 3001.0, 7200.0]))
    return make_job(
        job_id, "n", "u", "t", draw(st.sampled_from([c.name for c in CLASSES])),
        draw(st.sampled_from([10, 100, 100, 1000])), state, submit, draw(st.integers(0, 4)),
        eligible_time=draw(st.sampled_from([None, submit, submit + 300.0, submit + 2400.0])),
        start_time=NOW - 60 if state is RUNNING else None, urgent=draw(st.booleans()) and draw(st.booleans()),
    )  # fmt: skip


@st.composite
def _snapshots(draw: Any) -> Snapshot:
    ids = draw(st.lists(st.one_of(st.integers(1, 60).map(str), st.sampled_from(["12_1", "12_2", "12_10", "a1", "007"])),
                        min_size=1, max_size=14, unique=True))  # fmt: skip
    jobs = draw(st.permutations([draw(_jobs(job_id)) for job_id in ids]))
    return make_snapshot("c", draw(st.sampled_from(["slurm", "demo", "snapshot"])), NOW, CLASSES, (), jobs)


_POLICIES = st.sampled_from([Policy(), Policy(default_aging_rate=10.0), Policy(default_aging_rate=0.0)])


@settings(max_examples=examples(300), deadline=None)
@given(_snapshots(), _POLICIES)
def test_the_queue_view_is_the_one_order_and_says_what_gpuq_job_says(snapshot: Snapshot, policy: Policy) -> None:
    """The view's passes are a quick form of sorting by `pending_order`; each pending job's place
    among the pending rows is its `queue_position`; `--reverse` turns the order round."""
    pending = [j for j in snapshot.jobs if j.is_pending]
    want = [j.id for j in sorted(pending, key=pending_order(snapshot, policy, NOW))]
    shown = _shown(snapshot, policy)
    assert shown == want
    by_id = {j.id: j for j in pending}
    assert [queue_position(snapshot, policy, by_id[i], NOW) for i in shown] == list(range(len(shown)))
    assert _shown(snapshot, policy, reverse=True) == shown[::-1]


def _snap(backend: str, *jobs: Job) -> Snapshot:
    return make_snapshot("c", backend, NOW, CLASSES, (Node("n1", 8),), jobs)


def _pending(job_id: str, submit: float, eligible: float | None = None) -> Job:
    return make_job(job_id, job_id, "u", "t", "normal", 100, PENDING, submit, 2, eligible_time=eligible,
                    reason="Priority")  # fmt: skip


def _ahead_line(snapshot: Snapshot, job_id: str) -> str:
    job = next(j for j in snapshot.jobs if j.id == job_id)
    lines = pending_reasons(snapshot, Policy(), job, NOW)[0]
    return next(line for line in lines if "GPUs are free now" in line)


def test_the_issues_case_one_order_in_the_queue_the_job_view_and_the_overview() -> None:
    """Equal effective priority; 1001 submitted earlier but eligible later than 1002. gpuq's own
    order (queued since) puts 1002 first, Slurm's (submit time) 1001; each view agrees with it."""
    jobs = (_pending("1001", NOW - 3000, NOW - 600), _pending("1002", NOW - 1800, NOW - 1800))
    for backend, first, second in (("demo", "1002", "1001"), ("slurm", "1001", "1002")):
        snapshot = _snap(backend, *jobs)
        assert _shown(snapshot, Policy()) == [first, second]
        assert _ahead_line(snapshot, first).endswith("it should start at the next scheduling pass")
        assert _ahead_line(snapshot, second).endswith("1 higher-priority pending jobs are ahead of it")
        top = overview_view(_cluster(snapshot, Policy()), snapshot).top_pending
        assert [t.id for t in top] == [first, second]


def test_slurm_ties_in_one_submit_second_go_to_the_lower_id(tmp_path: Path) -> None:
    """squeue lists the jobs of one submit second by descending id; slurmctld starts the lowest id
    first, and so does gpuq's queue (`gpuq queue` and `gpuq job` on a Slurm snapshot file)."""
    jobs = [_pending(job_id, NOW - 120.0) for job_id in ("1005", "1004", "1003")]
    snapshot = _snap("slurm", *jobs)
    assert tie_field(snapshot) == "submit_time"
    assert _shown(snapshot, Policy()) == ["1003", "1004", "1005"]
    path = tmp_path / "slurm.json"
    path.write_bytes(encode_snapshot(snapshot))
    from gpuq.cli.main import cli

    listed = CliRunner().invoke(cli, ["--snapshot", str(path), "-o", "json", "queue"], prog_name="gpuq")
    assert listed.exit_code == 0, listed.output
    assert [j["id"] for j in json.loads(listed.stdout)["jobs"]] == ["1003", "1004", "1005"]
    told = CliRunner().invoke(cli, ["--snapshot", str(path), "job", "1005"], prog_name="gpuq")
    assert told.exit_code == 0, told.output
    assert "2 higher-priority pending jobs are ahead of it" in told.stdout
