"""Public GPU-cluster traces read in their published CSV formats (`--preset`); Philly's JSON is
`gpuq.trace.philly`'s.

- ``helios``: SenseTime Helios `cluster_log.csv`, schema in
  https://github.com/S-Lab-System-Group/HeliosData (README, "cluster_log.csv"): header
  ``job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue``;
  times are datetime strings (``2020-06-09 18:41:01``; POSIX numbers are read too), `duration`
  is end − start in seconds. The tenant is `vc`.
- ``alibaba-pai-2020``: Alibaba PAI `pai_job_table.csv` + `pai_task_table.csv`, schema in
  https://github.com/alibaba/clusterdata/tree/master/cluster-trace-gpu-v2020 (README and
  data/*.header): headerless CSVs ``job_name,inst_id,user,status,start_time,end_time`` and
  ``job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,plan_mem,plan_gpu,gpu_type``;
  times are seconds from a hidden origin. A job's submit is its job-table `start_time`, its start
  the earliest task start, its end the latest task end (else the job's), its GPUs
  ⌈Σ plan_gpu/100 × inst_num⌉ over its tasks. The job table is held (one small tuple per job)
  and the task table streamed; a job's tasks must be on consecutive lines (as released).
- ``alibaba-gpu-2023``: Alibaba `openb_pod_list_*.csv`, schema in
  https://github.com/alibaba/clusterdata/tree/master/cluster-trace-gpu-v2023 (README):
  ``name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,
  deletion_time,scheduled_time`` in seconds; submit = creation, start = scheduled (empty: never
  scheduled), end = deletion; GPUs = `num_gpu` (a GPU-sharing pod counts the GPU it shares).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Final

from gpuq.errors import BadInput, NotFound
from gpuq.textsafe import visible
from gpuq.trace.check import checked, count, moment, number, shown
from gpuq.trace.csvrows import cell_error, column_index, csv_rows
from gpuq.trace.record import TraceError, TraceJob

__all__ = [
    "ALIBABA_2023_COLUMNS",
    "HELIOS_COLUMNS",
    "PAI_JOB_COLUMNS",
    "PAI_TASK_COLUMNS",
    "pai_tables",
    "read_alibaba_2023",
    "read_helios",
    "read_pai_2020",
]

HELIOS_COLUMNS: Final = ("job_id", "user", "vc", "gpu_num", "cpu_num", "node_num", "state", "submit_time",
                         "start_time", "end_time", "duration", "queue")  # fmt: skip
PAI_JOB_COLUMNS: Final = ("job_name", "inst_id", "user", "status", "start_time", "end_time")
PAI_TASK_COLUMNS: Final = ("job_name", "task_name", "inst_num", "status", "start_time", "end_time", "plan_cpu",
                           "plan_mem", "plan_gpu", "gpu_type")  # fmt: skip
ALIBABA_2023_COLUMNS: Final = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos",
                               "pod_phase", "creation_time", "deletion_time", "scheduled_time")  # fmt: skip


def _optional(cell: str) -> str:
    """'' for the ways the public traces write "not recorded"."""
    cell = cell.strip()
    return "" if cell in ("", "None", "nan", "NaN", "NA", "null") else cell


def _class_index(path: str, header: list[str], class_from: str | None) -> int | None:
    return None if class_from is None else column_index(path, header, class_from, "--class-from")


def read_helios(path: str, class_from: str | None = None) -> Iterator[TraceJob]:
    """The jobs of a Helios `cluster_log.csv` (see the module's docstring)."""
    rows = csv_rows(path)
    _, header = next(rows)
    wanted = ("job_id", "user", "vc", "gpu_num", "state", "submit_time", "start_time", "end_time", "duration")
    at = {name: column_index(path, header, name, "helios") for name in wanted}
    klass = _class_index(path, header, class_from)
    i_id, i_user, i_vc, i_gpus, i_state = at["job_id"], at["user"], at["vc"], at["gpu_num"], at["state"]
    i_submit, i_start, i_end, i_dur = at["submit_time"], at["start_time"], at["end_time"], at["duration"]
    for line, row in rows:
        index = i_submit
        try:
            submit = moment(row[i_submit])
            index = i_start
            start = moment(cell) if (cell := _optional(row[i_start])) else None
            index = i_end
            end = moment(cell) if (cell := _optional(row[i_end])) else None
            index = i_dur
            cell = _optional(row[i_dur])
            duration = number(cell) if cell else (end - start if start is not None and end is not None else 0.0)
            index = i_gpus
            gpus = count(row[i_gpus])
        except ValueError as exc:
            raise cell_error(path, line, index, header[index], exc) from None
        job = TraceJob(id=row[i_id], submit_time=submit, duration_s=duration, gpus=gpus,
                       job_class=(row[klass] or None) if klass is not None else None, user=row[i_user],
                       tenant=row[i_vc], start_time=start, end_time=end, state=row[i_state])  # fmt: skip
        yield checked(job, path, line)


def read_alibaba_2023(path: str, class_from: str | None = None) -> Iterator[TraceJob]:
    """The pods of an Alibaba 2023 `openb_pod_list_*.csv` as jobs (see the module's docstring)."""
    rows = csv_rows(path)
    _, header = next(rows)
    at = {name: column_index(path, header, name, "alibaba-gpu-2023") for name in
          ("name", "num_gpu", "pod_phase", "creation_time", "deletion_time", "scheduled_time")}  # fmt: skip
    klass = _class_index(path, header, class_from)
    i_name, i_gpus, i_phase = at["name"], at["num_gpu"], at["pod_phase"]
    i_create, i_delete, i_sched = at["creation_time"], at["deletion_time"], at["scheduled_time"]
    for line, row in rows:
        index = i_create
        try:
            submit = moment(row[i_create])
            index = i_sched
            start = moment(cell) if (cell := _optional(row[i_sched])) else None
            index = i_delete
            end = moment(cell) if (cell := _optional(row[i_delete])) else None
            index = i_gpus
            gpus = count(row[i_gpus])
        except ValueError as exc:
            raise cell_error(path, line, index, header[index], exc) from None
        if start is None:  # (a pod never scheduled: its deletion is no end of a run)
            end, duration = None, 0.0
        else:
            duration = end - start if end is not None else 0.0
        job = TraceJob(id=row[i_name], submit_time=submit, duration_s=duration, gpus=gpus,
                       job_class=(row[klass] or None) if klass is not None else None, name=row[i_name],
                       start_time=start, end_time=end, state=row[i_phase])  # fmt: skip
        yield checked(job, path, line)


def pai_tables(path: str) -> tuple[str, str]:
    """The job and task tables of a PAI 2020 trace: `path` is their directory or either file
    (the other beside it, named as released: ``pai_job_table.csv``, ``pai_task_table.csv``,
    either also ``.csv.gz``)."""
    base = Path(path)
    if not base.exists():
        raise NotFound(f"{visible(path)}: no such trace file or directory")
    folder = base if base.is_dir() else base.parent
    found: list[str] = []
    for stem in ("pai_job_table", "pai_task_table"):
        for suffix in (".csv", ".csv.gz"):
            candidate = folder / f"{stem}{suffix}"
            if candidate.is_file():
                found.append(str(candidate))
                break
        else:
            raise BadInput(f"{visible(str(folder))}: no {stem}.csv here (alibaba-pai-2020 reads pai_job_table.csv "
                           "and pai_task_table.csv, unpacked from their .tar.gz)")  # fmt: skip
    return found[0], found[1]


def read_pai_2020(path: str, class_from: str | None = None) -> Iterator[TraceJob]:
    """The jobs of an Alibaba PAI 2020 trace (see the module's docstring); `class_from` names a
    column of the task table (e.g. ``gpu_type``: the first task's value) or of the job table."""
    jobs_path, tasks_path = pai_tables(path)
    if class_from is not None and class_from not in PAI_JOB_COLUMNS + PAI_TASK_COLUMNS:
        raise BadInput(f"--class-from {visible(class_from)!r}: not a PAI column (job table: "
                       f"{', '.join(PAI_JOB_COLUMNS)}; task table: {', '.join(PAI_TASK_COLUMNS)})")  # fmt: skip
    return _pai(jobs_path, tasks_path, class_from)


_JobRow = tuple[str, str, float, float | None, str, int]  # user, status, submit, end, class cell, line


def _pai_jobs(path: str, class_from: str | None) -> dict[str, _JobRow]:
    table: dict[str, _JobRow] = {}
    klass = PAI_JOB_COLUMNS.index(class_from) if class_from in PAI_JOB_COLUMNS else None
    rows = csv_rows(path, PAI_JOB_COLUMNS)
    next(rows)
    for line, row in rows:
        name = row[0]
        index = 4
        try:
            submit = moment(row[4])
            index = 5
            end = moment(cell) if (cell := _optional(row[5])) else None
        except ValueError as exc:
            raise cell_error(path, line, index, PAI_JOB_COLUMNS[index], exc) from None
        if name in table:
            raise TraceError(path, line, f"job_name: job {shown(name)} listed twice (first on line "
                             f"{table[name][5]})", 1)  # fmt: skip
        table[name] = (row[2], row[3], submit, end, row[klass] if klass is not None else "", line)
    return table


def _pai(jobs_path: str, tasks_path: str, class_from: str | None) -> Iterator[TraceJob]:
    table = _pai_jobs(jobs_path, class_from)
    task_class = PAI_TASK_COLUMNS.index(class_from) if class_from in PAI_TASK_COLUMNS else None
    current: str | None = None
    gpus, start, end, klass = 0.0, math.inf, -math.inf, ""
    rows = csv_rows(tasks_path, PAI_TASK_COLUMNS)
    next(rows)
    for line, row in rows:
        name = row[0]
        if name != current:
            if current is not None:
                yield _pai_job(jobs_path, current, table.pop(current), gpus, start, end, klass)
            current = name
            if name not in table:
                raise TraceError(tasks_path, line, f"job_name: job {shown(name)} is not in "
                                 f"{os.path.basename(jobs_path)}, or its tasks are not on consecutive lines "
                                 "(sort the task table by job_name)", 1)  # fmt: skip
            gpus, start, end = 0.0, math.inf, -math.inf
            klass = row[task_class] if task_class is not None else ""
        index = 2
        try:
            instances = number(_optional(row[2]) or "1")
            index = 8
            share = number(_optional(row[8]) or "0")
            if instances < 0 or share < 0:
                raise ValueError(f"negative value: {shown(row[index])}")
            index = 4
            if cell := _optional(row[4]):
                start = min(start, moment(cell))
            index = 5
            if cell := _optional(row[5]):
                end = max(end, moment(cell))
        except ValueError as exc:
            raise cell_error(tasks_path, line, index, PAI_TASK_COLUMNS[index], exc) from None
        gpus += share / 100.0 * instances
    if current is not None:
        yield _pai_job(jobs_path, current, table.pop(current), gpus, start, end, klass)
    for name, job in table.items():  # jobs without a task: recorded, never started
        yield _pai_job(jobs_path, name, job, 0.0, math.inf, -math.inf, "")


def _pai_job(path: str, name: str, job: _JobRow, gpus: float, start: float, end: float, task_class: str) -> TraceJob:
    user, status, submit, job_end, job_class, line = job
    started = start if start != math.inf else None
    ended = end if end != -math.inf else job_end
    if started is None:
        ended = None
    duration = ended - started if started is not None and ended is not None else 0.0
    klass = task_class or job_class or None
    trace_job = TraceJob(id=name, submit_time=submit, duration_s=duration, gpus=math.ceil(gpus - 1e-9),
                         job_class=klass, user=user, start_time=started, end_time=ended, state=status)  # fmt: skip
    return checked(trace_job, path, line)
