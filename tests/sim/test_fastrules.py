"""The simulator reads a `SimJob`'s fields into the rule kernel's arguments as the policy reads
a model job's.

`gpuq.sim.fastrules.FastRules` applies the kernel (`gpuq.policy.kernel`, the one definition of
each rule) to a SimJob's own fields: a queued job's effective priority (`queued_priority`), a
running job's (`running_priority`, which `Simulator.arm` fixes as `job.rep`), the GPU-seconds a
preemption loses (`lost`, weighed by `cost`), the time-limited protections; and
`gpuq.sim.jobs.id_key` is the job-id order for ids of digits alone. Each is checked here, with
`==` on the floats, against the kernel given the numbers as the model states them (the wait up
to the start, the run clock net of suspensions, the job's own checkpoint interval before the
default) over a few thousand seeded, generated jobs and policies: urgent or not, classes with and
without max_wait and with and without aging, jobs that report checkpoints and jobs that fall
back to the default interval, all times on the simulator's microsecond grid and many of them a
tick away from a rule's boundary.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from fractions import Fraction

import pytest

from gpuq.model import DAY_S, JobClass, job_id_key
from gpuq.policy.config import ClassPolicy, Policy
from gpuq.policy.kernel import (
    effective_priority_of,
    gpu_seconds_lost_of,
    outranks,
    protected_until,
    requester_priority_of,
    time_protected,
    victim_cost_of,
)
from gpuq.sim.fastrules import FastRules
from gpuq.sim.jobs import PENDING, RUNNING, SimJob, id_key, on_grid, strictly_after
from gpuq.sim.victims import crossing
from gpuq.sim.workload import JobSpec

#: A fixed moment (no dependence on today's date), in whole microseconds.
T0_US = 1_795_100_400_000_000
T0 = T0_US / 1e6
CASES = 3000
SEED = 20_260_512

CLASSES = (
    JobClass("high", 500, True, 1800.0, 3600.0),
    JobClass("normal", 100, True, 7200.0, 14_400.0),
    JobClass("flat", 50, True, None, None),  # no max_wait: never ages
    JobClass("odd", 20, True, 600.0, 90.123457),  # a max_wait off the binary grid
    JobClass("pinned", 1000, False, 600.0, 1800.0),
)
NAMES = (*(c.name for c in CLASSES), "unlisted")  # (a class the snapshot does not list)
TENANTS = ("t1", "t2", "t3")


def tick(us: int) -> float:
    """The simulator's time `us` microseconds after T0 (as `on_grid` writes its ticks)."""
    return (T0_US + us) / 1e6


def near(rng: random.Random, t: float) -> float:
    """A grid time at or a few ticks either side of `t` (which need not be on the grid)."""
    base = on_grid(t)
    return (round(base * 1e6) + rng.randint(-3, 3)) / 1e6


def make_policy(rng: random.Random) -> Policy:
    overrides: dict[str, ClassPolicy] = {}
    for name in NAMES:
        if rng.random() < 0.3:
            overrides[name] = ClassPolicy(
                max_wait_s=rng.choice([None, 0.1, 60.0, 1234.567891, 86_400.0]),
                aging_rate=rng.choice([None, 0.0, 0.5, 600.0, 7.3]),
                preemptible=rng.choice([None, True, False]),
            )
    quota = {t: rng.choice([0, 1, 2, 4, 8]) for t in TENANTS if rng.random() < 0.5}
    return Policy(
        delta=rng.choice([0.0, 5.0, 90.0]),
        min_runtime_s=rng.choice([0.0, 0.0, 600.0, 0.1, 299.999999]),
        max_preemptions_per_day=rng.choice([0, 0, 1, 2, 3]),
        default_checkpoint_interval_s=rng.choice([0.0, 0.0, 900.0, 0.3, 1e-6]),
        urgent_priority=rng.choice([1_000_000, 750, 3]),
        lost_work_weight=rng.choice([1.0, 0.25, 0.0, 1.1]),
        priority_weight=rng.choice([0.0, 0.0, 0.5, 0.01]),
        default_aging_rate=rng.choice([0.0, 10.0, 7.3]),
        classes=overrides,
        urgent_quota_default=rng.choice([0, 0, 2, 3]),
        urgent_quota=quota,
    )


def kernel_class(policy: Policy, name: str) -> tuple[float | None, float]:
    """The class's max_wait and aging rate, resolved the way the policy engine resolves them."""
    base = next((c for c in CLASSES if c.name == name), None)
    return policy.resolve_class(base, name).max_wait_s, policy.aging_rate(name)


