"""squeue's lines parsed as they arrive (`Runner.stream`) give exactly what parsing the whole text gives."""

from __future__ import annotations

import io
import os
import stat
import time
from pathlib import Path

import pytest

from gpuq.backends.slurm.runner import Runner, _lines
from gpuq.backends.slurm.text import apply_details, parse_scontrol_detail, parse_squeue_format
from gpuq.errors import NotFound, Unreachable
from tests.slurm.samples import LIVE


class _Trickle(io.RawIOBase):
    """A pipe that hands out a few bytes at a time, cutting lines and UTF-8 sequences anywhere."""

    def __init__(self, data: bytes, step: int) -> None:
        self.data, self.pos, self.step = data, 0, step

    def readable(self) -> bool:
        return True

    def read1(self, n: int = -1) -> bytes:
        chunk = self.data[self.pos : self.pos + min(self.step, n if n > 0 else self.step)]
        self.pos += len(chunk)
        return chunk


@pytest.mark.parametrize("step", [1, 7, 4096, 1 << 20])
def test_lines_split_like_splitlines(step: int) -> None:
    text = (LIVE / "squeue-format-extended.txt").read_text() + "name ünïcode\r\nlast line without newline"
    data = text.encode()
    got = list(_lines(_Trickle(data, step)))  # type: ignore[arg-type]
    assert got == data.decode(errors="replace").replace("\r\n", "\n").splitlines()


def test_streamed_parse_equals_whole_text_parse() -> None:
    text = (LIVE / "squeue-format-extended.txt").read_text()
    details = parse_scontrol_detail((LIVE / "scontrol-show-job-d-o-extended.txt").read_text())
    for key in ("qos", "partition"):
        whole = parse_squeue_format(text, key, details)
        streamed = apply_details(parse_squeue_format(iter(text.splitlines()), key), details, every_holding=True)
        assert streamed.jobs == whole.jobs
        assert streamed.restarts == whole.restarts and streamed.raw_ids == whole.raw_ids
        assert any(j.allocation for j in whole.jobs)  # the sample does exercise the GPU indexes


def _script(tmp_path: Path, body: str) -> str:
    path = tmp_path / "cmd"
    path.write_text("#!/bin/bash\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_stream_maps_errors_and_prefers_them_to_parse_errors(tmp_path: Path) -> None:
    cmd = _script(tmp_path, "echo 'garbage'\necho 'slurm_load_jobs error: Invalid job id specified' >&2\nexit 1\n")

    def parse(lines: object) -> None:
        raise ValueError("bad line")

    with pytest.raises(NotFound, match="no job 7"):
        Runner().stream([cmd], parse, what="7")
    ok = _script(tmp_path, "echo 'garbage'\n")
    with pytest.raises(ValueError, match="bad line"):
        Runner().stream([ok], parse)


def test_stream_kills_a_hung_command_and_its_children(tmp_path: Path) -> None:
    cmd = _script(tmp_path, "echo first\nsleep 30\n")
    started = time.monotonic()
    with pytest.raises(Unreachable, match=r"did not answer within 0\.5s"):
        Runner(timeout_s=0.5).stream([cmd], list)
    assert time.monotonic() - started < 5  # `sleep` held the pipe too: killed with its group


def test_stream_missing_command(tmp_path: Path) -> None:
    with pytest.raises(Unreachable, match="not found"):
        Runner().stream([os.fspath(tmp_path / "nope")], list)
