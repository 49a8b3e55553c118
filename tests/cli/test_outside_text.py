"""Outside text is data in every view: names, users, classes, reasons, comments, node and job ids
from a snapshot (or a backend) are never read as markup, and control characters reach the
terminal only as visible escapes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import Result

from gpuq.model import JobClass, JobState, Node, NodeState, PreemptionEvent
from gpuq.model.codec import encode_snapshot
from gpuq.textsafe import visible
from tests.cli.conftest import Runner
from tests.factories import at, make_job, make_snapshot

T = 1_795_100_400.0
H = 3600.0

#: (case id, text): markup that would crash or restyle Rich, and characters a terminal obeys
NASTY = [
    ("close-tag", "[/]"),
    ("markup", "[bold red]x[/]"),
    ("clear-screen", "\x1b[2J"),
    ("osc-title", "\x1b]0;pwned\x07"),
    ("csi-c1", "\x9b31m"),
    ("bidi-override", "ab\u202ecd"),
    ("bidi-isolate", "\u2066x\u2069"),
    ("line-separator", "a\u2028b"),
    ("paragraph-separator", "a\u2029b"),
    ("nel", "a\x85b"),
    ("newline", "a\nb"),
    ("del", "a\x7fb"),
    ("emoji-code", ":smile:"),
]
#: characters that must never reach the terminal as themselves
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")


def _snapshot(tmp_path: Path, text: str) -> str:
    """Every outside field carries `text`: the cluster, a class, a node, the job ids, names,
    users, tenants, reasons, comments and a preemption event's reason."""
    cls = f"c{text}"
    node = f"n{text}"
    run, pend = f"9{text}", f"8{text}"
    classes = [JobClass(cls, 100, True, 3600.0, 7200.0)]
    nodes = [Node(node, 4, f"m{text}", NodeState.ALLOCATED), Node("plain", 4, "H100", NodeState.IDLE)]
    jobs = [
        make_job(run, f"n{text}", f"u{text}", f"t{text}", cls, 10, JobState.RUNNING, T - 3 * H, 4,
                 start_time=T - 2 * H, allocation={node: range(4)}, preemption_times=[T - H], comment=f"c{text}",
                 account=f"a{text}"),
        make_job(pend, f"n{text}", f"u{text}", f"t{text}", cls, 500, JobState.PENDING, T - H, 8, reason=f"r{text}"),
    ]  # fmt: skip
    events = [PreemptionEvent(at(T - H), run, pend, 4, 3600.0, "requeue", f"why{text}")]
    path = tmp_path / "nasty.json"
    path.write_bytes(encode_snapshot(make_snapshot(f"k{text}", "snapshot", T, classes, nodes, jobs, events)))
    return str(path)


def _clean(result: Result, text: str, *, code: int = 0) -> str:
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == code, result.output
    for stream in (result.stdout, result.stderr):
        # colours are the only escapes gpuq itself writes (SGR: ESC [ … m)
        leftover = re.sub(r"\x1b\[[0-9;]*m", "", stream)
        assert not RAW.search(leftover), repr(RAW.search(leftover))
    return result.stdout


COMMANDS = [
    ["queue"],
    ["queue", "-o", "wide"],
    ["gpus"],
    ["sla"],
    ["overview"],
    ["preemptions"],
    ["preview", "8{text}"],
    ["job", "9{text}"],
    ["job", "8{text}"],
]


@pytest.mark.parametrize("colour", [False, True], ids=["plain", "colour"])
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: "-".join(c).replace("{text}", ""))
@pytest.mark.parametrize(("case", "text"), NASTY, ids=[c for c, _ in NASTY])
def test_every_view_shows_outside_text_as_data(
    gpuq: Runner, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, case: str, text: str, command: list[str],
    colour: bool,
) -> None:  # fmt: skip
    monkeypatch.setenv("COLUMNS", "120")
    if colour:
        monkeypatch.setenv("FORCE_COLOR", "1")
    path = _snapshot(tmp_path, text)
    args = [a.replace("{text}", text) for a in command]
    out = _clean(gpuq("--snapshot", path, *args), text)
    shown = visible(text)
    assert shown in out  # as the operator can read it: `[/]`, `\x1b[2J`, `\u202e`
    if command[0] in ("queue", "gpus", "job", "preview"):
        assert f"9{shown}" in out  # the running job's id, whole


def test_markup_in_a_name_is_neither_parsed_nor_styled(
    gpuq: Runner, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")
    out = _clean(gpuq("--snapshot", _snapshot(tmp_path, "[bold red]x[/]"), "queue"), "")
    assert "u[bold red]x[/]" in out
    assert "\x1b[1;31m" not in out  # no bold red, only the state colours
    assert "\x1b[33mpending" in out  # gpuq's own colour still works


@pytest.mark.parametrize(("case", "text"), NASTY, ids=[c for c, _ in NASTY])
def test_errors_echo_outside_text_visibly(gpuq: Runner, tmp_path: Path, case: str, text: str) -> None:
    path = _snapshot(tmp_path, "ok")
    result = gpuq("--snapshot", path, "job", f"x{text}")
    _clean(result, text, code=1)
    assert f"no job x{visible(text)}" in result.stderr
    bad = gpuq("--snapshot", path, "queue", "--sort", f"x{text}")
    _clean(bad, text, code=2)
    assert visible(text) in bad.stderr


@pytest.mark.parametrize(("case", "text"), NASTY, ids=[c for c, _ in NASTY])
def test_audit_table_shows_reasons_and_targets_as_data(
    gpuq: Runner, monkeypatch: pytest.MonkeyPatch, xdg: dict[str, Path], case: str, text: str
) -> None:
    from gpuq.audit import AuditLog, make_record

    monkeypatch.setenv("FORCE_COLOR", "1")
    AuditLog().append(make_record(backend="slurm", cluster=f"k{text}", action="bump", target=f"9{text}", result="ok",
                                  reason=f"why {text} now", before={"priority": 1}, after={"priority": 2},
                                  now=T))  # fmt: skip
    AuditLog().append(make_record(backend="slurm", cluster="prod", action="exempt", target="7", result="error",
                                  error=f"backend said {text}", now=T + 1))  # fmt: skip
    out = _clean(gpuq("audit"), text)
    assert f"9{visible(text)}" in out
    assert visible(text) in out.split("\n", 3)[-1]
    assert "backend said" in out
