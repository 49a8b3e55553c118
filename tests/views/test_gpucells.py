"""The console's GPU grid cells (`gpuq.views.gpucells`): a tenant keeps its colour everywhere,
every GPU is a cell (free, down, held, or held at an unknown index), the `/` filter, occupancy."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from gpuq.model import JobState, Node, NodeState, Snapshot
from gpuq.views.gpucells import (
    DOWN_CELL,
    FREE_CELL,
    TENANT_TONES,
    UNPLACED_MARK,
    grid_matches,
    grid_rows,
    occupancy,
    tenant_tone,
)
from gpuq.views.gpus import gpu_grid
from tests.factories import make_job, make_snapshot

NOW = 1_800_000_000.0
NAMES = ["alpha", "beta", "gamma", "delta", "nlp", "vision", "robotics", "t", "infra", "ｔｅｎａｎｔ", "\udcff"]


def test_tenant_tone_is_one_of_the_themes_tones_and_pinned() -> None:
    tones = {n: tenant_tone(n) for n in NAMES}
    assert set(tones.values()) <= {f"tenant-{i}" for i in range(TENANT_TONES)}
    assert len(set(tones.values())) >= 4  # spread over the palette, not one colour for all
    # an operator learns a tenant's colour: these stay from release to release (and the demo's
    # five tenants have five)
    assert [tenant_tone(n) for n in ("infra", "nlp", "research", "speech", "vision")] == [
        "tenant-5", "tenant-1", "tenant-2", "tenant-4", "tenant-7",
    ]  # fmt: skip


def test_tenant_tone_is_the_same_in_every_process() -> None:
    """Not Python's salted `hash`: two processes with other hash seeds give the same tones."""
    code = (
        "import json,sys; from gpuq.views.gpucells import tenant_tone; "
        "print(json.dumps([tenant_tone(n) for n in json.loads(sys.argv[1])]))"
    )
    names = [n for n in NAMES if n != "\udcff"]
    expected = [tenant_tone(n) for n in names]
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        argv = [sys.executable, "-c", code, json.dumps(names)]
        out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)  # noqa: S603
        assert json.loads(out.stdout) == expected


def _snapshot() -> Snapshot:
    nodes = (
        Node("n1", 4, "H100", NodeState.MIXED),
        Node("n2", 2, "A100", NodeState.DRAIN),
        Node("n3", 4, "H100", NodeState.MIXED),
        Node("n4", 2, "A100", NodeState.DOWN),
    )
    jobs = (
        make_job("7", tenant="alpha", state=JobState.RUNNING, gpus=2, start_time=NOW - 60,
                 allocation={"n1": [0, 2]}),
        make_job("12345678", tenant="beta", state=JobState.RUNNING, gpus=1, start_time=NOW - 60,
                 allocation={"n2": [1]}),
        # Kubernetes: the GPUs are known, not their indexes
        make_job("pod-a", tenant="gamma", state=JobState.RUNNING, gpus=2, start_time=NOW - 60,
                 allocation={"n3": [None, None]}),
        make_job("9", tenant="alpha", state=JobState.PENDING, gpus=1),
    )  # fmt: skip
    return make_snapshot("lab", "demo", NOW, (), nodes, jobs)


def test_cells_per_gpu_holder_free_down_and_unplaced() -> None:
    rows = {r.node: r for r in grid_rows(gpu_grid(_snapshot()))}
    n1 = rows["n1"]
    assert [c.text for c in n1.cells] == ["7", FREE_CELL, "7", FREE_CELL]
    assert [c.job_id for c in n1.cells] == ["7", None, "7", None]
    assert [c.tone for c in n1.cells] == [tenant_tone("alpha"), "idle", tenant_tone("alpha"), "idle"]
    assert (n1.busy, n1.total, n1.occupancy, n1.model, n1.state_tone) == (2, 4, "2/4", "H100", None)
    # a draining node: its holder keeps its tenant's colour, its free GPUs are unavailable
    n2 = rows["n2"]
    assert [c.text for c in n2.cells] == [DOWN_CELL, "12345678"]
    assert [c.tone for c in n2.cells] == ["down", tenant_tone("beta")]
    assert n2.state_tone == "down" and not n2.takes_work
    # unknown indexes: the holder takes free GPUs from the first, marked, never dropped
    n3 = rows["n3"]
    assert [c.text for c in n3.cells] == [f"pod-a{UNPLACED_MARK}"] * 2 + [FREE_CELL] * 2
    assert [c.job_id for c in n3.cells] == ["pod-a", "pod-a", None, None]
    assert n3.busy == 2
    assert [c.text for c in rows["n4"].cells] == [DOWN_CELL, DOWN_CELL]


def test_a_holder_past_the_nodes_gpus_is_still_shown() -> None:
    snap = make_snapshot("lab", "k8s", NOW, (), (Node("n1", 1, None, NodeState.ALLOCATED),), (
        make_job("a", state=JobState.RUNNING, gpus=1, start_time=NOW, allocation={"n1": [None]}),
        make_job("b", state=JobState.RUNNING, gpus=1, start_time=NOW, allocation={"n1": [None]}),
    ))  # fmt: skip
    (row,) = grid_rows(gpu_grid(snap))
    assert [c.job_id for c in row.cells] == ["a", "b"]
    assert row.model == "-"


def test_filter_matches_node_names_and_holder_ids_only() -> None:
    rows = {r.node: r for r in grid_rows(gpu_grid(_snapshot()))}
    assert grid_matches(rows["n3"], "n3")
    assert grid_matches(rows["n2"], "345")
    assert grid_matches(rows["n3"], "pod-")
    assert not grid_matches(rows["n1"], "pod-")
    assert not grid_matches(rows["n1"], "9")  # job 9 is pending: it holds no GPU
    assert not grid_matches(rows["n1"], "alpha")  # a tenant is not a holder id


def test_occupancy_per_cluster_and_pool() -> None:
    other = make_snapshot("prod", "demo", NOW, (), (Node("p1", 8, "H100", NodeState.IDLE),), ())
    rows = grid_rows(gpu_grid(_snapshot())) + grid_rows(gpu_grid(other))
    totals, pools = occupancy(rows)
    assert [(t.name, t.busy, t.total, t.nodes, t.down_gpus, t.down_nodes) for t in totals] == [
        ("lab", 5, 12, 4, 4, 2), ("prod", 0, 8, 1, 0, 0),
    ]  # fmt: skip
    assert totals[0].text == "5/12 GPUs busy (42%), 4 down/drain on 2 nodes"
    assert totals[1].text == "0/8 GPUs busy (0%)"
    assert [(p.name, p.busy, p.total) for p in pools["lab"]] == [("A100", 1, 4), ("H100", 4, 8)]
    assert [(p.name, p.percent) for p in pools["prod"]] == [("H100", 0)]