def kernel_priority(policy: Policy, job: SimJob, waited_s: float | None, *, urgent: bool | None = None) -> float:
    """`effective_priority_of` on the job's plain numbers (`waited_s`: as the kernel defines it)."""
    max_wait, rate = kernel_class(policy, job.cls)
    return effective_priority_of(
        float(job.priority), urgent=job.urgent if urgent is None else urgent,
        urgent_priority=float(policy.urgent_priority), waited_s=waited_s if max_wait is not None else None,
        max_wait_s=max_wait, rate_per_min=rate,
    )  # fmt: skip


def kernel_lost(policy: Policy, job: SimJob, now: float) -> float:
    """`gpu_seconds_lost_of` on the job's plain numbers: its last reported checkpoint, and its
    own checkpoint interval when it reports them, else the policy's default."""
    assert job.run_start is not None
    interval = job.ckpt if job.ckpt is not None else policy.default_checkpoint_interval_s
    return gpu_seconds_lost_of(job.gpus, job.run_start, job.last_checkpoint(now), interval, now)


def base_job(rng: random.Random, index: int) -> SimJob:
    """A job as submitted: its class, tenant, size, base priority and checkpoint reporting."""
    spec = JobSpec(
        f"j{index}", tick(-rng.randint(0, 3 * 86_400_000_000)), 3600.0, gpus=rng.choice([1, 1, 2, 4, 8]),
        priority=rng.choice([0, 1, 10, 100, 500, 1000, 999_999, 1_000_000, 2_000_000]),
        job_class=rng.choice(NAMES), tenant=rng.choice(TENANTS),
        checkpoint_interval_s=rng.choice([None, None, 600.0, 0.5, 333.333333, 1e-6, 0.0]),
    )  # fmt: skip
    job = SimJob(spec)
    job.urgent = rng.random() < 0.25
    return job


def queued_job(rng: random.Random, index: int, rules: FastRules) -> tuple[SimJob, float]:
    """A waiting job and a moment to ask about it: often a few ticks either side of the moment
    its wait passes max_wait. `aging` set as `Simulator.enqueue` and its aging event set it."""
    job = base_job(rng, index)
    job.state = PENDING
    job.qs = job.submit if rng.random() < 0.5 else tick(-rng.randint(0, 86_400_000_000))  # requeued since
    info = rules.class_info(job.cls)
    if info.max_wait is not None and rng.random() < 0.6:
        now = near(rng, job.qs + info.max_wait)
    else:
        now = near(rng, job.qs + rng.choice([0.0, 1e-6, 59.5, 3600.0, rng.uniform(0, 2 * DAY_S)]))
    now = max(now, job.qs)
    job.aging = not job.urgent and info.max_wait is not None and info.rate > 0 and now >= job.qs + info.max_wait
    return job, now


def running_job(rng: random.Random, index: int, rules: FastRules) -> tuple[SimJob, float]:
    """A running job and a moment in its run: its wait before the start near max_wait, now near
    a checkpoint, an earlier run's checkpoint, earlier preemptions (some a tick inside or outside
    the 24 h window), an exemption near now; `rep` fixed as `Simulator.arm` fixes it."""
    job = base_job(rng, index)
    job.qs = job.submit if rng.random() < 0.5 else tick(-rng.randint(0, 86_400_000_000))
    info = rules.class_info(job.cls)
    if info.max_wait is not None and rng.random() < 0.5:
        start = near(rng, job.qs + info.max_wait)
    else:
        start = near(rng, job.qs + rng.choice([0.0, 1e-6, 30.0, rng.uniform(0, DAY_S)]))
    job.began = job.run_start = start = max(start, job.qs)
    if rng.random() < 0.2:  # a run an operator suspended and resumed: its clock restarted there
        job.susp = rng.choice([1e-6, 60.0, rng.uniform(0, DAY_S)])
        job.run_start = start = near(rng, job.began + job.susp + rng.choice([0.0, 30.0, rng.uniform(0, 3600)]))
        job.run_start = start = max(start, job.began + job.susp)
    job.state = RUNNING
    if job.ckpt is not None and rng.random() < 0.4:
        job.last_ckpt = near(rng, start - rng.uniform(0, 3600))  # reported in an earlier run
    if job.ckpt and rng.random() < 0.5:
        now = near(rng, start + job.ckpt * rng.randint(0, 50))
    elif rules.min_runtime and rng.random() < 0.4:
        now = near(rng, start + rules.min_runtime)
    else:
        now = near(rng, start + rng.choice([0.0, 1e-6, 0.3, 899.999999, 900.0, rng.uniform(0, 2 * DAY_S)]))
    now = max(now, start)
    times = []
    for _ in range(rng.choice([0, 0, 1, 2, 3, 4])):  # each before this run began
        when = near(rng, now - DAY_S) if rng.random() < 0.4 else near(rng, start - rng.uniform(0, 2 * DAY_S))
        times.append(min(when, start))
    job.preempt_times = tuple(sorted(times))
    if rng.random() < 0.3:
        job.exempt_until = near(rng, now + rng.choice([0.0, 1e-6, 60.0, 7200.0]))
    job.rep = float(job.priority) if info.max_wait is None and not job.urgent else rules.running_priority(job)
    return job, now


