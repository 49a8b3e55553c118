"""Which policy applies: --policy, the config, a backend's built-in site policy, gpuq's defaults."""

from __future__ import annotations

from pathlib import Path

from gpuq.backends.demo import DEMO_POLICY
from gpuq.config import Config
from gpuq.policy.config import DEFAULT_POLICY
from gpuq.service import open_cluster

from .conftest import SMALL


def test_demo_without_configuration_uses_its_site_policy() -> None:
    cluster = open_cluster(backend="demo", config=Config())
    assert cluster.policy == DEMO_POLICY
    assert cluster.policy != DEFAULT_POLICY
    assert "built-in" in cluster.policy_source.source
    # The simulator schedules with the same policy the preview uses.
    assert cluster.backend.policy == DEMO_POLICY  # type: ignore[attr-defined]


def test_explicit_policy_file_wins(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text("[preemption]\ndelta = 7\n")
    cluster = open_cluster(backend="demo", config=Config(), policy_file=str(path))
    assert cluster.policy.delta == 7
    # what the file leaves out is gpuq's default (30m), not the demo's (15m)
    assert cluster.policy.min_runtime_s == DEFAULT_POLICY.min_runtime_s == 1800.0


def test_snapshot_files_use_gpuq_defaults() -> None:
    cluster = open_cluster(snapshot=str(SMALL), config=Config())
    assert cluster.policy == DEFAULT_POLICY
