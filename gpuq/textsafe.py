"""Text from outside (job names, users, reasons, ids from a backend or a snapshot) shown as data.

A terminal obeys what it is sent: ESC starts a command (`\\x1b[2J` clears the screen, OSC sets
the title or a hyperlink), a bidi override (U+202E) makes `1324` read as `4231`, a line or
paragraph separator (U+2028) breaks a row in two. `visible` turns every such character into an
escape the operator can read (`\\x1b`, `\\u202e`), and leaves all other text, accents and CJK
included, as it is. `cell_width` is the number of terminal columns a (visible) text takes.

Pure: no terminal, no Rich; the CLI and (later) the console use the same functions.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["cell_width", "json_safe", "visible"]

#: Unicode categories never shown as themselves: controls (C0, DEL, C1 including NEL), format
#: characters (bidi embeddings, overrides and isolates, zero-width ones, BOM), lone surrogates
#: (they cannot even be written to a UTF-8 stream) and the line and paragraph separators.
_HIDDEN = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_SHORT = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(char: str) -> str:
    short = _SHORT.get(char)
    if short is not None:
        return short
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def visible(text: str) -> str:
    """`text` with every control, format and separator character written as an escape."""
    # isprintable() is False for each hidden category (and for a few harmless ones, such as a
    # no-break space): one C-speed check lets the usual text through untouched.
    if text.isprintable():
        return text
    category = unicodedata.category
    return "".join(_escape(ch) if category(ch) in _HIDDEN else ch for ch in text)


_NON_ASCII = re.compile(r"[^\x00-\x7f]+")


def _json_escape(char: str) -> str:
    code = ord(char)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000  # (a UTF-16 surrogate pair, as JSON writes a character past the BMP)
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def _json_run(match: re.Match[str]) -> str:
    run = match.group()
    if run.isprintable():
        return run
    category = unicodedata.category
    return "".join(_json_escape(ch) if category(ch) in _HIDDEN else ch for ch in run)


def json_safe(data: bytes | bytearray) -> bytes | bytearray:
    """A JSON text (UTF-8) with each hidden character past ASCII (C1 controls such as NEL and
    CSI, bidi overrides and isolates, zero-width and line/paragraph separators) written as a
    ``\\u`` escape: the same document to a JSON reader, nothing a terminal or log viewer obeys.
    (JSON encoders escape the C0 controls themselves.) An ASCII text, the usual one, is handed
    back as it is, after one C-speed check."""
    if data.isascii():
        return data
    return _NON_ASCII.sub(_json_run, data.decode("utf-8")).encode("utf-8")


def cell_width(text: str) -> int:
    """Terminal columns `text` takes: 2 per wide (CJK) character, 0 per combining mark.

    Meant for text already passed through `visible` (a control character counts as 1 here).
    """
    if text.isascii():
        return len(text)
    width = 0
    east_asian, category = unicodedata.east_asian_width, unicodedata.category
    for ch in text:
        if category(ch) in ("Mn", "Me"):  # combining marks sit on the character before
            continue
        width += 2 if east_asian(ch) in ("W", "F") else 1
    return width
