"""The moment a waiting job ages past the queue's head (`PendingQueue.next_overtake`): the first
tick at which the queue's own order puts another job first, the same whenever it is asked."""

from __future__ import annotations

import math
import random

from gpuq.policy.config import ClassPolicy, Policy
from gpuq.sim import ClusterSpec, Simulator, generate_jobs
from gpuq.sim.jobs import on_grid


def test_the_head_is_overtaken_at_the_queues_first_tick_whenever_it_is_asked() -> None:
    rng = random.Random(7)
    checked = asked = 0
    for seed in range(150):
        cluster = ClusterSpec(nodes=2, gpus_per_node=4)
        # (classes aging at different rates, and shorter waits: heads are overtaken often; nobody preempts)
        rates = {name: ClassPolicy(max_wait_s=rng.choice([600.0, 3600.0]), aging_rate=rng.choice([1.0, 60.0, 600.0]))
                 for name in ("high", "normal", "low", "batch")}  # fmt: skip
        policy = Policy(delta=1e9, classes=rates)
        sim = Simulator(policy=policy, cluster=cluster)
        sim.submit(generate_jobs(seed, 60, cluster=cluster, load=2.0, median_duration_s=3600.0))
        for moment in sorted(rng.uniform(0.0, 12 * 3600.0) for _ in range(12)):
            sim.run_until(moment)
            now = sim.now
            queue = sim.queue
            head = queue.best(now)
            if head is None:
                continue
            when = queue.next_overtake(head, now, sim.rules.rate_now)
            if when == math.inf:
                continue
            checked += 1
            assert when > now and when == on_grid(when)
            assert queue.best(when) is not head, (seed, now, when)  # someone is first at that tick ...
            before = (round(when * 1e6) - 1) / 1e6
            assert before <= now or queue.best(before) is head, (seed, now, when)  # ... not the tick before
            for later in (on_grid(now + (when - now) * f) for f in (0.3, 0.7, 0.99)):
                if now < later < when:
                    asked += 1
                    assert queue.next_overtake(head, later, sim.rules.rate_now) == when, (seed, now, later, when)
    assert checked > 30 and asked > 100, (checked, asked)
