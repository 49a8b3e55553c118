"""Scoring, ranking and the Pareto front of a tuning run's replayed points.

Score = ``α·U − β·T_wait − γ·f_preempt`` (policy-model.md, "Tuning objective"), with:

- ``U``: the point's *useful* utilisation (busy GPU-time without lost work and checkpoint
  overhead, over capacity × makespan) times the share of the trace's jobs that finished, in
  [0, 1]. Raw utilisation would reward a strategy for re-running the work it threw away; without
  the share, cancelling victims (which never finish, so the rest wait less) would look best.
- ``T_wait``: the point's mean queue wait divided by the largest mean wait among the grid's
  points, in [0, 1] (0 for every point when no job waited anywhere).
- ``f_preempt``: the point's preemptions per job divided by the largest among the grid's points,
  in [0, 1] (0 for every point when nothing was preempted anywhere).

So each term spans at most 1 and the weights say how much of one the operator trades for the
others. The two divisors (`Norms`) depend on the whole grid: the same points always score the
same, whichever machine or Slurm task replayed each one.

The ranking orders points by score, highest first; equal scores keep the grid's order. The
Pareto front holds every point that no other point beats on one objective without losing on
another (maximise U, minimise mean wait, minimise preemptions per job, raw values); points with
identical objectives are all on it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from gpuq.errors import BadInput
from gpuq.replay.model import ReplayResult
from gpuq.textsafe import visible
from gpuq.tune.grid import Point

__all__ = [
    "DEFAULT_WEIGHTS", "Norms", "Ranking", "Scored", "Weights", "pareto_front", "parse_weights", "rank",
    "served_utilisation",
]  # fmt: skip

_WEIGHT_RE = re.compile(r"^(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$")
_MAX_WEIGHT = 1e6


@dataclass(frozen=True, slots=True)
class Weights:
    alpha: float = 1.0
    beta: float = 0.5
    gamma: float = 0.2

    def as_text(self) -> str:
        return f"alpha={self.alpha:g},beta={self.beta:g},gamma={self.gamma:g}"


DEFAULT_WEIGHTS = Weights()


def parse_weights(text: str | None) -> Weights:
    """``alpha=1,beta=0.5,gamma=0.2`` (any subset; the others keep `DEFAULT_WEIGHTS`); each a
    number from 0 to 1e6, and not all 0."""
    if text is None:
        return DEFAULT_WEIGHTS
    values = {"alpha": DEFAULT_WEIGHTS.alpha, "beta": DEFAULT_WEIGHTS.beta, "gamma": DEFAULT_WEIGHTS.gamma}
    seen: set[str] = set()
    for part in text.split(","):
        key, sep, raw = part.partition("=")
        key, raw = key.strip(), raw.strip()
        where = f"--weights {visible(text)}"
        if not sep or key not in values:
            raise BadInput(
                f"{where}: expected alpha=A,beta=B,gamma=C (keys: alpha, beta, gamma), got '{visible(part)}'"
            )
        if key in seen:
            raise BadInput(f"{where}: {key} given twice")
        if not _WEIGHT_RE.match(raw) or not float(raw) <= _MAX_WEIGHT:
            raise BadInput(f"{where}: {key} must be a number from 0 to {_MAX_WEIGHT:g}, got '{visible(raw)}'")
        seen.add(key)
        values[key] = float(raw)
    weights = Weights(**values)
    if not any((weights.alpha, weights.beta, weights.gamma)):
        raise BadInput(f"--weights {visible(text)}: every weight is 0, so every point would score 0")
    return weights


@dataclass(frozen=True, slots=True)
class Norms:
    """The divisors of the wait and preemption terms: the grid's largest mean wait (seconds) and
    preemptions per job; 0 means the term is 0 for every point."""

    wait_s: float
    preemptions_per_job: float


@dataclass(frozen=True, slots=True)
class Scored:
    point: Point
    result: ReplayResult
    u: float
    t_wait: float
    f_preempt: float
    score: float
    rank: int
    pareto: bool


@dataclass(frozen=True, slots=True)
class Ranking:
    weights: Weights
    norms: Norms
    #: best first
    rows: tuple[Scored, ...]

    @property
    def best(self) -> Scored:
        return self.rows[0]

    def by_index(self) -> tuple[Scored, ...]:
        """The rows in the grid's order."""
        return tuple(sorted(self.rows, key=lambda r: r.point.index))


def served_utilisation(result: ReplayResult) -> float:
    """``U``: useful utilisation times the share of jobs that finished (not cancelled, not left
    unfinished at the replay's horizon)."""
    if result.jobs <= 0:
        return result.useful_utilisation
    finished = max(0, result.jobs - result.cancelled - result.unfinished)
    return result.useful_utilisation * finished / result.jobs


def _objectives(result: ReplayResult) -> tuple[float, float, float]:
    return served_utilisation(result), result.wait.mean_s, result.preemptions_per_job


def pareto_front(results: Sequence[ReplayResult]) -> frozenset[int]:
    """Indexes (into `results`) of the points no other point dominates: at least as good on every
    objective and better on one (maximise useful utilisation, minimise mean wait and preemptions
    per job)."""
    objectives = [_objectives(r) for r in results]
    # A point's dominators all come before it in this order, and each dominated point is
    # dominated by a front member (dominance is transitive): one pass over the front suffices.
    order = sorted(range(len(results)), key=lambda i: (-objectives[i][0], objectives[i][1], objectives[i][2], i))
    front: list[int] = []
    for i in order:
        u, w, f = objectives[i]
        dominated = False
        for j in front:
            fu, fw, ff = objectives[j]
            if fu >= u and fw <= w and ff <= f and (fu > u or fw < w or ff < f):
                dominated = True
                break
        if not dominated:
            front.append(i)
    return frozenset(front)


def _ratio(value: float, top: float) -> float:
    return value / top if top > 0 else 0.0


def rank(points: Sequence[Point], results: Sequence[ReplayResult], weights: Weights = DEFAULT_WEIGHTS) -> Ranking:
    """Score every point (see the module's docstring), rank them and mark the Pareto front."""
    if len(points) != len(results) or not points:
        raise ValueError(f"{len(points)} points, {len(results)} results")
    for result in results:
        values = _objectives(result)
        if not all(math.isfinite(v) and v >= 0 for v in values):
            raise ValueError(f"a replay result with objectives {values}")
    norms = Norms(max(r.wait.mean_s for r in results), max(r.preemptions_per_job for r in results))
    front = pareto_front(results)
    scored = []
    for i, (point, result) in enumerate(zip(points, results, strict=True)):
        u = served_utilisation(result)
        t_wait = _ratio(result.wait.mean_s, norms.wait_s)
        f_preempt = _ratio(result.preemptions_per_job, norms.preemptions_per_job)
        score = weights.alpha * u - weights.beta * t_wait - weights.gamma * f_preempt
        scored.append((point, result, u, t_wait, f_preempt, score, i in front))
    scored.sort(key=lambda s: (-s[5], s[0].index))
    rows = tuple(
        Scored(point, result, u, t_wait, f, score, n, pareto)
        for n, (point, result, u, t_wait, f, score, pareto) in enumerate(scored, start=1)
    )
    return Ranking(weights, norms, rows)
