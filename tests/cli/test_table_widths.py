"""Every table at 60, 80, 120 and 200 columns: no id, number or unit is cut, the least important
columns go first and a line names them, free text wraps, and `-o wide` shows every column.

Each table is read back cell by cell (tests/cli/tables.py) and compared with the same command's
`-o wide` output on a 400-column page, where nothing wraps and nothing is dropped.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import Result

from gpuq.model import JobState, Node, NodeState
from gpuq.model.codec import encode_snapshot
from gpuq.views.columns import (
    AUDIT,
    GPUS,
    OVERVIEW_EVENTS,
    OVERVIEW_SLA,
    OVERVIEW_TOP,
    PREEMPTION_EVENTS,
    PREEMPTION_JOBS,
    PREVIEW_SPARED,
    PREVIEW_VICTIMS,
    QUEUE,
    SLA,
    Kind,
)
from tests.cli.conftest import Runner
from tests.cli.tables import JOB_IDS, NODE_NAMES, Parsed, T, normal, parse_tables, write_crowded
from tests.factories import make_job, make_snapshot

WIDTHS = (60, 80, 120, 200)
#: each command and the tables it prints, in order
COMMANDS = {
    "queue": (["queue"], [QUEUE]),
    "gpus": (["gpus"], [GPUS]),
    "sla": (["sla"], [SLA]),
    "overview": (["overview"], [OVERVIEW_SLA, OVERVIEW_TOP, OVERVIEW_EVENTS]),
    "preemptions": (["preemptions"], [PREEMPTION_JOBS, PREEMPTION_EVENTS]),
    "preview": (["preview", "4821400"], [PREVIEW_VICTIMS, PREVIEW_SPARED]),
    "audit": (["audit"], [AUDIT]),
}


@pytest.fixture
def crowded(tmp_path: Path) -> str:
    return write_crowded(tmp_path)


@pytest.fixture
def audited(xdg: dict[str, Path]) -> None:
    """Two audit records with long changes and reasons, at fixed times."""
    from gpuq.audit import AuditLog, make_record

    log = AuditLog()
    log.append(make_record(backend="slurm", cluster="prod-east", action="bump", target="4821337_12", result="ok",
                           reason="customer demo at 09:00, approved by the duty manager on the incident call",
                           before={"priority": 100}, after={"priority": 900}, now=1_795_100_000.0))  # fmt: skip
    log.append(make_record(backend="slurm", cluster="prod-east", action="exempt", target="4821338", result="refused",
                           error="job 4821338 is completed; only pending, running or suspended jobs can be exempted",
                           now=1_795_100_100.0))  # fmt: skip


def _run(gpuq: Runner, monkeypatch: pytest.MonkeyPatch, width: int, *args: str) -> Result:
    monkeypatch.setenv("COLUMNS", str(width))
    result = gpuq(*args)
    assert result.exit_code == 0, result.output
    return result


def _by_id(table: Parsed) -> dict[str, dict[str, str]]:
    first = table.spec.columns[0].name
    return {row[first]: row for row in table.rows}


def _check(reference: list[Parsed], got: list[Parsed], width: int, text: str) -> None:
    assert [t.spec.name for t in got] == [t.spec.name for t in reference]
    for line in text.split("\n"):
        assert len(line) <= width, f"{len(line)} > {width}: {line!r}"
    for ref, table in zip(reference, got, strict=True):
        kinds = {c.name: c.kind for c in table.spec.columns}
        ranks = {c.name: c.rank for c in table.spec.columns}
        blank = {name for name in table.spec.names if not any(row.get(name) for row in ref.rows)}
        hidden = table.hidden or []
        # every column is shown, named as hidden, or had nothing to show
        assert set(table.shown) | set(hidden) | blank == set(table.spec.names), table.spec.name
        assert not set(hidden) & set(table.shown)
        assert not set(hidden) & blank
        # what is always shown is shown; the hidden ones are the least important of the rest
        assert {n for n, r in ranks.items() if r == 0} <= set(table.shown), table.spec.name
        if hidden:
            assert min(ranks[n] for n in hidden) > max(ranks[n] for n in table.shown), (table.spec.name, hidden)
        # every cell shown reads exactly as on the wide page: nothing cut, wrapped text complete
        assert len(table.rows) == len(ref.rows), table.spec.name
        for ref_row, row in zip(ref.rows, table.rows, strict=True):
            for name in table.shown:
                want = normal(ref_row.get(name, ""), kinds[name])
                assert normal(row.get(name, ""), kinds[name]) == want, (table.spec.name, name, width)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_table_fits_and_keeps_every_cell_whole(
    gpuq: Runner, monkeypatch: pytest.MonkeyPatch, crowded: str, audited: None, command: str, width: int
) -> None:
    argv, specs = COMMANDS[command]
    args = ["--snapshot", crowded, *argv]
    wide = _run(gpuq, monkeypatch, 400, *args, "-o", "wide").stdout
    reference = parse_tables(wide, specs)
    assert [t.spec for t in reference] == specs, wide
    assert all(t.rows for t in reference), wide
    assert all(t.hidden is None for t in reference)
    text = _run(gpuq, monkeypatch, width, *args).stdout
    _check(reference, parse_tables(text, specs), width, text)


@pytest.mark.parametrize("width", [60, 80])
def test_narrow_terminals_hide_columns_and_say_so(
    gpuq: Runner, monkeypatch: pytest.MonkeyPatch, crowded: str, width: int
) -> None:
    (queue,) = parse_tables(_run(gpuq, monkeypatch, width, "--snapshot", crowded, "queue").stdout)
    assert queue.hidden, "13 columns cannot fit in 80: some must be named as hidden"
    assert "NAME" in queue.hidden  # the least important goes first
    assert set(_by_id(queue)) == set(JOB_IDS)
    overview = parse_tables(_run(gpuq, monkeypatch, width, "--snapshot", crowded, "overview").stdout,
                            COMMANDS["overview"][1])  # fmt: skip
    (top,) = [t for t in overview if t.spec is OVERVIEW_TOP]
    assert {"JOB", "CLASS", "GPUS", "NEXT"} <= set(top.shown)
    assert {row["JOB"]: row["GPUS"] for row in top.rows} == {"4821400": "8", "4821401": "1", "4821402": "16"}


@pytest.mark.parametrize("width", WIDTHS)
def test_wide_shows_every_column_at_any_width(
    gpuq: Runner, monkeypatch: pytest.MonkeyPatch, crowded: str, width: int
) -> None:
    text = _run(gpuq, monkeypatch, width, "--snapshot", crowded, "queue", "-o", "wide").stdout
    (queue,) = parse_tables(text)
    assert queue.shown == list(QUEUE.names)
    assert queue.hidden is None
    # nothing wraps either: one line per job
    assert len(queue.lines) == 1 + len(JOB_IDS)
    assert _by_id(queue)["4821401"]["NOTE"] == "(ReqNodeNotAvail, UnavailableNodes:gpu-a100-rack07-n05)"


@pytest.mark.parametrize("width", WIDTHS)
def test_gpu_grid_is_one_node_per_line_with_every_id_whole(
    gpuq: Runner, monkeypatch: pytest.MonkeyPatch, crowded: str, width: int
) -> None:
    text = _run(gpuq, monkeypatch, width, "--snapshot", crowded, "gpus").stdout
    (grid,) = parse_tables(text)
    rows = _by_id(grid)
    assert list(rows) == list(NODE_NAMES)
    cells = {node: rows[node]["GPUS"].split() for node in rows}
    assert cells[NODE_NAMES[0]] == ["4821337_12"] * 8
    assert cells[NODE_NAMES[2]] == ["4821338"] * 4 + ["4821339"] * 2 + ["."] * 2
    assert cells[NODE_NAMES[3]] == ["4821340"] + ["."] * 7
    assert "UNPLACED" not in grid.shown or width >= 120  # an empty column gives its room first
    # one line per node, its cells going on under GPUS where they do not fit
    assert [line.split()[0] for line in grid.lines[1:] if not line.startswith(" ")] == list(NODE_NAMES)
    # ten-character ids: two lines per node at 80 columns (the model and state give way), one at 120
    assert len(grid.lines) <= 1 + len(NODE_NAMES) * (1 if width >= 120 else 2 if width >= 80 else 3)


def test_gpu_grid_at_80_columns_is_a_line_per_node(gpuq: Runner, monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path) -> None:  # fmt: skip
    # the demo's shape: 16 nodes of 8 GPUs, four-digit job ids, 1-8 GPU jobs
    nodes = [Node(f"gpu-{n:03d}", 8, "H100", NodeState.ALLOCATED) for n in range(1, 17)]
    jobs, holders = [], {}
    for n, node in enumerate(nodes):
        for g in range(0, 8, 2 if n % 2 else 8):
            job_id = str(1000 + 10 * n + g)
            width = 2 if n % 2 else 8
            jobs.append(make_job(job_id, state=JobState.RUNNING, gpus=width, start_time=T - 600,
                                 allocation={node.name: range(g, g + width)}))  # fmt: skip
            holders.update({(node.name, i): job_id for i in range(g, g + width)})
    path = tmp_path / "demo-like.json"
    path.write_bytes(encode_snapshot(make_snapshot("demo", "snapshot", T, [], nodes, jobs)))
    (grid,) = parse_tables(_run(gpuq, monkeypatch, 80, "--snapshot", str(path), "gpus").stdout)
    assert grid.shown == ["NODE", "MODEL", "STATE", "FREE", "GPUS"]
    assert len(grid.lines) == 1 + len(nodes)
    for row in grid.rows:
        assert row["GPUS"].split() == [holders[(row["NODE"], i)] for i in range(8)]


def test_gpu_grid_node_and_free_filters(gpuq: Runner, monkeypatch: pytest.MonkeyPatch, crowded: str) -> None:
    def nodes(*args: str) -> list[str]:
        (grid,) = parse_tables(_run(gpuq, monkeypatch, 80, "--snapshot", crowded, "gpus", *args).stdout)
        return list(_by_id(grid))

    assert nodes("--node", NODE_NAMES[1]) == [NODE_NAMES[1]]
    assert nodes("--node", "gpu-a100-rack07-n0[23]") == [NODE_NAMES[1], NODE_NAMES[2]]
    assert nodes("--node", "*n04", "--node", NODE_NAMES[0]) == [NODE_NAMES[0], NODE_NAMES[3]]
    # free GPUs on n03 and n04; n05 has 8 free but is down
    assert nodes("--free") == [NODE_NAMES[2], NODE_NAMES[3]]
    assert nodes("--free", "--node", "*n01") == ["none"]
    monkeypatch.setenv("COLUMNS", "80")
    bad = gpuq("--snapshot", crowded, "gpus", "--node", "gpu-b*")
    assert bad.exit_code == 2
    assert "no node matches gpu-b* on cluster prod-east" in bad.stderr


@pytest.mark.parametrize("width", WIDTHS)
def test_job_fields_wrap_but_stay_whole(
    gpuq: Runner, monkeypatch: pytest.MonkeyPatch, crowded: str, width: int
) -> None:
    def fields(text: str) -> dict[str, str]:
        block = text.split("\n\n", 1)[0].split("\n")
        start = re.search(r" {2,}", block[0])
        assert start is not None
        out: dict[str, str] = {}
        key = ""
        for line in block:
            if line[: start.end()].strip():
                key = line[: start.end()].strip()
                out[key] = line[start.end() :]
            else:
                out[key] += " " + line.strip()
        return {k: normal(v, Kind.TEXT) for k, v in out.items()}

    wide = fields(_run(gpuq, monkeypatch, 400, "--snapshot", crowded, "job", "4821337_12").stdout)
    text = _run(gpuq, monkeypatch, width, "--snapshot", crowded, "job", "4821337_12").stdout
    assert fields(text) == wide
    assert wide["job"] == "4821337_12 llama-70b-finetune-sweep"
    assert all(len(line) <= width for line in text.split("\n"))
    assert f"{NODE_NAMES[0]}: 0,1,2,3,4,5,6,7; {NODE_NAMES[1]}: 0,1,2,3,4,5,6,7" in wide["gpus"]


def test_an_empty_table_says_none(gpuq: Runner, monkeypatch: pytest.MonkeyPatch, crowded: str) -> None:
    (queue,) = parse_tables(_run(gpuq, monkeypatch, 80, "--snapshot", crowded, "queue", "--user", "nobody").stdout)
    assert [row["ID"] for row in queue.rows] == ["none"]
