"""A server with a self-signed certificate, its kubeconfig saying ``insecure-skip-tls-verify``:
gpuq says once per command, in its own words, that the server is not verified (urllib3 warns
at every request, a block of lines each)."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.k8s.conftest import Gpuq
from tests.k8s.double import ApiDouble


@pytest.fixture
def tls_double() -> Iterator[ApiDouble]:
    with ApiDouble(tls=True) as server:
        yield server


def _config(xdg: dict[str, Path], kubeconfig: Path) -> None:
    path = xdg["config"] / "gpuq" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"[backends.kubernetes]\nkubeconfig = {json.dumps(str(kubeconfig))}\nwatch = false\n")


@pytest.mark.parametrize("command", [("queue",), ("gpus",), ("queue", "-o", "json")])
def test_an_unverified_server_is_said_once_in_gpuqs_words(
    gpuq: Gpuq, xdg: dict[str, Path], tls_double: ApiDouble, tmp_path: Path, command: tuple[str, ...]
) -> None:
    _config(xdg, tls_double.kubeconfig(tmp_path / "kubeconfig"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # (every warning raised, none left to Python's once-a-place)
        result = gpuq("--backend", "kubernetes", *command)
    assert not [w for w in caught if "Unverified HTTPS" in str(w.message)]
    assert result.exit_code == 0, result.output
    assert len(tls_double.log) > 3  # (several requests, each of which urllib3 would warn about)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("gpuq: warning: ") and tls_double.url in lines[0]
    assert "not verified" in lines[0] and "insecure-skip-tls-verify" in lines[0]
    assert "InsecureRequestWarning" not in result.stderr and "urllib3" not in result.stderr
