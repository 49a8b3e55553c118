"""`gpuq trace export`: the window from --since/--until on the injected clock, gpuq's job log to a
file or stdout, Slurm's own sacct output, and the errors (bad input 2, no history 1, unreachable 3).

Slurm runs against stand-in CLIs that replay a real capture of the export's own sacct command
(tests/fixtures/slurm/22.05/live/sacct-trace-D.txt); the lab test runs the real one.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from gpuq.backends.slurm.trace import TRACE_FIELDS, read_sacct_parsable, trace_args
from gpuq.timefmt import format_time, parse_time
from tests.cli.conftest import CLI_CLOCK_START, DEMO_STILL, SMALL
from tests.clock import FixedClock
from tests.slurm.samples import LIVE

NOW = CLI_CLOCK_START  # 2026-11-19T15:00:00Z
CAPTURE = LIVE / "sacct-trace-D.txt"

Run = Callable[..., Result]


@pytest.fixture
def run() -> Run:
    """`gpuq ARGS…` on a clock that stands still at `NOW`."""
    from gpuq.cli.main import cli
    from gpuq.cli.options import Injected

    def invoke(*args: str) -> Result:
        return CliRunner().invoke(cli, list(args), prog_name="gpuq", obj=Injected(clock=FixedClock(NOW)))

    return invoke


def _lines(text: str) -> tuple[dict[str, object], list[dict[str, object]]]:
    header, *rest = text.splitlines()
    return json.loads(header), [json.loads(line) for line in rest]


# ---------------------------------------------------------------- the demo


def _demo_now(run: Run) -> float:
    """The still demo cluster's own clock (its snapshot's time), ahead of the wall clock."""
    doc = json.loads(run("queue", *DEMO_STILL, "-o", "json").stdout)
    return parse_time(doc["taken_at"])


def test_demo_export_to_stdout_covers_the_window(run: Run) -> None:
    now = _demo_now(run)
    result = run("trace", "export", *DEMO_STILL, "--since", "6h", "-o", "-")
    assert result.exit_code == 0, result.output
    header, jobs = _lines(result.stdout)
    assert header == {
        "format": "gpuq.jobs/v1",
        "cluster": "demo",
        "backend": "demo",
        "since": format_time(now - 6 * 3600),
        "until": format_time(now),
        "cluster_shape": "16x8",  # the demo's 16 nodes of 8 GPUs (`gpuq replay` takes it)
    }
    assert jobs and len({j["id"] for j in jobs}) == len(jobs)
    for job in jobs:
        assert isinstance(job["submit_time"], float) and job["submit_time"] <= now
        assert "end_time" not in job or job["end_time"] >= now - 6 * 3600  # type: ignore[operator]
    assert {"completed", "running", "pending"} <= {j["state"] for j in jobs}
    assert result.stderr == ""  # stdout carries the trace; nothing else is said


def test_a_shorter_window_is_a_subset(run: Run) -> None:
    wide = _lines(run("trace", "export", *DEMO_STILL, "--since", "6h").stdout)[1]
    narrow = _lines(run("trace", "export", *DEMO_STILL, "--since", "1h", "--until", "30m").stdout)[1]
    assert narrow and len(narrow) < len(wide)
    assert {j["id"] for j in narrow} <= {j["id"] for j in wide}
    assert all(j["submit_time"] <= _demo_now(run) - 1800 for j in narrow)  # type: ignore[operator]


def test_the_demo_window_is_on_the_clusters_clock(run: Run) -> None:
    # The demo's clock runs hours ahead of the wall clock (its warm-up): "the last hour" is the
    # cluster's, so every job live now is in it, the ones submitted after the wall clock's now too.
    now = _demo_now(run)
    assert now > NOW + 3600
    live = {j["id"] for j in json.loads(run("queue", *DEMO_STILL, "-o", "json").stdout)["jobs"]
            if j["state"] in ("pending", "running")}  # fmt: skip
    header, jobs = _lines(run("trace", "export", *DEMO_STILL, "--since", "1h").stdout)
    assert header["until"] == format_time(now)
    assert live and live <= {j["id"] for j in jobs}


def test_iso_times_and_durations_name_the_same_window(run: Run) -> None:
    now = _demo_now(run)
    by_duration = run("trace", "export", *DEMO_STILL, "--since", "2h", "--until", "now")
    by_time = run("trace", "export", *DEMO_STILL, "--since", format_time(now - 7200), "--until",
                  datetime.fromtimestamp(now, timezone(timedelta(hours=2))).isoformat())  # fmt: skip
    assert by_duration.exit_code == by_time.exit_code == 0, by_time.output
    assert by_duration.stdout == by_time.stdout


def test_file_output_is_written_whole_and_reported(run: Run, tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    out = tmp_path / "out" / "demo.jsonl"
    result = run("trace", "export", *DEMO_STILL, "--since", "3h", "-o", str(out))
    assert result.exit_code == 0, result.output
    header, jobs = _lines(out.read_text())
    assert header["format"] == "gpuq.jobs/v1"
    assert result.stdout == ""
    assert f"wrote {len(jobs)} jobs of demo (demo, " in result.stderr and str(out) in result.stderr
    assert [p.name for p in out.parent.iterdir()] == ["demo.jsonl"]  # no temporary file left


def test_a_symbolic_link_keeps_pointing_at_the_trace_it_names(run: Run, tmp_path: Path) -> None:
    target = tmp_path / "traces" / "demo.jsonl"
    target.parent.mkdir()
    target.write_text("older\n")
    link = tmp_path / "latest.jsonl"
    link.symlink_to(target)
    result = run("trace", "export", *DEMO_STILL, "--since", "3h", "-o", str(link))
    assert result.exit_code == 0, result.output
    assert link.is_symlink() and link.resolve() == target  # the link stays, its target is replaced
    assert _lines(target.read_text())[0]["format"] == "gpuq.jobs/v1"
    assert sorted(p.name for p in target.parent.iterdir()) == ["demo.jsonl"]


def test_a_named_pipe_is_written_into_not_replaced(run: Run, tmp_path: Path) -> None:
    """`-o FIFO` (a reader on the other end, as with `mkfifo p; gzip < p &`): the trace goes
    through the pipe and the pipe stays a pipe (a rename over it would leave a plain file)."""
    import threading

    (tmp_path / "out").mkdir()
    fifo = tmp_path / "out" / "trace.pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    result = run("trace", "export", *DEMO_STILL, "--since", "3h", "-o", str(fifo))
    reader.join(timeout=30)
    assert result.exit_code == 0, result.output
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    header, jobs = _lines(received[0].decode())
    assert header["format"] == "gpuq.jobs/v1" and jobs
    assert [p.name for p in fifo.parent.iterdir()] == ["trace.pipe"]  # no temporary file left


def test_a_directory_is_refused(run: Run, tmp_path: Path) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    result = run("trace", "export", *DEMO_STILL, "--since", "3h", "-o", str(folder))
    assert result.exit_code == 2
    assert f"-o {folder}: is a directory" in result.stderr and "Traceback" not in result.output
    assert list(folder.iterdir()) == []


def test_a_trace_that_cannot_be_written_is_one_error_and_leaves_the_older_one(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk half-way: exit 1, one line naming the file, the older trace still whole."""
    from gpuq.cli import trace

    (tmp_path / "out").mkdir()
    out = tmp_path / "out" / "demo.jsonl"
    out.write_text("older\n")
    written = trace._write

    def fill_up(lines: object, stream: object) -> None:
        written(iter(["partial\n"]), stream)  # type: ignore[arg-type]
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(trace, "_write", fill_up)
    result = run("trace", "export", *DEMO_STILL, "--since", "3h", "-o", str(out))
    assert result.exit_code == 1
    assert result.stderr.strip() == f"gpuq: error: -o {out}: cannot write the trace: No space left on device"
    assert out.read_text() == "older\n"
    assert [p.name for p in out.parent.iterdir()] == ["demo.jsonl"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--since", "yesterday"), "--since 'yesterday': not a time"),
        (("--since", "12x"), "--since '12x': not a duration"),
        (("--since", "2026-13-01"), "--since '2026-13-01': not a time"),
        (("--since", "1h", "--until", "2h"), "is not before --until"),
        (("--since", "99999d"), "too long"),
    ],
)
def test_bad_windows_are_usage_errors(run: Run, args: tuple[str, ...], message: str) -> None:
    result = run("trace", "export", *DEMO_STILL, *args)
    assert result.exit_code == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.output and result.stdout == ""


