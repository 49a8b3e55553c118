"""`gpuq preview`: the documented JSON, exit 0 whether or not it would preempt, 1 if never feasible."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from click.testing import Result

Run = Callable[..., Result]


def test_pending_job_json(gpuq: Run, small: str) -> None:
    result = gpuq("--snapshot", small, "preview", "202", "-o", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    for key in ("would_preempt", "fits_without_preemption", "nodes", "victims", "spared", "freed_gpus", "total_cost"):
        assert key in doc
    assert doc["would_preempt"] is True
    assert doc["fits_without_preemption"] is False
    assert doc["nodes"] == ["gpu-01"]
    (victim,) = doc["victims"]
    assert victim["id"] == "101"
    assert victim["reason"] == "chosen"
    assert victim["gpus"] == 4
    assert victim["gpu_seconds_lost"] == 4 * 1800
    assert doc["freed_gpus"] == 4
    spared = {s["id"]: s["reason"] for s in doc["spared"]}
    assert spared["103"] == "exempt"
    assert spared["104"] == "class"
    assert all(set(s) == {"id", "reason", "detail"} for s in doc["spared"])


def test_what_if_blocked_is_exit_0(gpuq: Run, small: str) -> None:
    result = gpuq("--snapshot", small, "-o", "json", "preview", "--gpus", "3", "--priority", "50")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["would_preempt"] is False
    assert doc["victims"] == []


def test_what_if_with_class_and_tenant(gpuq: Run, small: str) -> None:
    result = gpuq("--snapshot", small, "-o", "json", "preview", "--gpus", "2", "--class", "urgent", "--tenant", "infra")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["request"]["class"] == "urgent"
    assert doc["request"]["tenant"] == "infra"
    assert doc["would_preempt"] is True


def test_job_at_new_priority(gpuq: Run, small: str) -> None:
    low = json.loads(gpuq("--snapshot", small, "-o", "json", "preview", "201", "--priority", "5").stdout)
    assert low["would_preempt"] is False
    high = json.loads(gpuq("--snapshot", small, "-o", "json", "preview", "201", "--priority", "900").stdout)
    assert high["would_preempt"] is True


def test_never_feasible_is_exit_1(gpuq: Run, small: str) -> None:
    result = gpuq("--snapshot", small, "-o", "json", "preview", "--gpus", "100", "--priority", "5")
    assert result.exit_code == 1, (result.exception, result.output)
    assert isinstance(result.exception, SystemExit)
    assert json.loads(result.stdout)["feasible"] is False
    assert "never feasible" in result.stderr
    table = gpuq("--snapshot", small, "preview", "--gpus", "100", "--priority", "5")
    assert table.exit_code == 1
    assert "never feasible" in table.stdout


def test_table_output(gpuq: Run, small: str) -> None:
    result = gpuq("--snapshot", small, "preview", "202")
    assert result.exit_code == 0
    assert "would preempt 1 job(s) on gpu-01" in result.stdout
    assert "exempt until 2026-11-29T20:00:00Z" in result.stdout


def test_usage_errors(gpuq: Run, small: str) -> None:
    assert gpuq("--snapshot", small, "preview").exit_code == 2
    assert gpuq("--snapshot", small, "preview", "--gpus", "2").exit_code == 2
    assert gpuq("--snapshot", small, "preview", "202", "--gpus", "2").exit_code == 2
    assert gpuq("--snapshot", small, "preview", "--gpus", "0", "--priority", "1").exit_code == 2
    missing = gpuq("--snapshot", small, "preview", "999")
    assert missing.exit_code == 1
    assert "no job 999 on cluster lab" in missing.stderr


def test_native_preview_is_added_and_its_failure_reported(
    gpuq: Run, fake: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gpuq.backends.base import Capabilities, NativePlan, NativeVictim
    from gpuq.errors import Unreachable

    def native(self: Any, snap: Any, req: Any) -> NativePlan:
        victim = NativeVictim("102", ("gpu-02",), 2, 10, "QOS urgent may preempt low", {"qos": "low"})
        return NativePlan(True, ("gpu-02",), (victim,), ("n",))

    monkeypatch.setattr(fake, "capabilities", property(lambda self: Capabilities(native_preview=True)))
    monkeypatch.setattr(fake, "native_preview", native)
    doc = json.loads(gpuq("--backend", "fake", "-o", "json", "preview", "201").stdout)
    assert doc["native"] == {
        "would_preempt": True, "nodes": ["gpu-02"], "notes": ["n"],
        "victims": [{"id": "102", "nodes": ["gpu-02"], "gpus": 2, "priority": 10,
                     "reason": "QOS urgent may preempt low", "qos": "low"}],
    }  # fmt: skip
    table = gpuq("--backend", "fake", "preview", "201").stdout
    assert "native scheduler: would preempt 102 on gpu-02" in table and "102: QOS urgent may preempt low" in table

    def broken(self: Any, snap: Any, req: Any) -> NativePlan:
        raise Unreachable("slurmctld down")

    monkeypatch.setattr(fake, "native_preview", broken)
    result = gpuq("--backend", "fake", "-o", "json", "preview", "201")
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert doc["native"] == {"error": "native preview unavailable: slurmctld down"}
    assert doc["would_preempt"] is True  # gpuq's own plan still answers
