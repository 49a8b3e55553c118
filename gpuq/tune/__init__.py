"""Tuning: a grid of policy and replay parameters replayed over one trace, scored, ranked and
reduced to its Pareto front; the best point written as a policy file.

Core (no front-end library): `grid` (the `--grid` options and their points), `score` (the
weighted score, its normalisations, the ranking, the Pareto front), `pool` (the points replayed
here or across local cores), `files` (what the tasks of a Slurm job array read and write),
`policyfile` (a policy as TOML), `charts` (PNG charts, matplotlib loaded when asked for).
"""

from gpuq.tune.grid import KEYS, Axis, Grid, Point, apply_point, parse_grid
from gpuq.tune.policyfile import policy_toml
from gpuq.tune.score import DEFAULT_WEIGHTS, Norms, Ranking, Scored, Weights, pareto_front, parse_weights, rank

__all__ = [
    "DEFAULT_WEIGHTS",
    "KEYS",
    "Axis",
    "Grid",
    "Norms",
    "Point",
    "Ranking",
    "Scored",
    "Weights",
    "apply_point",
    "pareto_front",
    "parse_grid",
    "parse_weights",
    "policy_toml",
    "rank",
]
