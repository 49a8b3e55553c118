"""The class rules: a column's class kept, seeded draws deterministic per seed and different
across seeds, with the demo's weights; priorities from the class."""

from __future__ import annotations

from collections import Counter

import pytest

from gpuq.errors import BadInput
from gpuq.trace import TraceJob, assign_classes, class_from_field
from gpuq.trace.classes import default_weights, seeded_class

JOBS = [TraceJob(f"job-{i}", float(i), 60.0, 1) for i in range(20_000)]


def _classes(seed: int, jobs: list[TraceJob] = JOBS) -> list[str | None]:
    return [j.job_class for j in assign_classes(jobs, seed=seed)]


def test_the_draw_is_deterministic_per_seed_and_order_free() -> None:
    assert _classes(7) == _classes(7)
    reversed_draw = [j.job_class for j in assign_classes(reversed(JOBS), seed=7)]
    assert reversed_draw[::-1] == _classes(7)


def test_another_seed_draws_other_classes() -> None:
    a, b = _classes(1), _classes(2)
    differ = sum(x != y for x, y in zip(a, b, strict=True))
    assert differ > len(JOBS) // 4


def test_the_draw_follows_the_demo_weights() -> None:
    weights = default_weights()
    assert weights == {"urgent": 3, "high": 12, "normal": 45, "low": 25, "batch": 15}
    counts = Counter(_classes(0))
    total = sum(weights.values())
    for name, weight in weights.items():
        share = counts[name] / len(JOBS)
        assert abs(share - weight / total) < 0.015, (name, share)


def test_the_rule_is_the_documented_hash() -> None:
    # blake2b("0:job-0", 8 bytes) as a fraction of 2**64, against the cumulative weights 3,15,60,85,100
    import hashlib

    names, cumulative = ["urgent", "high", "normal", "low", "batch"], [3.0, 15.0, 60.0, 85.0, 100.0]
    u = int.from_bytes(hashlib.blake2b(b"0:job-0", digest_size=8).digest(), "big") / 2**64 * 100
    expected = names[next(i for i, c in enumerate(cumulative) if u < c)]
    assert seeded_class("job-0", 0, names, cumulative) == expected == _classes(0)[0]


def test_recorded_classes_and_priorities_are_kept() -> None:
    given = TraceJob("a", 0.0, 1.0, 1, job_class="gold", priority=42)
    known = TraceJob("b", 0.0, 1.0, 1, job_class="high")
    foreign = TraceJob("c", 0.0, 1.0, 1, job_class="gold")
    out = list(assign_classes([given, known, foreign], seed=3))
    assert [(j.job_class, j.priority) for j in out] == [("gold", 42), ("high", 500), ("gold", None)]


def test_drawn_classes_bring_their_priority() -> None:
    priorities = {"urgent": 1000, "high": 500, "normal": 100, "low": 10, "batch": 1}
    for job in assign_classes(JOBS[:200], seed=5):
        assert job.job_class is not None and job.priority == priorities[job.job_class]


def test_class_from_a_field() -> None:
    jobs = [TraceJob("a", 0.0, 1.0, 1, tenant="nlp"), TraceJob("b", 0.0, 1.0, 1, tenant="")]
    assert [j.job_class for j in class_from_field(jobs, "tenant")] == ["nlp", None]
    with pytest.raises(BadInput, match="name a field: job_class, tenant, user, name, state"):
        class_from_field(jobs, "qos")
