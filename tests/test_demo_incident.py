"""A first look at the demo shows an incident, whatever the wall-clock hour, the same per seed.

Checked through the overview's view model (what `gpuq overview` prints), not through the
function the demo uses to pick the moment (gpuq.sim.incident)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from gpuq.model import JobState
from gpuq.service import Cluster
from gpuq.service.opening import open_cluster
from gpuq.views.overview import OverviewView, overview_view

#: a fixed day, at five hours of it (08:41 UTC is when the issue's new user found an idle demo)
DAY = datetime(2026, 6, 15, tzinfo=UTC).timestamp()
HOURS = (0.0, 4.5, 8 + 41 / 60, 14.0, 19.25)
SEEDS = (1, 2, 3, 4, 5)


def _first_look(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int, hour: float
) -> tuple[Cluster, OverviewView]:
    home = tmp_path / f"seed{seed}-{hour}"
    monkeypatch.setenv("XDG_STATE_HOME", str(home / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    wall = DAY + hour * 3600.0
    cluster = open_cluster(seed=seed, clock=lambda: wall)
    return cluster, overview_view(cluster, cluster.snapshot())


@pytest.mark.parametrize("seed", SEEDS)
def test_a_fresh_demo_opens_on_an_incident_at_any_hour(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    looks = []
    for hour in HOURS:
        cluster, view = _first_look(tmp_path, monkeypatch, seed, hour)
        where = f"seed {seed} at {hour:g} h"
        now = view.taken_at.timestamp()
        assert view.jobs.get(JobState.PENDING.value, 0) > 0, f"{where}: no pending job"
        at_risk = [
            name
            for name, s in view.sla.items()
            if s.target_p95_s and (s.breach or (s.p95_incl_pending_s or 0.0) >= 0.8 * s.target_p95_s)
        ]
        assert at_risk, f"{where}: every class far from its P95 target"
        assert any(now - e.time.timestamp() < 3600 for e in view.recent_preemptions), f"{where}: no recent preemption"
        pushing = [row for row in view.top_pending if row.would_preempt]
        assert pushing and all(row.victims for row in pushing), f"{where}: no top pending job would preempt"
        # ...and its own preview, as `gpuq preview JOB` asks, names the same victims
        plan = cluster.preview(cluster.job_request(pushing[0].id, cluster.snapshot()), native=False).plan
        assert tuple(v.job_id for v in plan.victims) == pushing[0].victims
        snap = cluster.snapshot()
        looks.append(sorted((j.id, j.state.value, j.gpus, j.submit_time.timestamp() - now) for j in snap.jobs))
    # Reproducible per seed: the same jobs, states and relative times at every hour.
    assert all(look == looks[0] for look in looks[1:])
