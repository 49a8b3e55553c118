"""Any CSV through `--columns`: the mapping's checks, times as epoch or ISO 8601, durations as
seconds or 1h30m, classes from a column."""

from __future__ import annotations

from calendar import timegm
from pathlib import Path

import pytest

from gpuq.errors import BadInput
from gpuq.service.tracing import open_trace
from gpuq.trace import parse_columns, read_csv
from tests.trace.conftest import TRACES, trace_error, where

MAPPED = str(TRACES / "mapped.csv")
COLUMNS = "id=job,submit=queued_at,start=began,duration=wall,gpus=num_gpu,tenant=account"


def test_columns_parse_to_fields() -> None:
    assert parse_columns(" submit=queued_at , gpus=num_gpu,duration=wall,") == {
        "submit_time": "queued_at", "gpus": "num_gpu", "duration_s": "wall"}  # fmt: skip
    assert parse_columns({"submit_time": "s", "gpus": "g", "start": "a", "end": "b"})["end_time"] == "b"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("submit=a,gpus=b,duration=c,colour=d", "unknown key 'colour'"),
        ("submit=a,gpus=b,duration=c,submit=e", "'submit' given twice"),
        ("submit=a,gpus=b,duration=", "'duration' names no column"),
        ("submit=a,gpus", "'gpus' is not KEY=COLUMN"),
        ("submit=a,duration=c", "no column for gpus"),
        ("submit=a,gpus=b,start=s", "no column for duration (or start and end)"),
    ],
)
def test_a_bad_mapping_is_one_clear_error(spec: str, message: str) -> None:
    with pytest.raises(BadInput, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_columns(spec)


def test_a_mapped_csv_reads_epoch_iso_and_durations() -> None:
    a1, a2, a3 = read_csv(MAPPED, COLUMNS, class_from="qos")
    t = float(timegm((2024, 3, 1, 10, 0, 0, 0, 0, 0)))
    assert (a1.id, a1.submit_time, a1.start_time, a1.duration_s, a1.gpus) == ("a1", t, t + 300, 5400.0, 4)
    assert (a1.job_class, a1.tenant) == ("gold", "physics")
    assert (a2.submit_time, a2.start_time, a2.duration_s, a2.job_class) == (1709287200.0, 1709287260.0, 90.0, "silver")
    assert (a3.submit_time, a3.start_time, a3.duration_s) == (t + 600, None, 7200.0)  # no offset: UTC


def test_without_an_id_column_the_line_is_the_id(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("s,g,b,e\n10,1,20,50\n\n11,2,30,31\n")
    jobs = list(read_csv(str(path), "submit=s,gpus=g,start=b,end=e"))
    assert [(j.id, j.duration_s, j.end_time) for j in jobs] == [("2", 30.0, 50.0), ("4", 1.0, 31.0)]


@pytest.mark.parametrize(
    ("row", "column", "message"),
    [
        ("x,noon,,1,1,gold,p", 2, "queued_at: not a time: 'noon'"),
        ("x,1,,1,-1,gold,p", 5, "num_gpu: negative GPU count: '-1'"),
        ("x,1,,forever,1,gold,p", 4, "wall: not a duration: 'forever'"),
        ("x,,,1,1,gold,p", 2, "queued_at: missing value"),
        ("x,1,,1,1,gold", 7, "expected 7 columns"),
        ('x,1,"2,1,1,gold,p', None, "not valid CSV"),
    ],
)
def test_a_malformed_row_names_line_and_column(tmp_path: Path, row: str, column: int | None, message: str) -> None:
    path = tmp_path / "t.csv"
    path.write_text(Path(MAPPED).read_text() + row + "\n")
    error = trace_error(lambda: read_csv(str(path), COLUMNS))
    assert where(error)[0] >= 5 and where(error)[1] == column, str(error)
    assert message in str(error)


def test_a_mapped_column_the_file_lacks(tmp_path: Path) -> None:
    error = trace_error(lambda: read_csv(MAPPED, COLUMNS.replace("num_gpu", "gpu_count")))
    assert error.line == 1 and "--columns gpus=gpu_count: no column 'gpu_count' in the header" in str(error)


def test_a_csv_without_columns_needs_them() -> None:
    with pytest.raises(BadInput, match="cannot tell the trace's format; give --preset"):
        open_trace(MAPPED)
    assert len(list(open_trace(MAPPED, columns=parse_columns(COLUMNS)))) == 3


def test_a_csv_that_is_not_utf8_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "latin1.csv"
    path.write_bytes(b"s,g,d\n1,1,1\n2,1,caf\xe9\n")
    error = trace_error(lambda: read_csv(str(path), "submit=s,gpus=g,duration=d"))
    assert where(error) == (3, 8) and "not UTF-8 text (byte 0xe9)" in str(error)
