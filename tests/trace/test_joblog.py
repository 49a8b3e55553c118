"""gpuq.jobs/v1: the documented fields read back, the optional header, blank lines, streaming,
and every malformed line named by file:line:column."""

from __future__ import annotations

import io
import tracemalloc
from pathlib import Path

import pytest

from gpuq.trace import TraceJob, read_joblog, write_jobs
from gpuq.trace.joblog import header_line, job_line
from gpuq.trace.record import TraceError
from tests.trace.conftest import TRACES, trace_error, where


def test_the_fixture_reads_field_for_field() -> None:
    jobs = list(read_joblog(str(TRACES / "jobs.jsonl")))
    assert [j.id for j in jobs] == ["j1", "j2", "j3", "j4", "j5"]  # the header and the blank line skipped
    j1, j2, j3, j4, j5 = jobs
    assert j1 == TraceJob("j1", 1000.0, 3600.0, 8, "high", None, "alice", "nlp", "", 1060.0, 4660.0, "completed")
    assert j2.priority == 700 and j2.recorded_wait_s == 300.0
    assert j3.duration_s == 120.5 and j3.checkpoint_interval_s == 600.0 and j3.checkpoints == (4260.0,)
    assert j4.start_time is None and j4.recorded_wait_s is None and j4.state == "cancelled"
    assert j5.job_class is None and j5.gpus == 0


def test_written_jobs_read_back_equal(tmp_path: Path) -> None:
    jobs = list(read_joblog(str(TRACES / "jobs.jsonl")))
    out = io.StringIO()
    assert write_jobs(jobs, out, {"source": "round trip"}) == 5
    path = tmp_path / "again.jsonl"
    path.write_text(out.getvalue())
    assert list(read_joblog(str(path))) == jobs


def test_the_header_is_optional_and_may_follow_blank_lines(tmp_path: Path) -> None:
    job = TraceJob("x", 5.0, 1.0, 1)
    bare, late = tmp_path / "bare.jsonl", tmp_path / "late.jsonl"
    bare.write_text(job_line(job))
    late.write_text("\n  \n" + header_line() + job_line(job) + "\n")
    assert list(read_joblog(str(bare))) == [job] == list(read_joblog(str(late)))


def _line(tmp_path: Path, text: str) -> str:
    path = tmp_path / "t.jsonl"
    path.write_text(header_line() + '{"id":"ok","submit_time":1,"duration_s":1,"gpus":1}\n' + text + "\n")
    return str(path)


@pytest.mark.parametrize(
    ("line", "column", "message"),
    [
        ('{"id":"a","submit_time":1,"duration_s":1,"gpus":1', 50, "not valid JSON: input data was truncated"),
        ('{"id":"a" "submit_time":1}', 11, "not valid JSON"),
        ('{"id":"a","submit_time":1,"duration_s":1}', None, "gpus: missing required field"),
        ('{"id":"a","submit_time":1,"duration_s":1,"gpus":-2}', 42, "job 'a': gpus: negative GPU count -2"),
        ('{"id":"a","submit_time":"noon","duration_s":1,"gpus":1}', 11,
         "submit_time: expected a number, got a string: 'noon'"),
        ('{"id":"a","submit_time":1,"duration_s":1,"gpus":1,"start_time":50,"end_time":10}', 67,
         "job 'a': end_time: ends before it starts (10 < start_time 50)"),
        ('{"id":"a","submit_time":1,"duration_s":-5,"gpus":1}', 27, "duration_s: negative duration: -5"),
        ('{"id":"a","submit_time":1e300,"duration_s":1,"gpus":1}', 11, "submit_time: time outside 1970..9999"),
        ('{"id":"a","submit_time":1,"duration_s":1,"gpus":2.5}', 42, "gpus: expected an integer, got a number"),
        ('[1, 2]', None, "expected an object, got an array"),
    ],
)  # fmt: skip
def test_a_malformed_line_names_file_line_and_column(tmp_path: Path, line: str, column: int | None,
                                                     message: str) -> None:  # fmt: skip
    path = _line(tmp_path, line)
    error = trace_error(lambda: read_joblog(path))
    assert where(error) == (3, column)
    assert str(error).startswith(f"{path}:3" + (f":{column}" if column else "") + ": ")
    assert message in str(error)


