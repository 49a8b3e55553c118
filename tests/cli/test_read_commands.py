"""Read-only commands on the small fixture snapshot: documented JSON shapes and real numbers."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from gpuq.model import FORMAT
from gpuq.timefmt import format_time, parse_time

SNAPSHOTS = Path(__file__).resolve().parent.parent / "fixtures" / "snapshots"

Run = Callable[..., Result]


def _json(result: Result) -> dict[str, Any]:
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


class TestQueue:
    def test_json_document(self, gpuq: Run, small: str) -> None:
        doc = _json(gpuq("--snapshot", small, "queue", "-o", "json"))
        assert set(doc) == {"cluster", "taken_at", "unread", "jobs"}
        assert doc["cluster"] == "lab"
        assert doc["taken_at"] == "2026-11-29T18:00:00Z"
        ids = [j["id"] for j in doc["jobs"]]
        # Finished job 301 is hidden by default; sorted by effective priority, highest first.
        assert "301" not in ids
        assert ids[0] == "203"  # aged: waited 10h, 2h past max_wait 8h at 10 points/min
        by_id = {j["id"]: j for j in doc["jobs"]}
        assert by_id["203"]["effective_priority"] == pytest.approx(10 + 120 * 10)
        assert by_id["203"]["wait_s"] == 36000
        assert by_id["102"]["preemptions"] == 2
        assert by_id["102"]["preemptions_24h"] == 1
        assert by_id["101"]["allocation"] == {"gpu-01": [0, 1, 2, 3]}
        assert by_id["101"]["wait_s"] == 3600
        # Snapshot job fields are all there (the documented contract).
        for key in (
            "id",
            "name",
            "user",
            "tenant",
            "class",
            "priority",
            "state",
            "submit_time",
            "eligible_time",
            "start_time",
            "end_time",
            "gpus",
            "allocation",
            "preemption_times",
            "last_checkpoint_time",
            "exempt_until",
            "wait_s",
            "effective_priority",
            "preemptions",
            "preemptions_24h",
        ):
            assert key in by_id["101"], key

    def test_filters(self, gpuq: Run, small: str) -> None:
        def ids(*args: str) -> list[str]:
            return sorted(j["id"] for j in _json(gpuq("--snapshot", small, "-o", "json", "queue", *args))["jobs"])

        assert ids("--user", "alice") == ["101", "201"]
        assert ids("--tenant", "vision") == ["102", "103", "202"]
        assert ids("--class", "low", "--state", "pending") == ["203"]
        assert ids("--min-gpus", "4") == ["101", "202"]
        assert ids("--state", "all", "--user", "bob") == ["202", "301"]
        assert ids("--state", "completed,running", "--tenant", "vision") == ["102", "103", "301"]

    def test_sort(self, gpuq: Run, small: str) -> None:
        def ids(*args: str) -> list[str]:
            return [j["id"] for j in _json(gpuq("--snapshot", small, "-o", "json", "queue", *args))["jobs"]]

        assert ids("--sort", "id") == ["101", "102", "103", "104", "201", "202", "203"]
        assert ids("--sort", "id", "--reverse") == ["203", "202", "201", "104", "103", "102", "101"]
        # A key alone sorts ascending, -KEY descending (squeue's --sort); ties: earliest submitted.
        assert ids("--sort", "-wait", "--state", "pending") == ["203", "201", "202"]
        assert ids("--sort", "wait", "--state", "pending") == ["202", "201", "203"]
        assert ids("--sort", "-gpus")[:2] == ["101", "202"]

    def test_csv(self, gpuq: Run, small: str) -> None:
        result = gpuq("--snapshot", small, "queue", "-o", "csv", "--sort", "id")
        assert result.exit_code == 0
        rows = list(csv.DictReader(io.StringIO(result.stdout)))
        assert [r["id"] for r in rows] == ["101", "102", "103", "104", "201", "202", "203"]
        assert rows[1]["preemptions_24h"] == "1"
        assert rows[0]["nodes"] == "gpu-01"

    def test_table(self, gpuq: Run, small: str) -> None:
        result = gpuq("--snapshot", small, "queue", "--no-color")
        assert result.exit_code == 0
        assert "train-llm" in result.stdout
        assert "lab at 2026-11-29T18:00:00Z: 7 jobs" in result.stdout
        assert "\x1b[" not in result.stdout

    def test_bad_state(self, gpuq: Run, small: str) -> None:
        result = gpuq("--snapshot", small, "queue", "--state", "sleeping")
        assert result.exit_code == 2
        assert "unknown state 'sleeping'" in result.stderr


def test_gpus_grid(gpuq: Run, small: str) -> None:
    doc = _json(gpuq("--snapshot", small, "gpus", "-o", "json"))
    nodes = {n["name"]: n for n in doc["nodes"]}
    assert [s["job"] for s in nodes["gpu-02"]["slots"]] == ["102", "102", "103", "104"]
    assert nodes["gpu-03"]["state"] == "down"
    assert nodes["gpu-03"]["free"] == 4
    assert nodes["gpu-01"]["free"] == 0
    table = gpuq("--snapshot", small, "gpus", "--node", "gpu-02")
    assert table.exit_code == 0
    assert "gpu-02" in table.stdout
    assert "gpu-01" not in table.stdout
    assert gpuq("--snapshot", small, "gpus", "--node", "nope").exit_code == 2


def test_sla(gpuq: Run, small: str) -> None:
    doc = _json(gpuq("--snapshot", small, "sla", "-o", "json"))
    assert doc["since"] is None
    low = doc["classes"]["low"]
    assert set(low) == {
        "count",
        "pending",
        "p50_s",
        "p95_s",
        "p99_s",
        "max_s",
        "p95_incl_pending_s",
        "target_p95_s",
        "breach",
    }
    assert low["count"] == 2
    assert low["pending"] == 1
    assert low["p95_s"] == 6 * 3600
    assert low["breach"] is True
    assert doc["classes"]["urgent"]["breach"] is False
    window = _json(gpuq("--snapshot", small, "sla", "--since", "1h", "-o", "json"))
    assert window["since"] == "2026-11-29T17:00:00Z"
    assert window["overall"]["count"] < doc["overall"]["count"]
    assert gpuq("--snapshot", small, "sla", "--since", "soon").exit_code == 2


def test_preemptions(gpuq: Run, small: str) -> None:
    doc = _json(gpuq("--snapshot", small, "preemptions", "-o", "json"))
    assert doc["jobs"] == [
        {
            "id": "102",
            "name": "sweep-a",
            "user": "carol",
            "tenant": "vision",
            "class": "low",
            "state": "running",
            "preemptions": 2,
            "preemptions_24h": 1,
            "last_preempted": "2026-11-29T12:00:00Z",
        }
    ]
    assert [e["time"] for e in doc["events"]] == ["2026-11-29T12:00:00Z", "2026-11-27T12:00:00Z"]
    assert doc["events"][0]["preemptor"] == "100"
    limited = _json(gpuq("--snapshot", small, "preemptions", "-o", "json", "--limit", "1"))
    assert len(limited["events"]) == 1


def test_preemptions_warns_when_the_ledger_thrashes(gpuq: Run, small: str, tmp_path: Path) -> None:
    # job 102 was preempted twice, two days apart: calm under the defaults (30m minimum runtime)...
    calm = gpuq("--snapshot", small, "preemptions", "-o", "json")
    assert calm.exit_code == 0 and "warning" not in calm.stderr
    # ...but again within the minimum runtime of a policy that asks for three days
    policy = tmp_path / "slow.toml"
    policy.write_text('[preemption]\nmin_runtime = "3d"\n', encoding="utf-8")
    loud = gpuq("--snapshot", small, "--policy", str(policy), "preemptions", "-o", "json")
    assert loud.exit_code == 0 and json.loads(loud.stdout)["jobs"][0]["id"] == "102"  # stdout stays the document
    assert loud.stderr.splitlines() == ["gpuq: warning: lab: thrashing: 1 job(s) preempted again within 3d00h (102 1×)"]


def test_job_explains_pending(gpuq: Run, small: str) -> None:
    doc = _json(gpuq("--snapshot", small, "job", "202", "-o", "json"))
    assert doc["job"]["id"] == "202"
    assert doc["job"]["wait_s"] == 1800
    assert doc["class"]["name"] == "normal"
    text = " ".join(doc["explanation"])
    assert "could preempt" in text
    assert "101" in text
    table = gpuq("--snapshot", small, "job", "202")
    assert table.exit_code == 0
    assert "why pending" in table.stdout


def test_job_running_protection(gpuq: Run, small: str) -> None:
    doc = _json(gpuq("--snapshot", small, "job", "103", "-o", "json"))
    assert doc["protection"]["reason"] == "exempt"
    doc = _json(gpuq("--snapshot", small, "job", "101", "-o", "json"))
    assert doc["protection"] is None
    # Checkpointed at 17:30, now 18:00: 4 GPUs x 30 min.
    assert doc["gpu_seconds_lost_if_preempted"] == 4 * 1800


def test_snapshot_round_trip(gpuq: Run, small: str, tmp_path: Path) -> None:
    result = gpuq("--snapshot", small, "snapshot")
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert doc["format"] == FORMAT
    assert len(doc["jobs"]) == 8
    copy = tmp_path / "copy.json"
    copy.write_text(result.stdout)
    again = gpuq("--snapshot", str(copy), "snapshot")
    assert json.loads(again.stdout) == doc


def test_snapshot_from_stdin(gpuq: Run, small: str) -> None:
    with open(small) as f:
        text = f.read()
    result = gpuq("--snapshot", "-", "queue", "-o", "json", input=text)
    assert result.exit_code == 0
    assert json.loads(result.stdout)["cluster"] == "lab"


def test_queue_limit(gpuq: Run, small: str) -> None:
    doc = _json(gpuq("--snapshot", small, "-o", "json", "queue", "--sort", "id", "--limit", "2"))
    assert [j["id"] for j in doc["jobs"]] == ["101", "102"]


@pytest.mark.parametrize(
    ("command", "header"),
    [
        (["gpus"], "node,gpu,job,user,tenant,class"),
        (["sla"], "class,count,pending,p50_s"),
        (["preemptions"], "section,key,value,id,name,user,tenant,class,state,preemptions,preemptions_24h"),
        (["preview", "202"], "id,decision,reason,nodes"),
        (["job", "101"], "field,value"),
    ],
)
def test_csv_outputs(gpuq: Run, small: str, command: list[str], header: str) -> None:
    result = gpuq("--snapshot", small, "-o", "csv", *command)
    assert result.exit_code == 0, result.output
    rows = list(csv.reader(io.StringIO(result.stdout)))
    assert ",".join(rows[0]).startswith(header)
    assert len(rows) > 1


def test_table_is_capped_but_json_is_not(gpuq: Run, small: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("gpuq.cli.queue.TABLE_LIMIT", 2)
    table = gpuq("--snapshot", small, "queue", "--sort", "id")
    assert "first 2 of 7 jobs" in table.stdout
    assert "103" not in table.stdout.split("NOTE", 1)[1]
    assert "103" in gpuq("--snapshot", small, "queue", "--limit", "0").stdout
    assert len(_json(gpuq("--snapshot", small, "queue", "-o", "json"))["jobs"]) == 7


def test_unknown_gpu_indexes_and_unknown_fields(gpuq: Run) -> None:
    path = str(SNAPSHOTS / "unindexed.json")
    grid = _json(gpuq("--snapshot", path, "gpus", "-o", "json"))
    node_a = grid["nodes"][0]
    assert node_a["unindexed"] == ["ns/train-0", "ns/train-0"]
    assert node_a["free"] == 2
    assert all(slot["job"] is None for slot in node_a["slots"])
    jobs = _json(gpuq("--snapshot", path, "queue", "-o", "json", "--sort", "id"))["jobs"]
    assert [j["id"] for j in jobs] == ["ns/train-0", "ns/train-1"]
    assert jobs[0]["allocation"] == {"node-a": [None, None]}
    # A drained node takes no work: the 4-GPU job could only fit on node-a after preemption.
    plan = _json(gpuq("--snapshot", path, "preview", "ns/train-1", "-o", "json"))
    assert "node-b" not in plan["nodes"]


def test_queue_shows_the_aging_a_running_job_carries(gpuq: Run, tmp_path: Path) -> None:
    """A job that started after waiting past max_wait keeps that aging in `effective_priority`."""
    doc = json.loads((SNAPSHOTS / "small.json").read_text())
    low = next(c for c in doc["classes"] if c["name"] == "low")
    job = next(j for j in doc["jobs"] if j["state"] == "running")
    job["class"] = "low"
    job["priority"] = 10
    job["eligible_time"] = job["submit_time"]
    # Started max_wait + 10 minutes after it became eligible: 10 points/min x 10 min of aging.
    job["start_time"] = format_time(parse_time(job["submit_time"]) + low["max_wait_s"] + 600)
    path = tmp_path / "aged.json"
    path.write_text(json.dumps(doc))
    out = _json(gpuq("--snapshot", str(path), "queue", "-o", "json", "--state", "running"))
    row = next(r for r in out["jobs"] if r["id"] == job["id"])
    assert row["effective_priority"] == 110