def generated(make: Callable[[random.Random, int, FastRules], tuple[SimJob, float]], seed: int) -> list[
    tuple[Policy, FastRules, SimJob, float]
]:  # fmt: skip
    """CASES jobs made by `make`, under policies that change every 50 jobs."""
    rng = random.Random(seed)
    cases = []
    for i in range(CASES):
        if i % 50 == 0:
            policy = make_policy(rng)
            rules = FastRules(policy, CLASSES)
            if rng.random() < 0.5:  # (a policy change on a running simulator)
                rules = FastRules(make_policy(rng), CLASSES)
                rules.set_policy(policy)
        job, now = make(rng, i, rules)
        cases.append((policy, rules, job, now))
    return cases


def coverage(cases: Sequence[tuple[Policy, FastRules, SimJob, float]], *checks: Callable[..., bool]) -> None:
    """Each of `checks` (on policy, job, now) holds for some of the cases and fails for others."""
    for check in checks:
        hits = sum(1 for policy, _, job, now in cases if check(policy, job, now))
        assert 0 < hits < len(cases), (check.__name__, hits)


def _urgent(policy: Policy, job: SimJob, now: float) -> bool:
    return job.urgent


def _aging_class(policy: Policy, job: SimJob, now: float) -> bool:
    max_wait, rate = kernel_class(policy, job.cls)
    return max_wait is not None and rate > 0


def _no_max_wait(policy: Policy, job: SimJob, now: float) -> bool:
    return kernel_class(policy, job.cls)[0] is None


def _reports_checkpoints(policy: Policy, job: SimJob, now: float) -> bool:
    return job.ckpt is not None


def _default_interval(policy: Policy, job: SimJob, now: float) -> bool:
    return job.ckpt is None and policy.default_checkpoint_interval_s > 0


def _protected(policy: Policy, job: SimJob, now: float) -> bool:
    """`time_protected` on the running job's plain numbers."""
    assert job.run_start is not None
    return time_protected(exempt_until=job.exempt_until, start=job.began + job.susp, min_runtime_s=policy.min_runtime_s,
                          preemption_times=job.preempt_times, cap=policy.max_preemptions_per_day, now=now)  # fmt: skip


QUEUED = generated(queued_job, SEED)
RUNNING_JOBS = generated(running_job, SEED + 1)


def test_the_generated_jobs_cover_the_rules_branches() -> None:
    coverage(QUEUED, _urgent, _aging_class, _no_max_wait)
    coverage(RUNNING_JOBS, _urgent, _aging_class, _no_max_wait, _reports_checkpoints, _default_interval, _protected)
    # Queued jobs on both sides of the moment they start to age, and right at it.
    overdue = [now - job.qs - m for p, _, job, now in QUEUED if (m := kernel_class(p, job.cls)[0]) is not None]
    assert any(o < 0 for o in overdue) and any(o > 0 for o in overdue) and 0.0 in overdue


def test_queued_priority_is_the_kernels() -> None:
    for policy, rules, job, now in QUEUED:
        expected = kernel_priority(policy, job, now - job.qs)
        got = rules.queued_priority(job, now)
        assert got == expected, (job.id, job.cls, job.urgent, job.aging, job.qs, now, got, expected)
        assert rules.priority_of(job, now, queued=True) == expected


