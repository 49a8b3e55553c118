"""The PNG charts: written, real PNG files; a clear error without matplotlib."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gpuq.errors import Refused
from gpuq.service.tuning import TuneRequest, tune, write_charts
from gpuq.tune.charts import CHART_FILES
from tests.tune.helpers import fake_replay, write_trace

PNG = b"\x89PNG\r\n\x1a\n"


def _report(tmp_path: Path):  # noqa: ANN202 - test helper
    trace = write_trace(str(tmp_path / "t.jsonl"))
    return tune(TuneRequest(trace, ("delta=0,50,100", "max_wait.$x$=1h,2h")), workers=1, replayer=fake_replay)


def test_three_png_files(tmp_path: Path) -> None:
    paths = write_charts(_report(tmp_path), str(tmp_path / "charts" / "new"))
    assert [p.name for p in paths] == list(CHART_FILES)
    for path in paths:
        data = path.read_bytes()
        assert data.startswith(PNG) and len(data) > 5000
        assert data[12:16] == b"IHDR"
        width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
        assert width >= 600 and height >= 300


def test_without_matplotlib(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    report = _report(tmp_path)
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    with pytest.raises(
        Refused, match=r"--charts needs matplotlib, which is not installed: pip install 'gpuq\[charts\]'"
    ):
        write_charts(report, str(tmp_path / "charts"))
    assert not (tmp_path / "charts").exists()


def test_a_directory_that_cannot_be_made(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(Refused, match="cannot create the directory"):
        write_charts(_report(tmp_path), str(tmp_path / "file" / "charts"))