def test_a_value_with_control_characters_is_shown_escaped(tmp_path: Path) -> None:
    path = _line(tmp_path, '{"id":"a","submit_time":"\\u001b[31mred","duration_s":1,"gpus":1}')
    error = trace_error(lambda: read_joblog(path))
    assert "\x1b" not in str(error) and "\\x1b[31mred" in str(error)


def test_another_format_header_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.jsonl"
    path.write_text('{"format":"gpuq.jobs/v9"}\n')
    error = trace_error(lambda: read_joblog(str(path)))
    assert where(error) == (1, None) and "expected 'gpuq.jobs/v1', got 'gpuq.jobs/v9'" in str(error)


def test_not_utf8_is_named(tmp_path: Path) -> None:
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(b'{"id":"caf\xe9","submit_time":1,"duration_s":1,"gpus":1}\n')
    error = trace_error(lambda: read_joblog(str(path)))
    assert where(error) == (1, 11) and str(error).endswith(":1:11: not UTF-8 text (byte 0xe9)")


def test_the_first_job_comes_before_the_rest_is_read(tmp_path: Path) -> None:
    """Streaming: a malformed line far down does not stop the jobs before it from coming."""
    path = tmp_path / "long.jsonl"
    with path.open("w") as out:
        for i in range(50_000):
            out.write(job_line(TraceJob(str(i), float(i), 1.0, 1)))
        out.write("not json\n")
    jobs = read_joblog(str(path))
    assert next(jobs).id == "0" and next(jobs).id == "1"
    error = trace_error(lambda: jobs)
    assert error.line == 50_001


def test_memory_stays_bounded_however_long_the_file(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    line = job_line(TraceJob("job-000000", 1.0, 60.0, 8, "normal", 100, "alice", "nlp", "train"))
    with path.open("w") as out:
        out.write(line * 200_000)  # about 24 MB
    tracemalloc.start()
    try:
        count = sum(1 for _ in read_joblog(str(path)))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == 200_000
    assert peak < 2_000_000, peak  # a few jobs and one read buffer, not the file


def test_a_line_nested_too_deep_is_a_trace_error(tmp_path: Path) -> None:
    """msgspec refuses a value nested past its depth limit with RecursionError: the reader names
    the line, as for any other malformed one."""
    path = tmp_path / "jobs.jsonl"
    deep = b'{"id":"1","x":' + b"[" * 5000 + b"]" * 5000 + b"}\n"
    path.write_bytes(b'{"format":"gpuq.jobs/v1"}\n' + deep)
    with pytest.raises(TraceError, match=r"jobs\.jsonl:2:\d+: not valid JSON: nested too deep"):
        list(read_joblog(str(path)))


def test_an_id_longer_than_a_snapshot_allows_is_a_trace_error(tmp_path: Path) -> None:
    """Ids in traces are capped as in snapshots (512 characters): every view shows ids whole."""
    path = tmp_path / "jobs.jsonl"
    longest, longer = "7" * 512, "8" * 513
    path.write_text(f'{{"format":"gpuq.jobs/v1"}}\n{{"id":"{longest}","submit_time":0,"duration_s":60,"gpus":1}}\n'
                    f'{{"id":"{longer}","submit_time":0,"duration_s":60,"gpus":1}}\n')  # fmt: skip
    error = trace_error(lambda: read_joblog(str(path)))
    assert where(error)[0] == 3
    assert "id: 513 characters, more than the 512 a job id may have" in str(error)


def test_a_job_log_escapes_what_a_terminal_would_obey_and_reads_back_the_same(tmp_path: Path) -> None:
    """A job log (`trace export`, to a file or stdout) is read on terminals and in log viewers:
    hidden characters in a job's name are \\u escapes, and the log reads back the same job."""
    name = "a\u202eb\u2028c\x85d\x9be é"
    job = TraceJob(id="1", submit_time=0.0, duration_s=60.0, gpus=1, name=name)
    line = job_line(job)
    assert not any(ch in line for ch in "\u202e\u2028\x85\x9b") and "é" in line
    path = tmp_path / "jobs.jsonl"
    path.write_text(header_line() + line)
    (back,) = read_joblog(str(path))
    assert back.name == name