def test_since_is_required(run: Run) -> None:
    result = run("trace", "export", *DEMO_STILL)
    assert result.exit_code == 2 and "--since" in result.stderr


def test_a_backend_without_history_is_refused_naming_those_with_it(run: Run, tmp_path: Path) -> None:
    out = tmp_path / "x.jsonl"
    result = run("--snapshot", str(SMALL), "trace", "export", "--since", "1d", "-o", str(out))
    assert result.exit_code == 1
    assert "keeps no job history" in result.stderr
    assert all(name in result.stderr for name in ("demo", "slurm", "kubernetes"))
    assert not out.exists()


def test_the_demo_has_no_sacct_format(run: Run) -> None:
    result = run("trace", "export", *DEMO_STILL, "--since", "1d", "--format", "sacct")
    assert result.exit_code == 2 and "backend demo exports gpuq" in result.stderr


def test_trace_is_a_group_with_export() -> None:
    from gpuq.cli.main import cli

    result = CliRunner().invoke(cli, ["trace", "--help"], prog_name="gpuq")
    assert result.exit_code == 0 and "export" in result.stdout


# ---------------------------------------------------------------- Slurm, on stand-in CLIs


@pytest.fixture
def slurm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Stand-in sacct (prints `FAKE_SACCT_FILE`, the capture unless a test says, then exits with
    `FAKE_SACCT_RC`) and scontrol; every call logged to calls.log."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    tools = {
        "sacct": 'echo "sacct $*" >> "$FAKE_LOG"\ncat "$FAKE_SACCT_FILE"\nexit "${FAKE_SACCT_RC:-0}"\n',
        "scontrol": f'echo "scontrol $*" >> "$FAKE_LOG"\ncat {LIVE}/scontrol-show-config.txt\n',
    }
    for name, body in tools.items():
        path = bindir / name
        path.write_text("#!/bin/bash\n" + body)
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=fake\nSlurmctldHost=ctl01\n")
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("SLURM_CONF", str(conf))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("FAKE_LOG", str(tmp_path / "calls.log"))
    monkeypatch.setenv("FAKE_SACCT_FILE", str(CAPTURE))
    return tmp_path


