"""SlurmBackend against stand-in Slurm CLIs: error mapping, hung and broken commands, prepared
action plans (a dry run is a plan never applied).

The stand-ins replay real 22.05 output from tests/fixtures; the lab tests cover the real thing.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from gpuq.backends.base import ActionPlan, PriorityChange
from gpuq.errors import BadInput, NotFound, PermissionDenied, Refused, Unreachable
from gpuq.model import Job, JobState
from gpuq.policy.config import UNGUARDED_POLICY, Mode
from gpuq.views.job import pending_reasons
from tests.factories import make_job, make_snapshot
from tests.slurm.samples import LIVE, stand_in

SCONTROL = f"""#!/bin/bash
echo "scontrol $*" >> "$FAKE_LOG"
case "$1 $2" in
  "show config") cat {LIVE}/scontrol-show-config.txt ;;
  "show partition") cat {LIVE}/scontrol-show-partition-o.txt ;;
  "show job")
    # FAKE_JOBS_FILE: the jobs as a later read finds them (a job changed since the last one).
    if [ -n "$5" ]; then grep "^JobId=$5 " "${{FAKE_JOBS_FILE:-{LIVE}/scontrol-show-job-d-o.txt}}" || {{
      echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1; }}
    elif [ -n "${{FAKE_FULL_ERR:-}}" ]; then echo "$FAKE_FULL_ERR" >&2; exit 1
    else sed -E "s/^(JobId=${{FAKE_FULL_RESTARTED:-none}} .* StartTime=)[^ ]+/\\12020-01-01T00:00:00/" \\
      {LIVE}/scontrol-show-job-d-o.txt; fi ;;
  "show assoc_mgr")
    # Only with FAKE_ASSOC_MGR: by default slurmctld names no QOS and sacct prints names.
    if [ -n "${{FAKE_ASSOC_MGR:-}}" ]; then
      grep -v "^QOS=${{FAKE_ASSOC_MGR_DROP:-none}}(" {LIVE}/scontrol-show-assoc_mgr-qos.txt; fi ;;
  *) echo "${{FAKE_UPDATE_ERR:-}}" >&2; [ -z "${{FAKE_UPDATE_ERR:-}}" ] ;;
esac
"""

# QOSRAW requests get the capture of that form; QOS-name requests the default capture (or, with
# FAKE_SACCT_NAMES, the names capture taken at the same moment as the QOSRAW one).
SACCT = f"""#!/bin/bash
echo "sacct $*" >> "$FAKE_LOG"
case "$*" in
  *QOSRAW*) cat {LIVE}/sacct-parsable-qosraw.txt ;;
  *) cat {LIVE}/${{FAKE_SACCT_NAMES:-sacct-parsable.txt}} ;;
