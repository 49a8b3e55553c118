"""Text from outside reaches a terminal or a log viewer as data in every output format: a job
name carrying ESC sequences, an OSC that sets the window title, BEL, a bidi override, a line
separator, NEL or CSI is escaped in JSON (as ``\\u`` escapes: a JSON reader gets the same text
back) and in CSV (as the tables show it)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import msgspec
from click.testing import Result

from gpuq.model.codec import read_snapshot_file, write_snapshot
from tests.cli.conftest import SMALL, Runner

#: ESC [2J (clear), OSC 0 (window title) ended by BEL, RLO, LS, NEL, CSI
NAME = "a\x1b[2Jb\x1b]0;owned\x07c\u202ed\u2028e\x85f\x9bg é 日本"
RAW = [b"\x1b", b"\x07", "\u202e".encode(), "\u2028".encode(), "\x85".encode(), "\x9b".encode()]


def _hostile(tmp_path: Path) -> Path:
    snapshot = read_snapshot_file(SMALL)
    jobs = (msgspec.structs.replace(snapshot.jobs[0], name=NAME), *snapshot.jobs[1:])
    path = tmp_path / "hostile.json"
    with path.open("wb") as stream:
        write_snapshot(dataclasses.replace(snapshot, jobs=jobs), stream)
    return path


def _no_raw(result: Result) -> bytes:
    assert result.exit_code == 0, (result.output, result.exception)
    data = result.stdout_bytes
    assert not [raw for raw in RAW if raw in data], data
    return data


def test_json_escapes_what_a_terminal_would_obey_and_reads_back_the_same(gpuq: Runner, tmp_path: Path) -> None:
    path = str(_hostile(tmp_path))
    queue = _no_raw(gpuq("--snapshot", path, "queue", "-o", "json", "--state", "all"))
    (hostile,) = [job for job in json.loads(queue)["jobs"] if job["name"] == NAME]
    assert "é 日本" in queue.decode("utf-8")  # (other text as it is)
    job = _no_raw(gpuq("--snapshot", path, "job", hostile["id"], "-o", "json"))
    assert json.loads(job)["job"]["name"] == NAME
    snapshot = _no_raw(gpuq("--snapshot", path, "snapshot"))
    assert any(job["name"] == NAME for job in json.loads(snapshot)["jobs"])


def test_csv_cells_show_hidden_characters_as_escapes_as_the_tables_do(gpuq: Runner, tmp_path: Path) -> None:
    data = _no_raw(gpuq("--snapshot", str(_hostile(tmp_path)), "queue", "-o", "csv", "--state", "all"))
    text = data.decode("utf-8")
    assert "a\\x1b[2Jb\\x1b]0;owned\\x07c\\u202ed\\u2028e\\x85f\\x9bg é 日本" in text
