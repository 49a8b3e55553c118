"""A resource the credentials may not list is said where the data is shown: the snapshot
carries it (`Snapshot.unread`, kept in snapshot files), the CLI's tables say it in a `note:`
line and its JSON in `unread`. Recordings 35 (nodes) and 65 (Kueue Workloads) are the 403s."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuq.model.codec import decode_snapshot, encode_snapshot
from tests.k8s.conftest import Gpuq, Target
from tests.k8s.double import ApiDouble

NODES_NOTE = "nodes: forbidden — GPU totals from pods only"


def _config(xdg: dict[str, Path], kubeconfig: Path) -> None:
    path = xdg["config"] / "gpuq" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"[backends.kubernetes]\nkubeconfig = {json.dumps(str(kubeconfig))}\nwatch = false\n")


def test_a_snapshot_without_nodes_says_so_and_keeps_it_in_files(target: Target) -> None:
    assert target.double is not None
    target.double.reply("GET", "/api/v1/nodes", "35-forbidden-403-nodes.json")
    snap = target.snapshot(watch=False)
    assert [(u.resource, u.reason) for u in snap.unread] == [("nodes", "forbidden")]
    assert snap.unread[0].effect.startswith("GPU totals from pods only")
    again = decode_snapshot(encode_snapshot(snap))
    assert again.unread == snap.unread


def test_a_whole_snapshot_has_nothing_unread_and_writes_no_field(target: Target) -> None:
    snap = target.snapshot(watch=False)
    assert snap.unread == ()
    assert b'"unread"' not in encode_snapshot(snap)  # (files as before: old readers see no change)


def test_gpus_table_and_json_say_nodes_are_missing(gpuq: Gpuq, xdg: dict[str, Path], target: Target) -> None:
    assert target.double is not None
    _config(xdg, target.kubeconfig)
    target.double.reply("GET", "/api/v1/nodes", "35-forbidden-403-nodes.json", times=2)
    table = gpuq("--backend", "kubernetes", "gpus")
    assert table.exit_code == 0, table.output
    notes = [line for line in table.stdout.splitlines() if line.startswith("note: ")]
    assert len(notes) == 1 and notes[0].startswith("note: " + NODES_NOTE), table.stdout
    doc = json.loads(gpuq("--backend", "kubernetes", "gpus", "-o", "json").stdout)
    assert [(u["resource"], u["reason"]) for u in doc["unread"]] == [("nodes", "forbidden")]
    assert doc["unread"][0]["note"].startswith(NODES_NOTE)


def test_a_whole_view_has_no_note(gpuq: Gpuq, xdg: dict[str, Path], target: Target) -> None:
    _config(xdg, target.kubeconfig)
    table = gpuq("--backend", "kubernetes", "gpus")
    assert table.exit_code == 0 and "note:" not in table.stdout
    assert json.loads(gpuq("--backend", "kubernetes", "gpus", "-o", "json").stdout)["unread"] == []


def test_kueue_workloads_forbidden_are_said(tmp_path: Path, gpuq: Gpuq, xdg: dict[str, Path]) -> None:
    with ApiDouble(kueue=True) as double:
        double.reply("GET", "/apis/kueue.x-k8s.io/v1beta2/workloads", "65-kueue-workloads-403-viewer.json")
        _config(xdg, double.kubeconfig(tmp_path / "kc"))
        doc = json.loads(gpuq("--backend", "kubernetes", "gpus", "-o", "json").stdout)
    (unread,) = doc["unread"]
    assert unread["resource"] == "workloads.kueue.x-k8s.io" and unread["reason"] == "forbidden"
    assert "jobs Kueue holds back are not shown" in unread["note"]


#: every read command but `gpus`, with the arguments it needs on the recorded cluster
READ_COMMANDS = [
    ("queue",),
    ("overview",),
    ("preview", "--gpus", "1", "--priority", "500"),
    ("sla",),
    ("job", "ml-team-a/urgent-pod"),
    ("preemptions",),
]


def _forbid_nodes(target: Target) -> None:
    assert target.double is not None
    target.double.reply("GET", "/api/v1/nodes", "35-forbidden-403-nodes.json", times=8)  # (a refresh lists again)


@pytest.mark.parametrize("args", READ_COMMANDS, ids=lambda a: a[0])
def test_every_read_table_says_nodes_are_missing(
    args: tuple[str, ...], gpuq: Gpuq, xdg: dict[str, Path], target: Target
) -> None:
    _config(xdg, target.kubeconfig)
    _forbid_nodes(target)
    table = gpuq("--backend", "kubernetes", *args)
    assert table.exit_code == 0, table.output
    notes = [line for line in table.stdout.splitlines() if line.startswith("note: nodes:")]
    assert len(notes) == 1 and notes[0].startswith("note: " + NODES_NOTE), table.stdout


@pytest.mark.parametrize("args", READ_COMMANDS, ids=lambda a: a[0])
def test_every_read_json_carries_unread(
    args: tuple[str, ...], gpuq: Gpuq, xdg: dict[str, Path], target: Target
) -> None:
    _config(xdg, target.kubeconfig)
    whole = json.loads(gpuq("--backend", "kubernetes", *args, "-o", "json").stdout)
    assert whole["unread"] == []
    _forbid_nodes(target)
    doc = json.loads(gpuq("--backend", "kubernetes", *args, "-o", "json").stdout)
    assert [(u["resource"], u["reason"]) for u in doc["unread"]] == [("nodes", "forbidden")]
    assert doc["unread"][0]["note"].startswith(NODES_NOTE)


def test_no_headers_keeps_rows_and_says_the_gap_on_stderr(gpuq: Gpuq, xdg: dict[str, Path], target: Target) -> None:
    _config(xdg, target.kubeconfig)
    _forbid_nodes(target)
    table = gpuq("--backend", "kubernetes", "queue", "--no-headers")
    assert table.exit_code == 0, table.output
    assert "note:" not in table.stdout
    assert "gpuq: warning: note: " + NODES_NOTE in table.stderr
