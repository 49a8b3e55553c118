"""The column model (`gpuq.views.columns`): a drop order without ties, and a first column that is
always shown (a row is found by it)."""

from __future__ import annotations

import pytest

from gpuq.views.columns import TABLES, Column, Kind, _spec


def test_two_columns_may_not_share_a_rank() -> None:
    with pytest.raises(ValueError, match="t: two columns share a rank"):
        _spec("t", Column("A", Kind.ID), Column("B", Kind.PLAIN, 2), Column("C", Kind.TEXT, 2))


@pytest.mark.parametrize("name", sorted(TABLES))
def test_every_table_keeps_its_first_column_and_ranks_the_rest(name: str) -> None:
    spec = TABLES[name]
    assert spec.columns[0].rank == 0
    assert spec.columns[0].kind in (Kind.ID, Kind.PLAIN)
    ranks = [c.rank for c in spec.columns if c.rank]
    assert len(ranks) == len(set(ranks))
