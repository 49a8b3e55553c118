"""`gpuq queue --group`: a table's pods of one owner under one line for them all; without the flag,
and in JSON and CSV, the output is the plain queue (JSON carries each job's `owner`)."""

from __future__ import annotations

import re
from pathlib import Path

from gpuq.model.codec import encode_snapshot
from tests.cli.conftest import Runner, json_doc
from tests.factories import owned_snapshot


def _file(tmp_path: Path, owner: str = "PyTorchJob/ml/train") -> str:
    path = tmp_path / "owned.json"
    path.write_bytes(encode_snapshot(owned_snapshot(owner)))
    return str(path)


def _ids(out: str) -> list[str]:
    """The first column of each data line (the title and header left out), its tree mark kept."""
    lines = out.splitlines()[2:]
    return [re.split(r"\s{2,}", line.replace("  └ ", "└ ", 1).strip())[0] for line in lines if line.strip()]


def test_group_puts_an_owners_pods_under_one_line(gpuq: Runner, tmp_path: Path) -> None:
    result = gpuq("--snapshot", _file(tmp_path), "queue", "--group", "-o", "wide")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert _ids(result.stdout) == ["PyTorchJob/ml/train", "└ ml/train-0", "└ ml/train-1", "ml/solo", "ml/eval-0"]
    group = next(line for line in lines if line.startswith("PyTorchJob/ml/train"))
    assert "2 pods" in group and "1 pending, 1 running" in group
    assert re.search(r"\b16\b", group)  # its GPUs, summed
    assert next(i for i, line in enumerate(lines) if "  └ ml/train-1" in line) == lines.index(group) + 2


def test_without_group_the_table_is_the_plain_queue(gpuq: Runner, tmp_path: Path) -> None:
    result = gpuq("--snapshot", _file(tmp_path), "queue", "-o", "wide")
    assert result.exit_code == 0, result.output
    assert _ids(result.stdout) == ["ml/train-0", "ml/solo", "ml/train-1", "ml/eval-0"]
    assert "└" not in result.stdout and "pods" not in result.stdout


def test_json_and_csv_are_the_same_with_group_and_json_carries_the_owner(gpuq: Runner, tmp_path: Path) -> None:
    path = _file(tmp_path)
    for fmt in ("json", "csv"):
        plain, grouped = gpuq("--snapshot", path, "queue", "-o", fmt), gpuq("--snapshot", path, "queue", "--group",
                                                                            "-o", fmt)  # fmt: skip
        assert plain.exit_code == grouped.exit_code == 0 and plain.stdout == grouped.stdout
    owners = {j["id"]: j.get("owner") for j in json_doc(gpuq("--snapshot", path, "queue", "-o", "json"))["jobs"]}
    assert owners == {"ml/train-0": "PyTorchJob/ml/train", "ml/solo": None, "ml/train-1": "PyTorchJob/ml/train",
                      "ml/eval-0": "Job/ml/eval"}  # fmt: skip


def test_an_owner_from_outside_is_shown_as_text(gpuq: Runner, tmp_path: Path) -> None:
    result = gpuq("--snapshot", _file(tmp_path, owner="Job/ml/[bold]x\x1b[2J"), "queue", "--group", "-o", "wide")
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.stdout and "Job/ml/[bold]x" in result.stdout