esac
"""


def _tool(bindir: Path, name: str, body: str) -> None:
    path = bindir / name
    path.write_text(body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    _tool(bindir, "scontrol", SCONTROL)
    _tool(bindir, "squeue", f'#!/bin/bash\necho "squeue $*" >> "$FAKE_LOG"\ncat {LIVE}/squeue-format.txt\n')
    _tool(bindir, "sinfo", f"#!/bin/bash\ncat {LIVE}/sinfo-format.txt\n")
    _tool(bindir, "sacct", SACCT)
    _tool(bindir, "sacctmgr", f'#!/bin/bash\necho "sacctmgr $*" >> "$FAKE_LOG"\ncat {LIVE}/sacctmgr-show-qos.txt\n')
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=fake\nSlurmctldHost=ctl01(10.1.2.3)\nSlurmctldPort=6817\n")
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("SLURM_CONF", str(conf))
    monkeypatch.setenv("FAKE_LOG", str(tmp_path / "calls.log"))
    (tmp_path / "calls.log").write_text("")
    return bindir


def _calls(bindir: Path) -> list[str]:
    return (bindir.parent / "calls.log").read_text().splitlines()


def test_snapshot_from_replayed_output(fake: Path) -> None:
    snap = stand_in().snapshot()
    assert snap.cluster == "gpuqlab"
    assert snap.backend == "slurm"
    ids = {j.id for j in snap.jobs}
    assert {"64", "65_0", "66+1", "68", "73"} <= ids
    assert {c.name: c.preemptible for c in snap.classes}["urgent"] is False
    assert {c.name: c.preemptible for c in snap.classes}["low"] is True
    # Every CLI call used an argument list: the separator reached squeue unmangled.
    assert any("--Format=JobID:\x1f" in c for c in _calls(fake))


def test_history_is_cached_by_time_window(fake: Path) -> None:
    backend = stand_in(history_ttl_s=0)
    backend.snapshot()
    backend.snapshot()
    sacct = [c for c in _calls(fake) if c.startswith("sacct ")]
    assert len(sacct) == 2
    assert backend.history_cache.reads == 2
    # The second read starts where the first ended (minus an overlap), not a day back.
    first, second = (c.split(" -S ")[1].split()[0] for c in sacct)
    assert second > first


def test_cluster_option_is_passed_as_dash_m(fake: Path) -> None:
    stand_in(cluster="prod").snapshot()
    assert any(c.startswith("squeue -M prod ") for c in _calls(fake))


def test_hung_cli_is_unreachable_naming_the_command(fake: Path) -> None:
    _tool(fake, "squeue", "#!/bin/bash\nsleep 5\n")
    with pytest.raises(Unreachable, match=r"`squeue -h -a --Format=.*` did not answer within 0.5s.*10\.1\.2\.3:6817"):
        stand_in(timeout_s=0.5).snapshot()


def test_truncated_output_is_bad_input_naming_the_command(fake: Path) -> None:
    _tool(fake, "squeue", f"#!/bin/bash\nhead -c 700 {LIVE}/squeue-format.txt\n")
    with pytest.raises(BadInput, match=r"`squeue --Format`: line \d+: .* \(truncated output\?\)"):
        stand_in().snapshot()


def test_controller_down_is_unreachable_with_its_address(fake: Path) -> None:
    message = "slurm_load_jobs error: Unable to contact slurm controller (connect failure)"
    _tool(fake, "squeue", f"#!/bin/bash\necho '{message}' >&2\nexit 1\n")
    with pytest.raises(Unreachable, match=r"slurmctld at 10\.1\.2\.3:6817 .* is unreachable"):
        stand_in().snapshot()


def test_unknown_job_is_not_found(fake: Path) -> None:
    with pytest.raises(NotFound, match="no job 99999"):
        stand_in().prepare_bump("99999", PriorityChange(to=5), reason="t")
    with pytest.raises(NotFound, match="Slurm job ids look like"):
        stand_in().prepare_bump("--help", PriorityChange(to=5), reason="t")


@pytest.mark.parametrize("message", ["Invalid user id for job 69", "Access/permission denied for job 69"])
def test_permission_denied_names_the_privilege(fake: Path, monkeypatch: pytest.MonkeyPatch, message: str) -> None:
    monkeypatch.setenv("FAKE_UPDATE_ERR", message)
    backend = stand_in()
    plan = backend.prepare_bump("69", PriorityChange(to=9000), reason="t")
    with pytest.raises(PermissionDenied, match="operator or admin"):
        backend.apply(plan)


def test_prepared_plans_run_nothing_mutating(fake: Path) -> None:
    """Preparing fixes the exact command lines and runs none of them (a dry run is just that)."""
    backend = stand_in(urgent_qos="urgent", exempt_qos="exempt")
    bump = backend.prepare_bump("69", PriorityChange(to=9000), reason="t")
    assert isinstance(bump, ActionPlan)
    assert bump.commands == (("scontrol", "update", "JobId=69", "Priority=9000"),)
    assert bump.before["priority"] == 5000
    assert bump.after["priority"] == 9000
    assert any("hold/release" in w for w in bump.warnings)
    urgent = backend.prepare_bump("69", PriorityChange(urgent=True), reason="t")
    assert urgent.commands == (("scontrol", "update", "JobId=69", "QOS=urgent"),)
    ex = backend.prepare_exempt("69", 1_800_000_000.0, reason="t")
    assert ex.commands == (
        (
            "scontrol",
            "update",
            "JobId=69",
            "QOS=exempt",
            "AdminComment=gpuq:exempt-until=2027-01-15T08:00:00Z;gpuq:prev-qos=low",
        ),
    )
    pre = backend.prepare_preempt("73", Mode.GRACEFUL, reason="t")
    assert pre.commands == (("scancel", "--signal=TERM", "--full", "73"), ("scontrol", "requeue", "73"))
    assert not [c for c in _calls(fake) if "update" in c or "requeue" in c or c.startswith("scancel")]


def test_exempt_off_restores_the_recorded_qos(fake: Path) -> None:
    backend = stand_in(exempt_qos="exempt")
    # Job 64 carries gpuq:exempt-until=...;gpuq:prev-qos=low in its AdminComment (from the capture).
    plan = backend.prepare_exempt("64", None, reason="t")
    assert plan.before["exempt_until"] is not None
    assert plan.commands == (("scontrol", "update", "JobId=64", "AdminComment="),)  # already low: no QOS change
    running = backend.prepare_exempt("73", 1_800_000_000.0, reason="t")
    assert all(not a.startswith("QOS=") for a in running.commands[0])
    assert any("only changes the QOS of pending jobs" in w for w in running.warnings)


def test_preempting_a_pending_job_is_refused(fake: Path) -> None:
    with pytest.raises(Refused, match="job 69 is pending"):
        stand_in().prepare_preempt("69", Mode.REQUEUE, reason="t")


def test_squeue_without_the_extra_fields_falls_back(fake: Path) -> None:
    body = (
        "#!/bin/bash\n"
        'case "$*" in *admin_comment*) echo "squeue: error: Invalid job format specification: admin_comment" >&2;'
        f" exit 1;; esac\ncat {LIVE}/squeue-format.txt\n"
    )
    _tool(fake, "squeue", body)
    snap = stand_in().snapshot()
    job = snap.job("64")
    assert job is not None
    assert job.exempt_until is not None
    assert any(c == "scontrol show job -d -o" for c in _calls(fake))


def test_history_returns_finished_jobs(fake: Path) -> None:
    jobs = {j.id: j for j in stand_in().history(since=0.0)}
    assert jobs["48"].state is JobState.PREEMPTED or jobs["48"].state is JobState.CANCELLED
    assert jobs["48"].preemption_times  # its PREEMPTED run
    assert all(j.state is not JobState.RUNNING for j in jobs.values())


@pytest.mark.parametrize(
    ("message", "error", "text"),
    [
        ("slurm_update error: Invalid job id specified", NotFound, "no job 12 on cluster prod"),
        ("Access/permission denied for job 12", PermissionDenied, "operator or admin"),
        ("Invalid user id for job 12", PermissionDenied, "operator or admin"),
        ("scancel: error: Kill job error on job id 12: Access/permission denied", PermissionDenied, "operator"),
        ("slurm_load_jobs error: Unable to contact slurm controller (connect failure)", Unreachable, "10.1.2.3:6817"),
        ("scontrol: error: No cluster 'prod' known by database.", NotFound, "no cluster 'prod'"),
        ("Job is pending execution for job 12", Refused, "failed: Job is pending execution"),
    ],
)
def test_error_mapping(fake: Path, message: str, error: type[Exception], text: str) -> None:
    from gpuq.backends.slurm.runner import Runner

    mapped = Runner("prod").error(["scontrol", "-M", "prod", "update", "JobId=12"], message, what="12")
    assert isinstance(mapped, error)
    assert text in str(mapped)


def test_sacctmgr_never_gets_dash_m() -> None:
    from gpuq.backends.slurm.runner import Runner

    assert Runner("prod").argv(["sacctmgr", "-n", "show", "qos"]) == ["sacctmgr", "-n", "show", "qos"]
    assert Runner("prod").argv(["squeue", "-h"]) == ["squeue", "-M", "prod", "-h"]


def test_the_captured_qos_set_up_says_whom_each_class_may_preempt(fake: Path) -> None:
    """The lab's qos mode (sacctmgr-show-qos.txt): normal has Preempt=low, urgent
    Preempt=low,lowgrace,normal; the others preempt nobody."""
    snap = stand_in().snapshot()
    allowed = {c.name: c.may_preempt for c in snap.classes}
    assert allowed == {"normal": ("low",), "low": (), "lowgrace": (), "exempt": (),
                       "urgent": ("low", "lowgrace", "normal")}  # fmt: skip


def test_a_normal_job_is_never_told_it_could_preempt_a_lowgrace_one(fake: Path) -> None:
    """On the captured set-up, a pending normal job beside young lowgrace jobs (the cheapest to
    stop) and older low ones: gpuq names only the low ones, as slurmctld would take them."""
    captured = stand_in().snapshot()
    now = captured.now
    run = JobState.RUNNING

    def job(jid: str, qos: str, node: str, ran: float) -> Job:
        return make_job(jid, jid, "u", "t", qos, 10, run, now - ran - 60, 2, start_time=now - ran,
                        allocation={node: (0, 1) if jid in ("4", "6") else (2, 3)}, qos=qos)  # fmt: skip

    jobs = (job("3", "low", "gpu1", 7200.0), job("4", "low", "gpu1", 3600.0), job("5", "lowgrace", "gpu2", 120.0),
            job("6", "lowgrace", "gpu2", 60.0),
            make_job("7", "n", "u", "t", "normal", 100, JobState.PENDING, now - 30, 4, qos="normal"))  # fmt: skip
    snap = make_snapshot("gpuqlab", "slurm", now, captured.classes, captured.nodes, jobs)
    lines, plan = pending_reasons(snap, UNGUARDED_POLICY, snap.job("7"), now)  # type: ignore[arg-type]
    assert plan is not None and sorted(v.job_id for v in plan.victims) == ["3", "4"]
    assert any(line.startswith("under gpuq's policy it could preempt 2 job(s) (4, 3) on gpu1") for line in lines)
    assert {c.job_id: c.reason.value for c in plan.spared} == {"5": "cluster", "6": "cluster"}
