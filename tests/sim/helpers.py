"""Shared checks for simulator tests."""

from __future__ import annotations

from gpuq.model import JobState
from gpuq.sim import Simulator
from gpuq.sim.jobs import NO_GPUS


def check_invariants(sim: Simulator) -> None:
    """No GPU double-booked, allocations match requests, GPU-time conserved; the allocation that
    jobs without GPUs share is still empty (nothing changed a job's allocation in place)."""
    assert NO_GPUS == {}, NO_GPUS
    snap = sim.snapshot()
    per_node = {n.name: n.gpus for n in snap.nodes}
    held: set[tuple[str, int | None]] = set()
    busy = 0
    for job in snap.jobs:
        if job.state in (JobState.RUNNING, JobState.SUSPENDED):  # (suspended by an operator: holding its GPUs)
            count = 0
            for node, idx in job.allocation.items():
                for gpu in idx:
                    assert gpu is not None and 0 <= gpu < per_node[node], (job.id, node, gpu)
                    assert (node, gpu) not in held, f"GPU {node}:{gpu} double-booked (job {job.id})"
                    held.add((node, gpu))
                    count += 1
            assert count == job.gpus, (job.id, count, job.gpus)
            busy += count
        else:
            assert not job.allocation, (job.id, job.state)
    assert busy + sim.gpus.total_free == sim.capacity
    for machine in snap.nodes:
        used = sum(1 for (name, _) in held if name == machine.name)
        assert machine.state.value == ("idle" if used == 0 else "allocated" if used == machine.gpus else "mixed")
    elapsed = sim.now - sim.t0
    total = sim.busy_gpu_s() + sim.idle_gpu_s
    assert abs(total - sim.capacity * elapsed) <= 1e-9 * max(1.0, sim.capacity * elapsed)


def step_all(sim: Simulator, limit: float | None = None) -> None:
    """Run event time by event time, checking the invariants after each."""
    while True:
        when = sim.next_event_time()
        if when is None or (limit is not None and when > limit):
            break
        sim.run_until(when)
        check_invariants(sim)
