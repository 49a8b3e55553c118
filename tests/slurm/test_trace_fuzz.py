"""Fuzzing the Slurm trace readers (`read_sacct_parsable`, `read_sacct_json`) with mutations of
the real captures (the values of `tests/fuzzing.py` that have broken parsers before, and random
byte edits): a file either reads into jobs that hold together or is refused with one of gpuq's
own errors, never another exception."""

from __future__ import annotations

import math
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuq.backends.slurm.trace import read_sacct_json, read_sacct_parsable
from gpuq.errors import GpuqError
from gpuq.trace.record import TraceJob
from tests import fuzzing
from tests.properties import examples
from tests.slurm.samples import LIVE

_FUZZ = settings(
    deadline=None,
    max_examples=examples(300),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
_PARSABLE = (LIVE / "sacct-trace-D.txt").read_bytes()
_JSON = fuzzing.JsonSeed((LIVE / "sacct-trace-D.json").read_bytes())


@st.composite
def _parsable_inputs(draw: st.DrawFn) -> bytes:
    if draw(st.booleans()):
        return draw(fuzzing._byte_edits(_PARSABLE))  # noqa: SLF001 - the shared mutator
    lines = _PARSABLE.decode().splitlines()
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(1, len(lines) - 1))
        fields = lines[at].split("|")
        fields[draw(st.integers(0, len(fields) - 1))] = draw(st.sampled_from(fuzzing.EVIL_TEXT))
        lines[at] = "|".join(fields)
    return ("\n".join(lines) + "\n").encode(errors="surrogatepass")


def _check(jobs: list[TraceJob]) -> None:
    for job in jobs:
        assert 0 <= job.submit_time <= fuzzing.MAX_EPOCH
        for moment in (job.start_time, job.end_time):
            assert moment is None or 0 <= moment <= fuzzing.MAX_EPOCH
        assert math.isfinite(job.duration_s) and job.duration_s >= 0
        assert 0 <= job.gpus <= fuzzing.MAX_JOB_GPUS
        assert job.id and "." not in job.id


def _read(path: Path, data: bytes | str, read: object) -> None:
    path.write_bytes(data if isinstance(data, bytes) else data.encode(errors="surrogatepass"))
    try:
        jobs = list(read(str(path)))  # type: ignore[operator]
    except GpuqError as exc:
        refused = str(exc)
    else:
        _check(jobs)
        return
    assert refused and "\n" not in refused.strip()


@_FUZZ
@given(_parsable_inputs())
def test_parsable_output(tmp_path: Path, data: bytes) -> None:
    _read(tmp_path / "sacct.txt", data, read_sacct_parsable)


@_FUZZ
@given(fuzzing.json_mutations(_JSON))
def test_json_output(tmp_path: Path, data: str | bytes) -> None:
    _read(tmp_path / "sacct.json", data, read_sacct_json)
