"""`gpuq.tui.widgets.fitting`: which columns a console table shows at a width, and a cell cut to
its column (the rule `ViewTable` and the preview's `FittedTable` share)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpuq.textsafe import cell_width
from gpuq.tui.widgets.fitting import GAP, choose_columns, fit_cell, fit_items
from gpuq.views.columns import Column, Kind


def test_the_most_important_columns_are_taken_first_while_they_fit() -> None:
    # rank 2 (40 cells) does not fit after the rank-0 and rank-1 ones; the rank-3 one still does
    shown, used = choose_columns([0, 2, 1, 3], [10, 40, 6, 4], 30)
    assert shown == [0, 2, 3]
    assert used == 10 + GAP + 6 + GAP + 4


def test_a_rank_zero_column_is_shown_wider_than_the_screen() -> None:
    assert choose_columns([0, 0, 1], [50, 8, 1], 20) == ([0, 1], 50 + GAP + 8)


def test_equal_ranks_go_in_the_tables_order_and_the_first_column_has_no_gap() -> None:
    assert choose_columns([1, 1, 1], [5, 5, 5], 12) == ([0, 1], 5 + GAP + 5)
    assert choose_columns([1], [7], 7) == ([0], 7)
    assert choose_columns([], [], 80) == ([], 0)


@given(st.lists(st.tuples(st.integers(0, 4), st.integers(1, 30)), max_size=12), st.integers(0, 120))
def test_what_is_shown_fits_unless_rank_zero_forces_it(columns: list[tuple[int, int]], available: int) -> None:
    ranks, wants = [r for r, _ in columns], [w for _, w in columns]
    shown, used = choose_columns(ranks, wants, available)
    assert shown == sorted(set(shown))
    assert all(i in shown for i, rank in enumerate(ranks) if rank == 0)
    assert used == sum(wants[i] for i in shown) + GAP * max(0, len(shown) - 1)
    forced = sum(wants[i] for i in shown if ranks[i] == 0) + GAP * max(0, len(shown) - 1)
    assert used <= max(available, forced)
    for i in range(len(ranks)):  # a column left out did not fit where its rank came
        if i not in shown:
            before = [k for k in shown if (ranks[k], k) < (ranks[i], i)]
            taken = sum(wants[k] for k in before) + GAP * len(before)
            assert taken + wants[i] > available


@pytest.mark.parametrize(
    ("text", "width", "kind", "expected"),
    [
        ("4242", 6, Kind.NUMBER, "  4242"),  # a number: right-aligned, never cut
        ("1234567", 4, Kind.ID, "1234567"),  # an id wider than its column stays whole
        ("waiting for resources", 10, Kind.TEXT, "waiting f…"),
        ("short", 8, Kind.TEXT, "short   "),
        ("gpu-01 gpu-02 gpu-03", 15, Kind.LIST, "gpu-01 …+2     "),
    ],
)
def test_a_cell_is_padded_or_cut_as_its_kind_allows(text: str, width: int, kind: Kind, expected: str) -> None:
    assert fit_cell(text, width, Column("X", kind)) == expected


def test_a_wide_character_is_never_split_by_the_cut() -> None:
    cut = fit_cell("作業名が長いジョブ", 6, Column("NAME", Kind.TEXT))
    assert cell_width(cut) == 6 and cut.rstrip().endswith("…") and cut.startswith("作業")


def test_a_list_is_cut_between_items() -> None:
    assert fit_items(["gpu-01", "gpu-02", "gpu-03"], 20, ",") == "gpu-01,gpu-02,gpu-03"
    assert fit_items(["gpu-01", "gpu-02", "gpu-03"], 16, ",") == "gpu-01,…+2"
    assert fit_items(["gpu-01", "gpu-02"], 3, ",") == "…+2"


def test_an_id_longer_than_the_longest_whole_one_is_cut_visibly_and_its_column_capped() -> None:
    """A 500-character id (the model allows 512) made its column 500 wide and pushed every other
    column off the screen: its column is at most LONGEST_WHOLE_ID wide and the cell ends in "…"
    (the Job view shows it whole); ids up to that length are never cut."""
    from gpuq.tui.widgets.fitting import LONGEST_WHOLE_ID, whole_width

    column = Column("ID", Kind.ID)
    assert whole_width(column, 500) == LONGEST_WHOLE_ID and whole_width(column, 12) == 12
    assert whole_width(Column("GPUS", Kind.NUMBER), 500) == 500
    cut = fit_cell("9" * 500, LONGEST_WHOLE_ID, column)
    assert cut == "9" * (LONGEST_WHOLE_ID - 1) + "…"
    assert fit_cell("7" * LONGEST_WHOLE_ID, LONGEST_WHOLE_ID, column) == "7" * LONGEST_WHOLE_ID