def test_a_job_is_not_below_its_base_priority_at_the_tick_it_starts_to_age() -> None:
    """With a max_wait off the binary grid, `qs + max_wait` can round down onto a tick: the aging
    event comes there and `Simulator.enqueue` finds `now >= qs + max_wait`, while the wait
    `now - qs` is still just short of max_wait. The kernel then counts no aging at all."""
    policy = Policy(classes={"odd": ClassPolicy(max_wait_s=0.1, aging_rate=600.0)})
    rules = FastRules(policy, CLASSES)
    job = SimJob(JobSpec("j", T0, 60.0, priority=100, job_class="odd"))
    job.state = PENDING
    now = job.qs + 0.1
    assert now == on_grid(now) and Fraction(now) < Fraction(job.qs) + Fraction(0.1)  # the case in point
    job.aging = True  # as `_enqueue` sets it at its aging event
    assert now - job.qs - 0.1 < 0
    assert rules.queued_priority(job, now) == kernel_priority(policy, job, now - job.qs) == 100.0
    later = strictly_after(now)
    assert rules.queued_priority(job, later) == kernel_priority(policy, job, later - job.qs) > 100.0


def test_running_priority_is_the_kernels() -> None:
    for policy, rules, job, _now in RUNNING_JOBS:
        assert job.run_start is not None
        expected = kernel_priority(policy, job, job.began - job.qs)  # the wait up to its start
        got = rules.running_priority(job)
        assert got == expected, (job.id, job.cls, job.urgent, job.qs, job.run_start, got, expected)
        assert job.rep == expected  # (`_arm`'s shortcut for classes that never age)
        assert rules.priority_of(job, _now, queued=False) == expected


def test_lost_is_the_kernels() -> None:
    for policy, rules, job, now in RUNNING_JOBS:
        expected = kernel_lost(policy, job, now)
        got = rules.lost(job, now)
        assert got == expected, (job.id, job.gpus, job.ckpt, job.last_ckpt, job.run_start, now, got, expected)


def test_cost_is_the_kernels() -> None:
    for policy, rules, job, now in RUNNING_JOBS:
        assert job.run_start is not None
        priority = kernel_priority(policy, job, job.began - job.qs)
        expected = victim_cost_of(kernel_lost(policy, job, now), priority, policy.lost_work_weight,
                                  policy.priority_weight)  # fmt: skip
        got = rules.cost(job, now)
        assert got == expected, (job.id, job.rep, got, expected)


def test_requester_priority_counts_urgency_within_the_tenants_quota() -> None:
    rng = random.Random(SEED + 2)
    running = [job for _, _, job, _ in RUNNING_JOBS]
    over = within = 0
    for policy, rules, head, now in QUEUED:
        holding = rng.sample(running, rng.randint(0, 12))
        quota = policy.tenant_urgent_quota(head.tenant)
        held = sum(j.gpus for j in holding if j.urgent and j.tenant == head.tenant)
        expected = requester_priority_of(
            kernel_priority(policy, head, now - head.qs, urgent=False), urgent=head.urgent,
            urgent_priority=float(policy.urgent_priority), quota=quota, urgent_gpus_held=held, gpus=head.gpus,
        )  # fmt: skip
        got = rules.requester_priority(head, now, holding)
        assert got == expected, (head.id, head.urgent, head.tenant, quota, held, head.gpus, got, expected)
        if head.urgent and quota > 0:
            over += held + head.gpus > quota
            within += held + head.gpus <= quota
    assert over and within


def test_the_time_limited_protections_are_the_kernels() -> None:
    rng = random.Random(SEED + 4)
    moments = 0
    for policy, rules, job, now in RUNNING_JOBS:
        assert job.run_start is not None
        # (now, and moments around the ends of the minimum runtime, the exemption and the cap)
        ends = [job.began + job.susp + policy.min_runtime_s, *(t + DAY_S for t in job.preempt_times)]
        if job.exempt_until is not None:
            ends.append(job.exempt_until)
        for when in (now, *(near(rng, e) for e in ends)):
            moments += 1
            assert rules.protected_at(job, when) == _protected(policy, job, when), (job.id, when)
            until = protected_until(
                exempt_until=job.exempt_until, start=job.began + job.susp, min_runtime_s=policy.min_runtime_s,
                preemption_times=job.preempt_times, cap=policy.max_preemptions_per_day, now=when,
            )  # fmt: skip
            assert rules.protected_until(job, when) == until, (job.id, when)
    assert moments > len(RUNNING_JOBS)


