"""The CSV presets, read from fixtures written from their published formats: Helios
`cluster_log.csv` (S-Lab-System-Group/HeliosData), Alibaba PAI 2020 `pai_job_table.csv` +
`pai_task_table.csv` (alibaba/clusterdata cluster-trace-gpu-v2020, headerless) and the Alibaba
2023 GPU pod list (cluster-trace-gpu-v2023 `openb_pod_list_*.csv`)."""

from __future__ import annotations

import shutil
from calendar import timegm
from pathlib import Path

import pytest

from gpuq.errors import BadInput
from gpuq.service.tracing import open_trace, trace_format
from gpuq.trace import TraceJob, read_alibaba_2023, read_helios, read_pai_2020
from gpuq.trace.presets import HELIOS_COLUMNS, PAI_JOB_COLUMNS
from tests.trace.conftest import TRACES, trace_error, where

HELIOS = str(TRACES / "helios_cluster_log.csv")
PAI = TRACES / "pai"
POD_LIST = str(TRACES / "alibaba_2023_pod_list.csv")


def utc(*fields: int) -> float:
    return float(timegm((*fields, 0, 0, 0)))


def test_helios_reads_job_for_job() -> None:
    jobs = {j.id: j for j in read_helios(HELIOS)}
    assert jobs["1425511"] == TraceJob(
        "1425511", utc(2020, 6, 9, 18, 41, 1), 36848.0, 1, user="uXBbc", tenant="vcJkd",
        start_time=utc(2020, 6, 9, 18, 41, 1), end_time=utc(2020, 6, 10, 4, 55, 9), state="COMPLETED",
    )  # fmt: skip
    assert jobs["1425513"].recorded_wait_s == 600.0 and jobs["1425513"].gpus == 8
    never = jobs["1425514"]
    assert (never.start_time, never.end_time, never.gpus, never.state) == (None, None, 16, "CANCELLED")
    assert trace_format(HELIOS) == "helios"


def test_helios_takes_epoch_seconds_too(tmp_path: Path) -> None:
    path = tmp_path / "cluster_log.csv"
    path.write_text(",".join(HELIOS_COLUMNS) + "\n7,u,vc,2,1,1,COMPLETED,1591728061,1591728071,1591728171,100,10\n")
    (job,) = read_helios(str(path))
    assert (job.submit_time, job.start_time, job.duration_s, job.gpus) == (1591728061.0, 1591728071.0, 100.0, 2)


_ROW = "1,u,vc,{gpus},1,1,COMPLETED,{submit},2020-06-09 18:41:01,{end},10,0"


@pytest.mark.parametrize(
    ("row", "column", "message"),
    [
        ("1,u,vc,1,1,1,COMPLETED,2020-06-09 18:41:01", 9, "expected 12 columns"),
        (_ROW.format(gpus=1, submit="soon", end="2020-06-09 19:00:00"), 8, "submit_time: not a time: 'soon'"),
        (_ROW.format(gpus=-4, submit="2020-06-09 18:00:00", end="2020-06-09 19:00:00"), 4,
         "gpu_num: negative GPU count: '-4'"),
        (_ROW.format(gpus="two", submit="2020-06-09 18:00:00", end="2020-06-09 19:00:00"), 4,
         "gpu_num: not a number: 'two'"),
        (_ROW.format(gpus=1, submit="2020-06-09 18:00:00", end="2020-06-09 18:00:00"), None,
         "end_time: ends before it starts"),
    ],
)  # fmt: skip
def test_a_malformed_helios_row_names_line_and_column(tmp_path: Path, row: str, column: int | None,
                                                      message: str) -> None:  # fmt: skip
    path = tmp_path / "cluster_log.csv"
    path.write_text(",".join(HELIOS_COLUMNS) + "\n" + _ROW.format(gpus=1, submit=1, end=1591728071) + "\n" + row + "\n")
    error = trace_error(lambda: read_helios(str(path)))
    assert where(error) == (3, column), str(error)
    assert message in str(error)


def test_a_helios_file_without_its_columns_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "cluster_log.csv"
    path.write_text("job_id,user\n1,u\n")
    error = trace_error(lambda: read_helios(str(path)))
    assert error.line == 1 and "no column 'vc' in the header (columns: job_id, user)" in str(error)


