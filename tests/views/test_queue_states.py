"""`--state`/`-t` values: gpuq's names and Slurm's codes and names, as the Slurm backend reads them."""

from __future__ import annotations

import pytest

from gpuq.backends.slurm import jobs as slurm_jobs
from gpuq.errors import BadInput
from gpuq.model import QUEUED_STATES, JobState
from gpuq.views.queue import SLURM_STATES, parse_states


def test_every_slurm_code_and_name_maps_as_the_backend_maps_it() -> None:
    """The view's copy of the Slurm state table agrees with the backend's, both ways round."""
    for text, state in SLURM_STATES.items():
        assert slurm_jobs.map_state(text) is state, text
    backend_words = {*slurm_jobs._COMPACT, *slurm_jobs._STATE_MAP}
    assert backend_words == set(SLURM_STATES)


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ((), QUEUED_STATES),
        (("PD",), {JobState.PENDING}),
        (("pd", "r"), {JobState.PENDING, JobState.RUNNING}),
        (("S,CG",), {JobState.SUSPENDED, JobState.COMPLETING}),
        (("pending,RUNNING",), {JobState.PENDING, JobState.RUNNING}),
        (("CD", "CA", "F", "TO", "PR"), {JobState.COMPLETED, JobState.CANCELLED, JobState.FAILED,
                                          JobState.TIMEOUT, JobState.PREEMPTED}),  # fmt: skip
        (("OOM", "NF"), {JobState.FAILED}),
        (("R", "all"), None),
        (("ALL",), None),
    ],
)
def test_parse_states(values: tuple[str, ...], expected: set[JobState] | frozenset[JobState] | None) -> None:
    got = parse_states(values)
    assert got == (None if expected is None else frozenset(expected))


@pytest.mark.parametrize("bad", ["sleeping", "P", "PDX", "R,zz"])
def test_unknown_states_are_refused_naming_the_value(bad: str) -> None:
    with pytest.raises(BadInput, match="unknown state"):
        parse_states([bad])