def test_protection_end_is_the_first_tick_the_kernel_does_not_protect() -> None:
    protected = 0
    for policy, rules, job, now in RUNNING_JOBS:
        assert job.run_start is not None
        end = rules.protection_end(job, now)
        until = protected_until(
            exempt_until=job.exempt_until, start=job.began + job.susp, min_runtime_s=policy.min_runtime_s,
            preemption_times=job.preempt_times, cap=policy.max_preemptions_per_day, now=now,
        )  # fmt: skip
        assert (end == 0.0) == (until <= 0.0) == (not _protected(policy, job, now)), (job.id, now, end, until)
        if end == 0.0:
            continue
        protected += 1
        assert end == on_grid(end) and end > now and not _protected(policy, job, end), (job.id, now, end)
        before = (round(end * 1e6) - 1) / 1e6  # the tick before: still protected
        assert strictly_after(before) == end and _protected(policy, job, before), (job.id, now, end, until)
    assert protected


def test_an_aging_head_comes_to_outrank_a_victim_at_the_kernels_first_tick_whenever_it_is_asked() -> None:
    rng = random.Random(SEED + 5)
    running = [job for _, _, job, _ in RUNNING_JOBS]
    asked = over_quota = 0
    for _, rules, job, now in QUEUED:
        holding = rng.sample(running, rng.randint(0, 12))
        rate = rules.cinfo[job.cls].rate if job.aging and not job.urgent else 0.0  # (urgency does not age)
        assert rules.rate_now(job) == rate, (job.id, job.aging, job.urgent)
        if job.urgent and not rules.urgency_counts(job, holding):
            # Over its tenant's quota: ranked without its urgency, which ages from qs + max_wait
            # (an urgent job is never marked `aging`).
            info = rules.cinfo[job.cls]
            rate = info.rate if info.max_wait is not None else 0.0
            over_quota += rate > 0
        if rate <= 0:
            assert crossing(rules, job, 1e9, now, holding) == math.inf
            continue
        # a victim the head outranks by exactly Δ now, or by a little less
        victim = rules.requester_priority(job, now, holding) - rules.delta + rng.choice([0.0, 1e-9, 0.5, 17.3, 1000.0])
        when = crossing(rules, job, victim, now, holding)
        assert when > now and when == on_grid(when)
        assert outranks(rules.requester_priority(job, when, holding), victim, rules.delta), (job.id, now, when)
        before = (round(when * 1e6) - 1) / 1e6
        earlier = rules.requester_priority(job, before, holding)
        assert before <= now or not outranks(earlier, victim, rules.delta), (job.id, now, when)
        for later in (near(rng, now + (when - now) * f) for f in (0.25, 0.5, 0.9)):  # asked again, later
            if now <= later < when:
                asked += 1
                assert crossing(rules, job, victim, later, holding) == when, (job.id, now, later, when)
    assert asked > 100 and over_quota > 10, (asked, over_quota)


@pytest.mark.parametrize("name", NAMES)
def test_class_info_is_the_policys(name: str) -> None:
    rng = random.Random(SEED + 3)
    for _ in range(50):
        policy = make_policy(rng)
        info = FastRules(policy, CLASSES).class_info(name)
        base = next((c for c in CLASSES if c.name == name), None)
        resolved = policy.resolve_class(base, name)
        assert (info.preemptible, info.max_wait) == (resolved.preemptible, resolved.max_wait_s)
        assert info.rate == (policy.aging_rate(name) if resolved.max_wait_s is not None else 0.0)


def test_the_job_id_order_is_the_kernels() -> None:
    rng = random.Random(SEED + 4)
    # (Arabic-Indic digits are decimal too: int() reads them, so the key holds their value)
    ids = ["0", "7", "007", "10", "999", "1000", "9" * 18, "9" * 19, "0" * 18, "9" * 299, "9" * 300, "1" * 400,
           "12_1", "12_10", "77+1", "1٢", "٢1", "12/", "12:",
           "", "a", "job-7", "²", "١٢", " 12", "12 "]  # fmt: skip
    ids += [str(rng.randrange(10 ** rng.randrange(1, 25))) for _ in range(2000)]
    ids += ["".join(rng.choice("0123456789_-ab") for _ in range(rng.randrange(1, 8))) for _ in range(2000)]
    for job_id in ids:
        assert id_key(job_id) == job_id_key(job_id), job_id
    assert sorted(ids, key=id_key) == sorted(ids, key=job_id_key)