def test_pai_joins_tasks_to_their_jobs() -> None:
    first, second, waiting = read_pai_2020(str(PAI))
    # ps 0 % + 2 workers × 50 % + an evaluator's 25 % = 1.25 GPUs: 2 whole GPUs
    assert first == TraceJob("4b3f04b66a525d2df903eb16", 4550879.0, 526.0, 2, user="58540f191766",
                             start_time=4550890.0, end_time=4551416.0, state="Terminated")  # fmt: skip
    assert first.recorded_wait_s == 11.0
    assert (second.gpus, second.start_time, second.duration_s) == (2, 1739162.0, 38.0)
    assert (waiting.id, waiting.start_time, waiting.gpus, waiting.state) == ("af724763f4f5d0beef445849", None, 0,
                                                                              "Waiting")  # fmt: skip


def test_pai_opens_from_the_directory_or_either_table() -> None:
    expected = list(read_pai_2020(str(PAI)))
    assert trace_format(str(PAI)) == "alibaba-pai-2020"
    assert list(open_trace(str(PAI / "pai_task_table.csv"), preset="alibaba-pai-2020", seed=1))[0].id == expected[0].id
    assert [j.id for j in read_pai_2020(str(PAI / "pai_job_table.csv"))] == [j.id for j in expected]


def test_pai_class_from_a_task_column() -> None:
    assert [j.job_class for j in read_pai_2020(str(PAI), class_from="gpu_type")] == ["MISC", "V100", None]
    with pytest.raises(BadInput, match="not a PAI column"):
        read_pai_2020(str(PAI), class_from="qos")


def _pai_copy(tmp_path: Path) -> Path:
    folder = tmp_path / "pai"
    shutil.copytree(PAI, folder)
    return folder


def test_pai_takes_a_header_row_where_one_was_added(tmp_path: Path) -> None:
    folder = _pai_copy(tmp_path)
    jobs = folder / "pai_job_table.csv"
    jobs.write_text(",".join(PAI_JOB_COLUMNS) + "\n" + jobs.read_text())
    assert len(list(read_pai_2020(str(folder)))) == 3


def test_pai_tasks_of_a_job_must_be_together(tmp_path: Path) -> None:
    folder = _pai_copy(tmp_path)
    tasks = folder / "pai_task_table.csv"
    lines = tasks.read_text().splitlines()
    tasks.write_text("\n".join([lines[0], lines[3], lines[1]]) + "\n")
    error = trace_error(lambda: read_pai_2020(str(folder)))
    assert where(error) == (3, 1) and "not on consecutive lines" in str(error)


def test_a_malformed_pai_task_names_its_cell(tmp_path: Path) -> None:
    folder = _pai_copy(tmp_path)
    tasks = folder / "pai_task_table.csv"
    tasks.write_text(tasks.read_text().replace("200.0,V100", "lots,V100"))
    error = trace_error(lambda: read_pai_2020(str(folder)))
    assert where(error) == (4, 9) and "plan_gpu: not a number: 'lots'" in str(error)
    tasks.write_text("4b3f04b66a525d2df903eb16,ps,1.0\n")
    error = trace_error(lambda: read_pai_2020(str(folder)))
    assert where(error) == (1, 4) and "expected 10 columns" in str(error)


def test_pai_without_its_tables_is_refused(tmp_path: Path) -> None:
    (tmp_path / "pai_job_table.csv").write_text("")
    with pytest.raises(BadInput, match="no pai_task_table.csv here"):
        read_pai_2020(str(tmp_path))


def test_alibaba_2023_pods_are_jobs() -> None:
    pods = {j.id: j for j in read_alibaba_2023(POD_LIST)}
    assert pods["openb-pod-0017"] == TraceJob("openb-pod-0017", 9437497.0, 1332357.0, 8, name="openb-pod-0017",
                                              start_time=9437497.0, end_time=10769854.0, state="Succeeded")  # fmt: skip
    assert pods["openb-pod-0035"].recorded_wait_s == 5.0
    pending = pods["openb-pod-0061"]
    assert (pending.start_time, pending.end_time, pending.duration_s, pending.state) == (None, None, 0.0, "Pending")
    assert trace_format(POD_LIST) == "alibaba-gpu-2023"


def test_alibaba_2023_classes_from_qos() -> None:
    classes = [j.job_class for j in open_trace(POD_LIST, class_from="qos")]
    assert classes == ["Burstable", "BE", "LS", "BE", "LS"]


def test_a_malformed_pod_row(tmp_path: Path) -> None:
    path = tmp_path / "openb_pod_list.csv"
    text = Path(POD_LIST).read_text().replace("9679175,9973826,9679175", "9679175,9973826,later")
    path.write_text(text)
    error = trace_error(lambda: read_alibaba_2023(str(path)))
    assert where(error) == (3, 11) and "scheduled_time: not a time: 'later'" in str(error)
