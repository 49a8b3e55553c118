"""The seed demo's own three-job example: same start/finish/preemption order as seed_demo.py."""

from __future__ import annotations

import importlib.util
from dataclasses import replace
from pathlib import Path
from types import ModuleType

import pytest

from gpuq.model import JobClass
from gpuq.policy.config import UNGUARDED_POLICY, Mode
from gpuq.sim import ClusterSpec, JobSpec, Simulator, convert

SEED_DEMO = Path(__file__).resolve().parent.parent / "fixtures" / "seed_demo.py"
LOSSLESS = replace(UNGUARDED_POLICY, mode=Mode.GRACEFUL, grace_period_s=0.0)  # like the seed: checkpoint at preemption
CLASSES = (JobClass("batch"),)


def _seed_demo() -> ModuleType:
    spec = importlib.util.spec_from_file_location("seed_demo_fixture", SEED_DEMO)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _seed_order(demo: ModuleType, jobs: list[tuple[str, int, float, float]]) -> list[tuple[str, ...]]:
    """The seed timeline as (kind, job[, preemptor]); a preemption there also starts the attacker."""
    names = {f"J{name}": name for name, *_ in jobs}
    timeline = demo.preemptive_schedule([demo.Job(f"J{n}", p, t, d) for n, p, t, d in jobs])
    order: list[tuple[str, ...]] = []
    for _, text in timeline:
        kind, _, rest = text.partition(": ")
        if kind == "启动":
            order.append(("start", names[rest]))
        elif kind == "完成":
            order.append(("finish", names[rest]))
        else:
            attacker, _, victim = rest.partition("拦截了")
            order += [("preempt", names[victim], names[attacker]), ("start", names[attacker])]
    return order


def _gpuq_order(jobs: list[tuple[str, int, float, float]], gpus: int = 1) -> list[tuple[str, ...]]:
    sim = Simulator(policy=LOSSLESS, cluster=ClusterSpec(nodes=1, gpus_per_node=gpus), classes=CLASSES, trace=True)
    sim.submit(JobSpec(n, t, d, priority=p, job_class="batch") for n, p, t, d in jobs)
    sim.run()
    assert sim.trace is not None
    return [(kind, job, by or "") if kind == "preempt" else (kind, job) for _, kind, job, by in sim.trace]


def test_three_job_example_matches_seed_demo_order() -> None:
    jobs = [("A", 5, 0.0, 10.0), ("B", 80, 1.0, 4.0), ("C", 20, 2.5, 6.0)]
    expected = [
        ("start", "A"), ("preempt", "A", "B"), ("start", "B"), ("finish", "B"),
        ("start", "C"), ("finish", "C"), ("start", "A"), ("finish", "A"),
    ]
    assert _seed_order(_seed_demo(), jobs) == expected
    assert _gpuq_order(jobs) == expected


def test_three_job_example_exact_times_and_lossless_resume() -> None:
    sim = Simulator(policy=LOSSLESS, cluster=ClusterSpec(nodes=1, gpus_per_node=1), classes=CLASSES, trace=True)
    sim.submit([JobSpec("A", 0.0, 10.0, priority=5, job_class="batch"),
                JobSpec("B", 1.0, 4.0, priority=80, job_class="batch"),
                JobSpec("C", 2.5, 6.0, priority=20, job_class="batch")])
    sim.run()
    assert sim.trace is not None
    # Event times are exact (no time step): B 1..5, C 5..11, A resumes with 1 s done, ends at 20.
    assert [(t, kind, job) for t, kind, job, _ in sim.trace] == [
        (0.0, "start", "A"), (1.0, "preempt", "A"), (1.0, "start", "B"), (5.0, "finish", "B"),
        (5.0, "start", "C"), (11.0, "finish", "C"), (11.0, "start", "A"), (20.0, "finish", "A"),
    ]
    assert [e.gpu_seconds_lost for e in convert.preemption_events(sim)] == [0.0]


def test_ties_are_ordered_deterministically_where_the_seed_demo_crashes() -> None:
    # Two jobs with equal priority and submit time: the seed's heap compares Job objects.
    jobs = [("A", 5, 0.0, 3.0), ("X", 10, 0.0, 2.0), ("B", 10, 0.0, 2.0), ("C", 10, 0.0, 2.0)]
    with pytest.raises(TypeError):
        _seed_order(_seed_demo(), jobs)
    order = _gpuq_order(jobs)
    assert order == _gpuq_order(list(reversed(jobs)))  # submission order does not matter
    starts = [job for kind, job, *_ in order if kind == "start"]
    assert starts == ["B", "C", "X", "A"]  # priority, then queued-since, then id
