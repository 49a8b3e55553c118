"""Slurm accounting read as a trace (`gpuq.backends.slurm.trace`), on real captured sacct output:
job steps skipped, array tasks and het components as sacct lists them, a pending array's tasks
one job each, requeued runs merged into one job with their run times summed, and malformed
input refused with its file, line and column."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from gpuq.backends.slurm import trace
from gpuq.backends.slurm.sacct import SACCT_FIELDS, parse_sacct_json, parse_sacct_parsable
from gpuq.backends.slurm.trace import TRACE_FIELDS, read_sacct_json, read_sacct_parsable
from gpuq.backends.slurm.values import text_time
from gpuq.errors import NotFound
from gpuq.trace.record import TraceError, TraceJob
from tests.slurm.samples import FIXTURES, LIVE

SAMPLES = FIXTURES / "22.05"


def _rows(path: Path) -> list[dict[str, str]]:
    """The file's rows by column name (a header line first), split as the test sees them."""
    lines = path.read_text().splitlines()
    names = lines[0].split("|")
    return [dict(zip(names, line.split("|"), strict=True)) for line in lines[1:] if line]


def _by_id(jobs: list[TraceJob]) -> dict[str, TraceJob]:
    found = {j.id: j for j in jobs}
    assert len(found) == len(jobs), "a job was exported twice"
    return found


def test_trace_export_capture_merges_the_runs_of_requeued_jobs() -> None:
    path = LIVE / "sacct-trace-D.txt"
    rows = _rows(path)
    assert list(rows[0]) == list(TRACE_FIELDS)  # the capture is the export's own command
    runs: dict[str, list[dict[str, str]]] = defaultdict(list)
    for row in rows:
        runs[row["JobIDRaw"]].append(row)
    requeued = {raw for raw, rs in runs.items() if len(rs) > 1}
    assert requeued, "the capture has requeued jobs"
    # Their runs are not adjacent in sacct's output (it lists records as they were written).
    order = [row["JobIDRaw"] for row in rows]
    assert any(order.index(raw) + 1 != len(order) - order[::-1].index(raw) - 1 for raw in requeued)

    jobs = _by_id(list(read_sacct_parsable(str(path))))
    assert set(jobs) == {rs[-1]["JobID"] for rs in runs.values()}
    for raw, rs in runs.items():
        job = jobs[rs[-1]["JobID"]]
        assert job.submit_time == min(text_time(r["Submit"]) or 0 for r in rs)  # the original submit
        assert job.duration_s == sum(int(r["ElapsedRaw"]) for r in rs)
        assert job.state == rs[-1]["State"]
        assert job.end_time == text_time(rs[-1]["End"])
        assert job.job_class == rs[-1]["QOS"] and job.tenant == rs[-1]["Account"] and job.user == rs[-1]["User"]
        gpus = [int(t.split("gres/gpu=")[1].split(",")[0]) for r in rs for t in (r["AllocTRES"],) if "gres/gpu=" in t]
        assert job.gpus == max(gpus, default=0), raw
    # A run cancelled while pending (no allocation) does not count as a start.
    for raw in requeued:
        last = runs[raw][-1]
        if not last["AllocTRES"].count("gres/gpu"):
            assert jobs[last["JobID"]].gpus == max(
                int(r["AllocTRES"].split("gres/gpu=")[1].split(",")[0])
                for r in runs[raw]
                if "gres/gpu=" in r["AllocTRES"]
            )


def test_no_header_output_with_the_trace_fields_reads_the_same() -> None:
    headed = LIVE / "sacct-trace-D.txt"
    bare = (LIVE / "sacct-trace-D-n.txt").read_text().splitlines()
    jobs = list(read_sacct_parsable(str(LIVE / "sacct-trace-D-n.txt")))
    assert {j.id for j in jobs} == {line.split("|")[0] for line in bare}
    # The same records with the header give the same jobs (the -n capture is a shorter window).
    with_header = {j.id: j for j in read_sacct_parsable(str(headed))}
    single = {line.split("|")[1] for line in bare}
    for job in jobs:
        if sum(1 for row in _rows(headed) if row["JobIDRaw"] == job.id) == 1 and job.id in single:
            assert with_header[job.id] == job


