"""Philly `cluster_job_log` (one JSON array, msr-fiddle/philly-traces README): jobs with
attempts, streamed element by element."""

from __future__ import annotations

import io
from calendar import timegm
from pathlib import Path

import pytest

from gpuq.service.tracing import open_trace, trace_format
from gpuq.trace import TraceJob, read_philly
from gpuq.trace.philly import array_items
from tests.trace.conftest import TRACES, trace_error, where

LOG = str(TRACES / "philly_cluster_job_log.json")


def utc(*fields: int) -> float:
    return float(timegm((*fields, 0, 0, 0)))


def test_the_fixture_reads_job_for_job() -> None:
    first, never, running = read_philly(LOG)
    assert first == TraceJob(
        "application_1506638472019_14199", utc(2017, 10, 7, 1, 11, 39), 74.0 + 3600.0, 12, user="ce2f4c",
        tenant="ee9e8c", start_time=utc(2017, 10, 7, 1, 12, 9), end_time=utc(2017, 10, 7, 2, 13, 30), state="Pass",
    )  # fmt: skip
    assert first.recorded_wait_s == 30.0
    assert (never.start_time, never.end_time, never.gpus, never.duration_s, never.state) == (
        None,
        None,
        0,
        0.0,
        "Killed",
    )
    assert (running.start_time, running.end_time, running.gpus) == (utc(2017, 10, 7, 3, 0, 0), None, 1)


def test_the_preset_and_the_sniffer_agree() -> None:
    assert trace_format(LOG) == "philly"
    assert [j.id for j in open_trace(LOG, preset="philly")] == [j.id for j in read_philly(LOG)]


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 64, 1 << 20])
def test_elements_are_cut_the_same_at_any_chunk_size(chunk: int) -> None:
    doc = b'[ {"a": "x]}\\"{", "b": [1, {"c": "\\\\"}]},\n  {"d": "\xc3\xa9"} ]'
    items = list(array_items(io.BytesIO(doc), "t", chunk))
    assert items == [(1, 3, b'{"a": "x]}\\"{", "b": [1, {"c": "\\\\"}]}'), (2, 3, b'{"d": "\xc3\xa9"}')]


class Endless(io.RawIOBase):
    """A Philly log that never ends: jobs for ever after the opening bracket."""

    job = b'{"jobid": "j", "submitted_time": "2017-10-07 01:11:39", "attempts": []},\n'

    def __init__(self) -> None:
        self.sent = 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        self.sent += 1
        return (b"[\n" if self.sent == 1 else b"") + self.job * 1000


def test_jobs_come_before_the_array_ends() -> None:
    stream = Endless()
    items = array_items(stream, "endless", 4096)  # type: ignore[arg-type]
    assert [next(items)[0] for _ in range(3)] == [2, 3, 4]
    assert stream.sent == 1  # one read so far, not the whole (endless) file


@pytest.mark.parametrize(
    ("text", "line", "column", "message"),
    [
        ('{"jobs": []}', 1, 1, "not a JSON array of jobs"),
        ('[\n  {"jobid": "a", "submitted_time": "2017-10-07 01:11:39"},\n  {"jobid": "b"', 3, None,
         "not a complete JSON array: the array is not closed"),
        ('[\n  {"jobid": "a", "submitted_time": "2017-10-07 01:11:39" "user": "u"}\n]', 2, 58, "not valid JSON"),
        ('[\n  {"submitted_time": "2017-10-07 01:11:39"}\n]', 2, None, "jobid: missing required field"),
        ('[\n  {"jobid": "a", "submitted_time": "yesterday"}\n]', 2, None,
         "job 'a': submitted_time: not a time: 'yesterday'"),
        ('[\n  {"jobid": "a", "submitted_time": "2017-10-07 01:11:39", "attempts": [{"start_time": '
         '"2017-10-07 02:00:00", "end_time": "2017-10-07 01:00:00"}]}\n]', 2, None,
         "job 'a': attempts[].end_time: ends before it starts"),
        ('[\n  {"jobid": "a", "submitted_time": "2017-10-07 01:11:39", "attempts": [{"detail": [{"gpus": 8}]}]}\n]',
         2, None, "attempts[].detail[].gpus: expected a list, got 8"),
        ('[\n  {"jobid": "a", "submitted_time": 17}\n]', 2, 18, "submitted_time: expected a string, got an integer"),
        ('[\n  "a job?"\n]', 2, 3, "expected a job object, got a string"),
        ('[\n  {"jobid": "a", "submitted_time": "2017-10-07 01:11:39"}, 42\n]', 2, 60, "expected a job object"),
        ("", 1, None, "not a complete JSON array: the file is empty"),
    ],
)  # fmt: skip
def test_malformed_logs_name_line_and_column(tmp_path: Path, text: str, line: int, column: int | None,
                                             message: str) -> None:  # fmt: skip
    path = tmp_path / "cluster_job_log"
    path.write_text(text)
    error = trace_error(lambda: read_philly(str(path)))
    assert where(error) == (line, column), str(error)
    assert message in str(error)


def test_an_element_nested_too_deep_is_a_trace_error(tmp_path: Path) -> None:
    """msgspec refuses a value nested past its depth limit with RecursionError: the reader names
    the line, as for any other malformed element."""
    path = tmp_path / "cluster_job_log"
    path.write_bytes(b'[\n{"jobid": "a", "x": ' + b"[" * 5000 + b"]" * 5000 + b"}\n]\n")
    error = trace_error(lambda: read_philly(str(path)))
    assert where(error)[0] == 2 and "nested too deep" in str(error)
