"""`overview -o csv` and `preemptions -o csv`: every section of the JSON document in one CSV,
`section` first, each row filling its own section's columns (README "CSV output")."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from typing import Any

import pytest
from click.testing import Result

Run = Callable[..., Result]


def _csv(result: Result) -> tuple[list[str], list[dict[str, str]]]:
    assert result.exit_code == 0, result.output
    reader = csv.DictReader(io.StringIO(result.stdout))
    rows = list(reader)
    assert reader.fieldnames is not None
    return list(reader.fieldnames), rows


def _json(result: Result) -> dict[str, Any]:
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return " ".join(map(str, value))
    return str(value)


def _section(rows: list[dict[str, str]], name: str) -> list[dict[str, str]]:
    return [r for r in rows if r["section"] == name]


def _filled(row: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in row.items() if v != "" and k != "section"}


def test_overview_csv_has_every_section_of_the_json(gpuq: Run, small: str) -> None:
    header, rows = _csv(gpuq("--snapshot", small, "overview", "-o", "csv"))
    doc = _json(gpuq("--snapshot", small, "overview", "-o", "json"))
    assert header[0] == "section"
    assert [r["section"] for r in rows] == sorted(
        (r["section"] for r in rows),
        key=["snapshot", "gpus", "jobs", "sla", "top_pending", "recent_preemptions"].index,
    )
    snapshot = {r["key"]: r["value"] for r in _section(rows, "snapshot")}
    assert snapshot == {"cluster": "lab", "backend": doc["backend"], "taken_at": "2026-11-29T18:00:00Z"}
    assert {r["key"]: int(r["value"]) for r in _section(rows, "gpus")} == doc["gpus"]
    assert {r["key"]: int(r["value"]) for r in _section(rows, "jobs")} == doc["jobs"]
    sla = {r["class"]: r for r in _section(rows, "sla")}
    assert set(sla) == set(doc["sla"]) == {"urgent", "normal", "low"}
    for name, fields in doc["sla"].items():
        assert _filled(sla[name]) == {"class": name, **{k: _text(v) for k, v in fields.items() if v is not None}}
    top = _section(rows, "top_pending")
    assert [r["id"] for r in top] == [t["id"] for t in doc["top_pending"]] == ["203", "202", "201"]
    for row, item in zip(top, doc["top_pending"], strict=True):
        assert _filled(row) == {k: _text(v) for k, v in item.items() if _text(v) != ""}
    events = _section(rows, "recent_preemptions")
    assert len(events) == len(doc["recent_preemptions"]) == 2
    for row, item in zip(events, doc["recent_preemptions"], strict=True):
        assert _filled(row) == {k: _text(v) for k, v in item.items() if _text(v) != ""}


def test_preemptions_csv_has_jobs_and_events(gpuq: Run, small: str) -> None:
    header, rows = _csv(gpuq("--snapshot", small, "preemptions", "-o", "csv"))
    doc = _json(gpuq("--snapshot", small, "preemptions", "-o", "json"))
    assert header[0] == "section"
    assert {r["section"] for r in rows} == {"snapshot", "jobs", "events"}
    snapshot = {r["key"]: r["value"] for r in _section(rows, "snapshot")}
    assert snapshot == {"cluster": "lab", "taken_at": "2026-11-29T18:00:00Z"}
    for name in ("jobs", "events"):
        got = [_filled(r) for r in _section(rows, name)]
        assert got == [{k: _text(v) for k, v in item.items() if _text(v) != ""} for item in doc[name]]
        assert got  # small.json has a preempted job and two events
    assert _section(rows, "jobs")[0]["id"] == "102"


@pytest.mark.parametrize("command", [["overview"], ["preemptions"]])
def test_columns_stay_put_when_a_section_is_empty(gpuq: Run, small: str, command: list[str]) -> None:
    """The header is fixed: a cluster without preemptions has the same columns."""
    full, _ = _csv(gpuq("--snapshot", small, *command, "-o", "csv"))
    shorter = [*command, "--limit", "0"] if command == ["preemptions"] else [*command, "--top", "1"]
    header, _ = _csv(gpuq("--snapshot", small, *shorter, "-o", "csv"))
    assert header == full