def test_columns_are_found_by_the_header_in_any_order(tmp_path: Path) -> None:
    path = LIVE / "sacct-trace-D.txt"
    lines = [line.split("|") for line in path.read_text().splitlines()]
    order = [8, 0, 14, 9, 13, 1, 2, 3, 4, 5, 6, 7, 10, 11, 12, 15]  # State first, JobID second
    assert sorted(order) == list(range(len(TRACE_FIELDS)))
    moved = tmp_path / "moved.txt"
    moved.write_text("\n".join("|".join(row[i] for i in order) for row in lines) + "\n")
    assert list(read_sacct_parsable(str(moved))) == list(read_sacct_parsable(str(path)))


def test_job_steps_are_skipped() -> None:
    path = LIVE / "sacct-trace-steps.txt"
    rows = _rows(path)
    steps = [r for r in rows if "." in r["JobID"]]
    assert steps and all(r["JobID"].endswith(".batch") for r in steps)
    jobs = list(read_sacct_parsable(str(path)))
    assert {j.id for j in jobs} == {r["JobID"] for r in rows if "." not in r["JobID"]}
    # A step's own run time is not added to its job's.
    allocations = {r["JobID"]: int(r["ElapsedRaw"]) for r in rows if "." not in r["JobID"]}
    assert {j.id: j.duration_s for j in jobs} == allocations


def test_arrays_het_jobs_and_requeues_in_the_backends_own_capture(tmp_path: Path) -> None:
    """The backend's sacct capture (SACCT_FIELDS, no header) read with its header line: what a
    site gets from `sacct -P -o <those fields>`."""
    text = (LIVE / "sacct-parsable.txt").read_text()
    path = tmp_path / "sacct.txt"
    path.write_text("|".join(SACCT_FIELDS) + "\n" + text)
    records = parse_sacct_parsable(text)  # the backend's own reading of the same rows
    jobs = _by_id(list(read_sacct_parsable(str(path))))

    pending_arrays = {r.id for r in records if r.id.endswith("]")}
    assert pending_arrays == {"5_[0-3]"}
    assert {"5_0", "5_1", "5_2", "5_3"} <= set(jobs) and "5_[0-3]" not in jobs
    assert all(jobs[f"5_{i}"].start_time is None and jobs[f"5_{i}"].gpus == 4 for i in range(4))
    assert {"2_0", "2_1", "2_2"} <= set(jobs)  # array tasks, one job each, by their array ids
    assert jobs["6+0"].gpus == jobs["6+1"].gpus == 1  # het components: separate jobs, as sacct lists them
    assert jobs["1"].name == "a very long job name with | pipe and spaces xx"

    by_raw: dict[str, list[object]] = defaultdict(list)
    for rec in records:
        by_raw[rec.raw_id].append(rec)
    expected = {rs[-1].id for rs in by_raw.values() if not rs[-1].id.endswith("]")}  # type: ignore[attr-defined]
    assert set(jobs) == expected | {f"5_{i}" for i in range(4)}
    for rec_list in by_raw.values():
        recs = [r for r in records if r.raw_id == rec_list[0].raw_id]  # type: ignore[attr-defined]
        if len(recs) < 2:
            continue
        job = jobs[recs[-1].id]
        assert job.submit_time == min(r.submit for r in recs if r.submit is not None)
        ran = sum((r.end - r.start) for r in recs if r.start is not None and r.end is not None)
        assert job.duration_s == ran  # no Elapsed column: end - start of each run that had one
        assert job.state == recs[-1].raw_state and job.end_time == recs[-1].end


