"""Processes mapped to Slurm jobs and Kubernetes pods from fake /proc trees (real-format lines)."""

from __future__ import annotations

import pytest

from gpuq.backends.nvml import job_of_process
from tests.nvml.conftest import FakeProc, ReaderFor
from tests.nvml.fakenvml import GIB, FakeNvml, h100

POD = "1b2c3d4e-5f6a-7b8c-9d0e-1f2a3b4c5d6e"
CONTAINER = "0f4c2b4e7d1a9c3b5e8f6a2d4c1b3e5f7a9c8d6e4b2a1c3e5f7d9b8a6c4e2f1d"
V1_SLURM = "\n".join(f"{n}:{c}:/slurm/uid_1000/job_1234/step_0/task_0" for n, c in
                     ((12, "pids"), (11, "devices"), (4, "memory"), (3, "cpuset"), (2, "cpu,cpuacct")))  # fmt: skip


@pytest.mark.parametrize(
    ("cgroup", "job", "pod"),
    [
        ("0::/system.slice/slurmstepd.scope/job_1234/step_0/user/task_0\n", "1234", None),
        ("0::/system.slice/slurmstepd.scope/job_1234/step_batch/user/task_0\n", "1234", None),
        # several slurmd on one host (multiple-slurmd): one scope per node name
        ("0::/system.slice/gpu-a07_slurmstepd.scope/job_98/step_extern/user/task_special\n", "98", None),
        (V1_SLURM + "\n1:name=systemd:/system.slice/slurmd.service\n", "1234", None),
        # v1 with several slurmd: /slurm_<node>/
        ("11:devices:/slurm_gpu-a07/uid_0/job_77/step_0/task_1\n", "77", None),
        # Kubernetes, systemd driver (v2): the pod UID's dashes written as underscores
        (
            f"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{POD.replace('-', '_')}.slice/"
            f"cri-containerd-{CONTAINER}.scope\n",
            None,
            POD,
        ),
        # Guaranteed QoS: straight under kubepods.slice
        (f"0::/kubepods.slice/kubepods-pod{POD.replace('-', '_')}.slice/crio-{CONTAINER}.scope\n", None, POD),
        # cgroupfs driver, v1
        (
            f"11:devices:/kubepods/burstable/pod{POD}/{CONTAINER}\n4:memory:/kubepods/burstable/pod{POD}/{CONTAINER}\n",
            None,
            POD,
        ),
        # cgroupfs driver, v2, besteffort
        (f"0::/kubepods/besteffort/pod{POD}/{CONTAINER}\n", None, POD),
        # a static pod: its UID is a 32-digit hash
        (
            f"0::/kubepods/burstable/pod6f1e2d3c4b5a69788796a5b4c3d2e1f0/{CONTAINER}\n",
            None,
            "6f1e2d3c4b5a69788796a5b4c3d2e1f0",
        ),
        # a login shell, a plain service, a container's own namespace: neither
        ("0::/user.slice/user-1000.slice/session-3.scope\n", None, None),
        ("0::/system.slice/docker-abc.scope\n", None, None),
        ("0::/\n", None, None),
        # look-alikes that are neither
        ("0::/system.slice/job_12abc/x\n", None, None),
        ("0::/kubepods/burstable/podcast/x\n", None, None),
    ],
)
def test_cgroup_lines(proc: FakeProc, cgroup: str, job: str | None, pod: str | None) -> None:
    proc.add(100, cgroup=cgroup)
    assert job_of_process(100, proc.root) == (job, pod)


def test_environment_when_the_cgroup_says_nothing(proc: FakeProc) -> None:
    proc.add(5, cgroup="0::/user.slice/user-1000.slice/session-3.scope\n",
             environ={"HOME": "/home/a", "SLURM_JOB_ID": "4321", "SLURM_JOB_NAME": "x=y"})  # fmt: skip
    assert job_of_process(5, proc.root) == ("4321", None)


def test_array_task_from_the_environment(proc: FakeProc) -> None:
    """The cgroup names the task's own job id (1240); gpuq shows it as 1234_5."""
    env = {"SLURM_JOB_ID": "1240", "SLURM_ARRAY_JOB_ID": "1234", "SLURM_ARRAY_TASK_ID": "5"}
    proc.add(6, cgroup="0::/system.slice/slurmstepd.scope/job_1240/step_0/user/task_0\n", environ=env)
    assert job_of_process(6, proc.root) == ("1234_5", None)
    proc.add(7, environ=env)  # no cgroup file at all
    assert job_of_process(7, proc.root) == ("1234_5", None)


def test_the_cgroup_wins_over_a_stale_environment(proc: FakeProc) -> None:
    """A process started under job 9 that moved into job 10's cgroup (e.g. through `srun --jobid`)."""
    env = {"SLURM_JOB_ID": "9", "SLURM_ARRAY_JOB_ID": "8", "SLURM_ARRAY_TASK_ID": "1"}
    proc.add(8, cgroup="0::/system.slice/slurmstepd.scope/job_10/step_0/user/task_0\n", environ=env)
    assert job_of_process(8, proc.root) == ("10", None)


def test_environment_values_that_are_not_ids_are_ignored(proc: FakeProc) -> None:
    proc.add(9, environ={"SLURM_JOB_ID": "12; rm -rf /", "SLURM_ARRAY_JOB_ID": "\x1b[2J", "SLURM_ARRAY_TASK_ID": "1"})
    assert job_of_process(9, proc.root) == (None, None)


def test_unreadable_or_missing_entries_are_none(proc: FakeProc) -> None:
    proc.unreadable(11, "cgroup", "environ", "cmdline", "comm")
    assert job_of_process(11, proc.root) == (None, None)
    assert job_of_process(12, proc.root) == (None, None)  # exited, or another PID namespace
    proc.add(13, cgroup="\xff\xfe garbage without colons")
    assert job_of_process(13, proc.root) == (None, None)


def test_the_reader_maps_every_process(reader_for: ReaderFor, proc: FakeProc) -> None:
    proc.add(100, cgroup="0::/system.slice/slurmstepd.scope/job_101/step_0/user/task_0\n",
             cmdline=["/opt/conda/bin/python", "train.py"])  # fmt: skip
    proc.add(200, cgroup=f"0::/kubepods/burstable/pod{POD}/{CONTAINER}\n", cmdline=["torchrun", "--nproc=8"])
    proc.add(300, cgroup="0::/\n", cmdline=[], comm="nvidia-smi")  # a zombie's empty cmdline: comm
    proc.unreadable(400, "cgroup", "environ", "cmdline", "comm")
    fake = FakeNvml([h100(0, compute=[(100, GIB), (200, 2 * GIB)]), h100(1, compute=[(300, None), (400, 1), (500, 2)])])
    gpus = reader_for(fake).read().gpus
    seen = [(p.pid, p.job_id, p.pod_uid, p.command) for g in gpus for p in g.processes]
    assert seen == [
        (100, "101", None, "/opt/conda/bin/python train.py"),
        (200, None, POD, "torchrun --nproc=8"),
        (300, None, None, "nvidia-smi"),
        (400, None, None, ""),
        (500, None, None, ""),
    ]
    assert all(g.error is None for g in gpus)
