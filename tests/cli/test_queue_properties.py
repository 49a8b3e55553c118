"""`gpuq queue` filters agree with a brute-force filter of the snapshot, whatever the combination."""

from __future__ import annotations

import json
from collections.abc import Callable

from click.testing import CliRunner, Result
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuq.cli.main import cli
from gpuq.model.codec import read_snapshot_file
from tests.properties import examples

from .conftest import SMALL

Run = Callable[..., Result]
SNAP = read_snapshot_file(SMALL)
USERS = sorted({j.user for j in SNAP.jobs})
TENANTS = sorted({j.tenant for j in SNAP.jobs})
CLASSES = sorted({j.job_class for j in SNAP.jobs})
STATES = sorted({j.state.value for j in SNAP.jobs})


@settings(max_examples=examples(40), deadline=None)
@given(
    users=st.lists(st.sampled_from(USERS), max_size=2, unique=True),
    tenants=st.lists(st.sampled_from(TENANTS), max_size=2, unique=True),
    classes=st.lists(st.sampled_from(CLASSES), max_size=2, unique=True),
    states=st.lists(st.sampled_from(STATES), min_size=1, max_size=3, unique=True),
    min_gpus=st.integers(min_value=0, max_value=5),
)
def test_filters_match_brute_force(
    users: list[str], tenants: list[str], classes: list[str], states: list[str], min_gpus: int
) -> None:
    args = ["--snapshot", str(SMALL), "-o", "json", "queue", "--state", ",".join(states), "--min-gpus", str(min_gpus)]
    for flag, values in (("--user", users), ("--tenant", tenants), ("--class", classes)):
        for value in values:
            args += [flag, value]
    result = CliRunner().invoke(cli, args, prog_name="gpuq")
    assert result.exit_code == 0, result.output
    got = sorted(j["id"] for j in json.loads(result.stdout)["jobs"])
    want = sorted(
        j.id
        for j in SNAP.jobs
        if (not users or j.user in users)
        and (not tenants or j.tenant in tenants)
        and (not classes or j.job_class in classes)
        and j.state.value in states
        and j.gpus >= min_gpus
    )
    assert got == want