def test_elapsed_column_and_a_header_of_other_columns() -> None:
    path = SAMPLES / "sacct-D-parsable.txt"  # JobID…ExitCode…Elapsed…ReqTRES, with a header
    rows = _rows(path)
    jobs = _by_id(list(read_sacct_parsable(str(path))))
    for row in rows:
        if row["JobID"].endswith("]"):
            continue
        h, m, s = (int(x) for x in row["Elapsed"].split(":"))
        assert jobs[row["JobID"]].duration_s == h * 3600 + m * 60 + s
        assert jobs[row["JobID"]].start_time == (text_time(row["Start"]) if row["AllocTRES"] else None)
    still = {r["JobID"] for r in rows if r["End"] == "Unknown" and not r["JobID"].endswith("]")}
    assert still and all(jobs[i].end_time is None for i in still)


def test_json_reads_as_the_backends_json_parser_does() -> None:
    path = SAMPLES / "sacct.json"
    data = json.loads(path.read_text())
    records = parse_sacct_json(data)
    jobs = _by_id(list(read_sacct_json(str(path))))
    for rec, raw in zip(records, data["jobs"], strict=True):
        if rec.id.endswith("]"):  # the pending rest of an array: a hex bitmap of its tasks in 22.05 JSON
            bits = int(raw["array"]["task"], 16)
            tasks = {f"{rec.id.split('_')[0]}_{i}" for i in range(bits.bit_length()) if bits >> i & 1}
            assert tasks <= set(jobs) and all(jobs[t].start_time is None for t in tasks)
            continue
        job = jobs[rec.id]
        assert (job.submit_time, job.start_time, job.gpus, job.state) == (
            rec.submit,
            rec.start,
            rec.gpus,
            rec.raw_state,
        )
        assert job.duration_s == raw["time"]["elapsed"]


def test_json_with_requeued_runs_matches_the_parsable_capture_of_the_same_moment() -> None:
    from_json = _by_id(list(read_sacct_json(str(LIVE / "sacct-trace-D.json"))))
    from_text = _by_id(list(read_sacct_parsable(str(LIVE / "sacct-trace-D-n.txt"))))
    assert from_json == from_text


def test_json_streams_across_chunk_boundaries(monkeypatch: pytest.MonkeyPatch) -> None:
    path = str(SAMPLES / "sacct.json")
    whole = list(read_sacct_json(path))
    monkeypatch.setattr(trace, "_CHUNK", 7)  # every value split across reads
    assert list(read_sacct_json(path)) == whole


@pytest.mark.parametrize("chunk", [7, 1 << 20])
def test_json_errors_name_the_same_place_whatever_the_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    monkeypatch.setattr(trace, "_CHUNK", chunk)
    doc = json.loads((LIVE / "sacct-trace-D.json").read_text())
    doc["jobs"][3]["job_id"] = -1  # the fourth job: an id no job has
    jobs = [json.dumps(job) for job in doc.pop("jobs")]
    head = json.dumps(doc)[:-1] + ', "jobs": ['
    text = head + ", ".join(jobs) + "]}"  # one line, as a minified document
    path = _write(tmp_path, text, "one-line.json")
    with pytest.raises(TraceError, match="job_id -1") as err:
        list(read_sacct_json(path))
    fourth = len(head) + sum(len(job) + 2 for job in jobs[:3])
    assert text[fourth] == "{"
    assert (err.value.line, err.value.column) == (1, fourth + 1)


# ---------------------------------------------------------------- malformed input


def _write(tmp_path: Path, text: str, name: str = "bad.txt") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_a_truncated_line_names_its_line(tmp_path: Path) -> None:
    lines = (LIVE / "sacct-trace-D.txt").read_text().splitlines()
    lines[3] = lines[3].rsplit("|", 3)[0]
    with pytest.raises(TraceError) as err:
        list(read_sacct_parsable(_write(tmp_path, "\n".join(lines))))
    assert err.value.line == 4 and "bad.txt:4:" in str(err.value) and "expected 16" in str(err.value)


