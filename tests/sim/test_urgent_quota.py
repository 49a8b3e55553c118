"""Urgency within a tenant's quota: a remembered "no" must not outlive what it rested on.

An urgent head over its tenant's urgent quota is ranked at its priority without urgency. Two
things can then turn the engine's "no" into a yes without the head changing: an urgent job of
its tenant stops (the head is back within the quota, and outranks jobs on any node, not only on
the node that freed up), or that priority ages past a victim's (the queue ranks the job as
urgent, so no aging event comes). `check_fast_path` compares every shortcut with the engine.
"""

from __future__ import annotations

import random
from dataclasses import replace
from types import MappingProxyType

from gpuq.model import DAY_S, JobClass
from gpuq.policy.config import UNGUARDED_POLICY, Mode
from gpuq.sim import ClusterSpec, JobSpec, Simulator, actions, generate_jobs
from gpuq.sim.jobs import PENDING, RUNNING, SUSPENDED

from .helpers import check_invariants


def test_an_urgent_head_back_within_its_quota_preempts_on_another_node() -> None:
    classes = (JobClass("batch"), JobClass("pinned", preemptible=False))
    sim = Simulator(policy=replace(UNGUARDED_POLICY, delta=0, urgent_quota=MappingProxyType({"t": 2})),
                    cluster=ClusterSpec(nodes=2, gpus_per_node=2), classes=classes, trace=True)  # fmt: skip
    sim.check_fast_path = True  # (a "no" kept wrongly fails inside the run, at the engine's check)
    sim.submit([
        JobSpec("L", 0, 10_000, gpus=2, priority=20, job_class="batch"),  # the whole of gpu-001
        JobSpec("U", 1, 500, gpus=1, priority=10, job_class="batch", tenant="t"),
        JobSpec("X", 1, 10_000, gpus=1, priority=50, job_class="pinned"),  # gpu-002 beside U, never a victim
        JobSpec("H", 10, 100, gpus=2, priority=10, job_class="batch", tenant="t"),
    ])  # fmt: skip
    sim.run_until(5)
    actions.bump(sim, "U", urgent=True)
    sim.run_until(11)
    actions.bump(sim, "H", urgent=True)
    # U holds 1 of tenant t's 2 urgent GPUs: H (2 GPUs) is over the quota, ranked at 10 below L's 20.
    assert sim.jobs["H"].state == PENDING and sim.jobs["L"].state == RUNNING
    sim.run_until(600)  # U ends at 501 on gpu-002, where X stays: H is within its quota again
    assert [(t, kind, job, by) for t, kind, job, by in sim.trace or [] if t > 11] == [
        (501.0, "finish", "U", None),
        (501.0, "preempt", "L", "H"),
        (501.0, "start", "H", None),
    ]
    check_invariants(sim)


def test_an_urgent_job_an_operator_suspended_still_counts_against_its_tenants_quota() -> None:
    sim = Simulator(policy=replace(UNGUARDED_POLICY, delta=0, urgent_quota=MappingProxyType({"t": 4})),
                    classes=(JobClass("batch"),), cluster=ClusterSpec(nodes=2, gpus_per_node=4))  # fmt: skip
    sim.check_fast_path = True
    sim.submit([
        JobSpec("U", 0, 10_000, gpus=4, priority=10, job_class="batch", tenant="t"),
        JobSpec("L", 0, 10_000, gpus=4, priority=20, job_class="batch"),
        JobSpec("H", 10, 100, gpus=2, priority=10, job_class="batch", tenant="t"),
    ])  # fmt: skip
    sim.run_until(5)
    actions.bump(sim, "U", urgent=True)
    actions.preempt(sim, "U", mode=Mode.SUSPEND)  # U keeps its 4 GPUs, all of tenant t's quota
    sim.run_until(11)
    actions.bump(sim, "H", urgent=True)  # over the quota: ranked at 10, below L's 20
    sim.run_until(600)
    assert sim.jobs["L"].state == RUNNING and sim.jobs["H"].state == PENDING
    assert sim.jobs["U"].state == SUSPENDED and sim.gpus.total_free == 0
    actions.resume(sim, "U")
    actions.preempt(sim, "U", mode=Mode.CANCEL)  # its GPUs and the quota free: H starts there, urgent
    assert sim.jobs["H"].state == RUNNING and sim.jobs["L"].state == RUNNING
    check_invariants(sim)


def test_urgent_bumps_under_a_tenant_quota_match_the_engine() -> None:
    # Seeded cases, not hypothesis: a wrong "no" (either way above) shows up in about 1 case in
    # 100 here, so a fixed sweep catches it every run.
    for seed in range(400):
        rng = random.Random(seed)
        cluster = ClusterSpec(nodes=rng.choice([2, 3, 4]), gpus_per_node=rng.choice([2, 4]))
        policy = replace(UNGUARDED_POLICY, delta=rng.choice([0.0, 50.0]), min_runtime_s=rng.choice([0.0, 600.0]),
                        urgent_quota_default=rng.choice([1, 2, 3, 4]))  # fmt: skip
        sim = Simulator(policy=policy, cluster=cluster, history_limit=10**6, event_limit=10**6)
        sim.check_fast_path = True  # every shortcut and every remembered "no" is asked of the engine
        jobs = generate_jobs(seed, 40, cluster=cluster, load=1.4, median_duration_s=1200.0)
        sim.submit([replace(job, tenant="t") if k % 2 else job for k, job in enumerate(jobs)])  # (half in one tenant)
        for when in sorted(rng.uniform(0.0, 6 * 3600.0) for _ in range(rng.randint(3, 20))):
            sim.run_until(when)
            live = sorted(job.id for job in sim.live_jobs()
                          if job.state in (PENDING, RUNNING) and job.tenant == "t" and not job.urgent)  # fmt: skip
            if live:
                actions.bump(sim, rng.choice(live), urgent=True)
        sim.run_until(sim.now + 30 * DAY_S)  # (bounded: aged jobs may preempt each other in turn for ever)
        check_invariants(sim)