def _sacct_calls(where: Path) -> list[list[str]]:
    return [line.split() for line in (where / "calls.log").read_text().splitlines() if line.startswith("sacct ")]


def test_slurm_export_runs_the_documented_sacct_and_merges_its_runs(run: Run, slurm: Path) -> None:
    out = slurm / "trace.jsonl"
    result = run("--backend", "slurm", "trace", "export", "--since", "2026-11-18T15:00:00Z", "-o", str(out))
    assert result.exit_code == 0, result.output
    assert _sacct_calls(slurm) == [trace_args(NOW - 86400, NOW)]
    assert _sacct_calls(slurm)[0][-1] == ",".join(TRACE_FIELDS)
    header, jobs = _lines(out.read_text())
    assert (header["cluster"], header["backend"]) == ("gpuqlab", "slurm")  # named by scontrol's ClusterName
    expected = list(read_sacct_parsable(str(CAPTURE)))
    assert [j["id"] for j in jobs] == [j.id for j in expected]
    assert [(j["submit_time"], j["duration_s"], j["gpus"]) for j in jobs] == [
        (e.submit_time, e.duration_s, e.gpus) for e in expected
    ]


def test_slurm_sacct_format_is_sacct_output_as_printed(run: Run, slurm: Path) -> None:
    result = run("--backend", "slurm", "trace", "export", "--since", "1d", "--format", "sacct", "-o", "-")
    assert result.exit_code == 0, result.output
    assert result.stdout == CAPTURE.read_text()


def test_a_failed_slurm_export_leaves_the_old_file(run: Run, slurm: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = slurm / "trace.jsonl"
    out.write_text("the previous export\n")
    lines = CAPTURE.read_text().splitlines()
    broken = slurm / "broken.txt"
    broken.write_text("\n".join([*lines[:10], lines[10].rsplit("|", 2)[0], *lines[11:]]) + "\n")
    monkeypatch.setenv("FAKE_SACCT_FILE", str(broken))
    result = run("--backend", "slurm", "trace", "export", "--since", "1d", "-o", str(out))
    assert result.exit_code == 2
    assert "sacct output:11: 14 fields, expected 16" in result.stderr
    assert out.read_text() == "the previous export\n"
    assert sorted(p.name for p in slurm.iterdir() if p.name.startswith(".trace")) == []


def test_slurm_without_accounting_is_refused(run: Run, slurm: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = slurm / "empty.txt"
    empty.write_text("")
    monkeypatch.setenv("FAKE_SACCT_FILE", str(empty))
    monkeypatch.setenv("FAKE_SACCT_RC", "1")
    (slurm / "bin" / "sacct").write_text('#!/bin/bash\necho "Slurm accounting storage is disabled" >&2\nexit 1\n')
    result = run("--backend", "slurm", "trace", "export", "--since", "1d")
    assert result.exit_code == 1 and "accounting is disabled" in result.stderr and result.stdout == ""


def test_an_unreachable_slurm_exits_3_before_writing(run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLURM_CONF", str(tmp_path / "missing.conf"))
    (tmp_path / "out").mkdir()
    out = tmp_path / "out" / "trace.jsonl"
    result = run("--backend", "slurm", "trace", "export", "--since", "1d", "-o", str(out))
    assert result.exit_code == 3 and "no Slurm controller found" in result.stderr
    assert list(out.parent.iterdir()) == []