def test_a_bad_value_names_its_line_and_column(tmp_path: Path) -> None:
    lines = (LIVE / "sacct-trace-D.txt").read_text().splitlines()
    fields = lines[2].split("|")
    for at, value in ((7, "9" * 20), (11, "1960-01-01T00:00:00")):  # Priority past any; Start before 1970
        bad = [*fields[:at], value, *fields[at + 1 :]]
        lines[2] = "|".join(bad)
        with pytest.raises(TraceError) as err:
            list(read_sacct_parsable(_write(tmp_path, "\n".join(lines))))
        assert (err.value.line, err.value.column) == (3, len("|".join(bad[:at])) + 2), str(err.value)
    bad = [*fields[:9], "yesterday", *fields[10:]]  # Submit: not a time
    lines[2] = "|".join(bad)
    with pytest.raises(TraceError, match="no submit time") as err:
        list(read_sacct_parsable(_write(tmp_path, "\n".join(lines))))
    assert err.value.line == 3


def test_a_header_without_gpus_is_refused() -> None:
    path = SAMPLES / "sacct-noD-parsable.txt"  # JobID,JobIDRaw,JobName,QOS,State,Submit,Eligible,Start,End
    with pytest.raises(TraceError, match="lacks AllocTRES or ReqTRES") as err:
        list(read_sacct_parsable(str(path)))
    assert err.value.line == 1


def test_output_without_a_header_must_have_the_trace_fields(tmp_path: Path) -> None:
    text = (LIVE / "sacct-parsable.txt").read_text()  # SACCT_FIELDS: 17 columns, not TRACE_FIELDS
    with pytest.raises(TraceError, match="not the 16 TRACE_FIELDS") as err:
        list(read_sacct_parsable(_write(tmp_path, text)))
    assert err.value.line == 1


def test_a_pending_array_of_no_task_list_is_refused(tmp_path: Path) -> None:
    lines = (LIVE / "sacct-trace-D.txt").read_text().splitlines()
    fields = lines[2].split("|")
    assert fields[8] == "CANCELLED"  # (a job's last run: a requeued one would wait for its next)
    fields[0] = "391_[4-1]"
    lines[2] = "|".join(fields)
    with pytest.raises(TraceError, match="runs backwards") as err:
        list(read_sacct_parsable(_write(tmp_path, "\n".join(lines))))
    assert err.value.line == 3


def test_malformed_json_names_line_and_column(tmp_path: Path) -> None:
    text = (LIVE / "sacct-trace-D.json").read_text()
    cut = text[: text.index('"job_id"', len(text) // 2)]
    with pytest.raises(TraceError) as err:
        list(read_sacct_json(_write(tmp_path, cut, "cut.json")))
    # where the text ends: inside the job it cut off (line and column of the end)
    assert (err.value.line, err.value.column) == (cut.count("\n") + 1, len(cut) - cut.rfind("\n"))
    assert "cut.json:" in str(err.value)

    broken = text.replace('"job_id": 392,', '"jobid": 392,', 1)
    assert broken != text
    with pytest.raises(TraceError, match="no 'job_id'") as err:
        list(read_sacct_json(_write(tmp_path, broken, "id.json")))
    job_line = broken[: broken.index('"jobid": 392')].count("\n") + 1
    assert err.value.line < job_line  # the line where that job's object starts

    with pytest.raises(TraceError, match="no 'jobs' list"):
        list(read_sacct_json(_write(tmp_path, '{"meta": {}, "errors": []}', "nojobs.json")))
    with pytest.raises(TraceError, match="empty file"):
        list(read_sacct_json(_write(tmp_path, "", "empty.json")))
    with pytest.raises(TraceError, match="not an object") as err:
        list(read_sacct_json(_write(tmp_path, '{"jobs": [\n  1\n]}', "scalar.json")))
    assert (err.value.line, err.value.column) == (2, 3)


def test_a_missing_file_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(NotFound):
        list(read_sacct_parsable(str(tmp_path / "none.txt")))
    with pytest.raises(NotFound):
        list(read_sacct_json(str(tmp_path / "none.json")))
