"""`gpuq.textsafe`: control, format and separator characters become visible escapes; other text,
accents and CJK included, is left as it is; `cell_width` counts terminal columns."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpuq.textsafe import cell_width, visible


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("\x1b[2J", "\\x1b[2J"),
        ("\x1b]0;title\x07", "\\x1b]0;title\\x07"),
        ("a\x9b31mb", "a\\x9b31mb"),
        ("1324\u202e", "1324\\u202e"),
        ("\u2066x\u2069", "\\u2066x\\u2069"),
        ("\u200e\u200f\u061c", "\\u200e\\u200f\\u061c"),
        ("a\u2028b\u2029c\x85d", "a\\u2028b\\u2029c\\x85d"),
        ("tab\there\nnew\rret", "tab\\there\\nnew\\rret"),
        ("\x00\x7f", "\\x00\\x7f"),
        ("zero\u200bwidth\ufeff", "zero\\u200bwidth\\ufeff"),
        ("\udcff", "\\udcff"),  # a lone surrogate (a byte that was not UTF-8)
        ("\U000e0041", "\\U000e0041"),  # a tag character (format, invisible)
    ],
)
def test_hidden_characters_become_escapes(raw: str, shown: str) -> None:
    assert visible(raw) == shown


@pytest.mark.parametrize("text", ["[/]", "[bold red]x[/]", "train-llm", "Zoë", "作业-7", "a b", "e\u0301", "\u00a0"])
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert visible(text) == text


@given(st.text())
def test_visible_output_has_nothing_a_terminal_obeys(text: str) -> None:
    out = visible(text)
    assert all(unicodedata.category(ch) not in ("Cc", "Cf", "Cs", "Zl", "Zp") for ch in out)
    out.encode("utf-8")  # writable to any UTF-8 stream
    assert visible(out) == out  # idempotent: already visible text stays as it is


@pytest.mark.parametrize(
    ("text", "width"),
    [("abc", 3), ("", 0), ("作业", 4), ("Zoë", 3), ("e\u0301", 1), ("ｶﾀｶﾅ", 4), ("한국어", 6)],
)
def test_cell_width(text: str, width: int) -> None:
    assert cell_width(text) == width
