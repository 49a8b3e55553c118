"""Any CSV trace, through a column mapping: ``--columns submit=submission_time,gpus=num_gpu,…``.

Keys are `TraceJob` fields or their short aliases (`ALIASES`); values are the CSV's column
names (its header row). `submit` and `gpus` are required, and the run time comes from
`duration` or from `start` and `end`. Times are POSIX seconds or ISO 8601 (a time without an
offset is UTC); durations are seconds or ``1h30m``-like (`gpuq.timefmt.parse_duration`); an
empty cell is "not recorded". Without `id`, a job's id is its line number.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Final

from gpuq.errors import BadInput
from gpuq.textsafe import visible
from gpuq.trace.check import checked, count, moment, number, span
from gpuq.trace.csvrows import cell_error, column_index, csv_rows
from gpuq.trace.record import TraceError, TraceJob

__all__ = ["ALIASES", "FIELDS", "parse_columns", "read_csv"]

#: short keys of `--columns` -> the TraceJob field they fill
ALIASES: Final = {
    "id": "id",
    "submit": "submit_time",
    "start": "start_time",
    "end": "end_time",
    "duration": "duration_s",
    "gpus": "gpus",
    "class": "job_class",
    "priority": "priority",
    "user": "user",
    "tenant": "tenant",
    "name": "name",
    "state": "state",
    "checkpoint_interval": "checkpoint_interval_s",
}
#: the fields a column can fill
FIELDS: Final = tuple(dict.fromkeys(ALIASES.values()))


def _integer(text: str) -> int:
    value = number(text)
    if not value.is_integer() or abs(value) > 2**53:
        raise ValueError(f"not a whole number: {text!r}")
    return int(value)


def _text(text: str) -> str:
    return text


_PARSERS: Final[dict[str, Callable[[str], object]]] = {
    "id": _text,
    "submit_time": moment,
    "start_time": moment,
    "end_time": moment,
    "duration_s": span,
    "gpus": count,
    "job_class": _text,
    "priority": _integer,
    "user": _text,
    "tenant": _text,
    "name": _text,
    "state": _text,
    "checkpoint_interval_s": span,
}


def parse_columns(spec: str | Mapping[str, str]) -> dict[str, str]:
    """``submit=submission_time,gpus=num_gpu`` (or a mapping) -> {TraceJob field: column}.
    BadInput for an unknown key, a key given twice, an empty column, a missing required key."""
    pairs: list[tuple[str, str]]
    if isinstance(spec, str):
        pairs = []
        for part in (p.strip() for p in spec.split(",")):
            if not part:
                continue
            key, eq, column = part.partition("=")
            if not eq:
                raise BadInput(f"--columns: {visible(part)!r} is not KEY=COLUMN")
            pairs.append((key.strip(), column.strip()))
    else:
        pairs = [(k, v) for k, v in spec.items()]
    mapping: dict[str, str] = {}
    for key, column in pairs:
        field = ALIASES.get(key, key if key in FIELDS else None)
        if field is None:
            raise BadInput(f"--columns: unknown key {visible(key)!r} (one of {', '.join(ALIASES)})")
        if field in mapping:
            raise BadInput(f"--columns: {visible(key)!r} given twice")
        if not column:
            raise BadInput(f"--columns: {visible(key)!r} names no column")
        mapping[field] = column
    missing = [k for k, f in (("submit", "submit_time"), ("gpus", "gpus")) if f not in mapping]
    if "duration_s" not in mapping and not {"start_time", "end_time"} <= set(mapping):
        missing.append("duration (or start and end)")
    if missing:
        raise BadInput(f"--columns: no column for {', '.join(missing)}")
    return mapping


def read_csv(path: str, columns: Mapping[str, str] | str, class_from: str | None = None) -> Iterator[TraceJob]:
    """The jobs of a CSV with a header row, each field from its mapped column (see the module's
    docstring); `class_from`: the column whose value is the job's class. The mapping is checked
    here; the file as the jobs are taken."""
    mapping = parse_columns(columns)
    if class_from is not None:
        mapping["job_class"] = class_from
    return _read(path, mapping)


def _read(path: str, mapping: dict[str, str]) -> Iterator[TraceJob]:
    rows = csv_rows(path)
    _, header = next(rows)
    where = [(field, column_index(path, header, column, f"--columns {field}={column}"), column)
             for field, column in mapping.items()]  # fmt: skip
    required = {"submit_time", "gpus"}
    for line, row in rows:
        values: dict[str, object] = {}
        for field, index, column in where:
            cell = row[index].strip()
            if not cell:
                if field in required:
                    raise TraceError(path, line, f"{column}: missing value", index + 1)
                continue
            try:
                values[field] = _PARSERS[field](cell)
            except ValueError as exc:
                raise cell_error(path, line, index, column, exc) from None
        start, end = values.get("start_time"), values.get("end_time")
        if "duration_s" not in values:
            values["duration_s"] = end - start if isinstance(start, float) and isinstance(end, float) else 0.0
        values.setdefault("id", str(line))
        yield checked(TraceJob(**values), path, line)  # type: ignore[arg-type]
