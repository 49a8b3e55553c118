"""The table renderer on its own (`gpuq.cli.table`): fitting, dropping, wrapping, alignment."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpuq.cli.table import render_lines, render_table, wrap_spans
from gpuq.views.columns import Column, Kind, TableSpec

SPEC = TableSpec(
    "t",
    (
        Column("ID", Kind.ID),
        Column("NAME", Kind.PLAIN, 3),
        Column("GPUS", Kind.NUMBER),
        Column("WAIT", Kind.NUMBER, 1),
        Column("NOTE", Kind.TEXT, 2),
    ),
)
ROWS = [
    ("4821337_12", "llama-70b-finetune", "16", "2h10m", "(ReqNodeNotAvail, UnavailableNodes:gpu-a100-n05)"),
    ("7", "x", "1", "0s", ""),
]


def test_wide_enough_shows_everything_on_one_line_per_row() -> None:
    lines = render_table(SPEC, ROWS, width=200)
    assert lines[0].split() == ["ID", "NAME", "GPUS", "WAIT", "NOTE"]
    assert len(lines) == 3
    # numbers right-aligned under their header, ids left
    assert lines[1].index("16") + 2 == lines[0].index("GPUS") + 4
    assert lines[2].startswith("7 ")


def test_least_important_go_first_and_are_named() -> None:
    lines = render_table(SPEC, ROWS, width=40)
    assert lines == [
        "ID          GPUS   WAIT",
        "4821337_12    16  2h10m",
        "7              1     0s",
        "2 columns hidden (NAME, NOTE): -o wide",
        "or a wider terminal",
    ]


def test_free_text_wraps_between_words() -> None:
    lines = render_table(SPEC, ROWS, width=75)
    assert lines[0].split() == ["ID", "NAME", "GPUS", "WAIT", "NOTE"]
    start = lines[0].index("NOTE")
    note = " ".join(line[start:].strip() for line in lines[1:3])
    assert note == "(ReqNodeNotAvail, UnavailableNodes:gpu-a100-n05)"
    assert lines[2][:start].strip() == ""  # the continuation line holds nothing else


def test_wide_ignores_the_width() -> None:
    lines = render_table(SPEC, ROWS, width=20, wide=True)
    assert lines[0].split() == ["ID", "NAME", "GPUS", "WAIT", "NOTE"]
    assert len(lines) == 3


def test_must_show_columns_are_never_cut_even_past_the_width() -> None:
    lines = render_table(SPEC, ROWS, width=10)
    assert lines[:3] == ["ID          GPUS", "4821337_12    16", "7              1"]
    assert " ".join(lines[3:]) == "3 columns hidden (NAME, WAIT, NOTE): -o wide or a wider terminal"


def test_lists_wrap_between_items_and_grids_line_up() -> None:
    spec = TableSpec("g", (Column("NODE", Kind.ID), Column("GPUS", Kind.LIST, aligned=True)))
    rows = [("n1", ("123", "7", ".", "123")), ("n22", (".", ".", "45", "6"))]
    lines = render_table(spec, rows, width=17)  # room for three 3-wide cells a line
    assert lines[1:] == ["n1    123 7   .", "      123", "n22   .   .   45", "      6"]


def test_separator_stays_at_the_end_of_a_broken_list_line() -> None:
    spec = TableSpec("n", (Column("ID", Kind.ID), Column("NODES", Kind.LIST, sep=",")))
    lines = render_table(spec, [("1", ("gpu-001", "gpu-002", "gpu-003"))], width=20)
    assert lines[1:] == ["1   gpu-001,gpu-002,", "    gpu-003"]


def test_an_empty_table_says_none_and_an_empty_column_gives_way() -> None:
    assert render_table(SPEC, [], width=80)[1].split() == ["none"]
    rows = [("1", "a", "2", "3s", "")]
    assert render_table(SPEC, rows, width=200)[0].split()[-1] == "NOTE"  # room enough: kept
    narrow = render_table(SPEC, [("1", "a" * 24, "2", "3s", "")], width=40)
    assert narrow[0].split() == ["ID", "NAME", "GPUS", "WAIT"]
    assert not any("hidden" in line for line in narrow)  # it hid nothing


def test_outside_text_in_cells_is_made_visible() -> None:
    lines = render_table(SPEC, [("1\x1b[2J", "[/]", "2", "3s", "a\u2028b")], width=200)
    assert "1\\x1b[2J" in lines[1] and "[/]" in lines[1] and "a\\u2028b" in lines[1]


def test_colour_only_when_asked_and_only_gpuq_styles() -> None:
    styles = {"NAME": {"x": "yellow"}}
    plain = render_table(SPEC, [("1", "x", "2", "3s", "")], width=200, styles=styles)
    assert "\x1b" not in "".join(plain)
    coloured = render_table(SPEC, [("1", "x", "2", "3s", "")], width=200, styles=styles, colour=True)
    assert "\x1b[33mx\x1b[0m" in coloured[1]
    assert coloured[0].startswith("\x1b[1m")  # bold header


@given(st.text(alphabet=st.sampled_from("ab cd-é作"), max_size=60), st.integers(min_value=1, max_value=30))
def test_wrap_spans_keeps_every_word_and_respects_the_width(text: str, width: int) -> None:
    from gpuq.textsafe import cell_width

    spans = wrap_spans(text, width)
    pieces = [text[s:e] for s, e in spans]
    assert all(cell_width(p) <= width or len(p) == 1 for p in pieces)
    if all(cell_width(w) <= width for w in text.split()):
        assert [w for p in pieces for w in p.split()] == text.split()  # no word was folded
    assert "".join("".join(p.split()) for p in pieces) == "".join(text.split())  # nothing lost


def test_messages_wrap_with_their_indent_and_keep_styles() -> None:
    lines = render_lines(["  - ", "job 4821337_12 would preempt 4821340 on gpu-a100-rack07-n04"], width=30,
                         colour=False)  # fmt: skip
    assert lines[0].startswith("  - job")
    assert all(line.startswith("  ") for line in lines)
    assert "gpu-a100-rack07-n04" in " ".join(lines)
    coloured = render_lines([("never feasible:", "bold red"), " job \x1b[2J"], width=80, colour=True)
    assert coloured == ["\x1b[1;31mnever feasible:\x1b[0m job \\x1b[2J"]


@pytest.mark.parametrize("width", [1, 5, 12])
def test_a_word_longer_than_the_line_is_folded_not_lost(width: int) -> None:
    text = "UnavailableNodes:gpu-a100-rack07-n05"
    spans = wrap_spans(text, width)
    assert "".join(text[s:e] for s, e in spans) == text
    assert all(e - s <= width for s, e in spans)


def test_an_id_longer_than_the_fold_folds_whole_and_keeps_the_other_columns() -> None:
    """A 500-character id pushed every other column past the terminal's edge: it now folds over
    lines (never cut) and the must-show columns stay beside it, within the width."""
    long_id = "".join(str(i % 10) for i in range(500))
    lines = render_table(SPEC, [(long_id, "x", "4", "1h", ""), *ROWS], width=80)
    assert all(len(line) <= 80 for line in lines), [len(line) for line in lines]
    assert lines[0].split()[0] == "ID" and "GPUS" in lines[0].split()
    assert lines[1].split()[1:] == ["4", "1h"]  # (its numbers beside its first line)
    end = next(k for k, line in enumerate(lines) if line.startswith("4821337_12"))
    assert "".join(line.split()[0] for line in lines[1:end]) == long_id  # (whole, in order)
