"""JSON from outside decoded with nesting too deep refused as a decode error, in every reader.

msgspec refuses a value nested past its depth limit (about a thousand levels) with
`RecursionError`, not `msgspec.DecodeError`: a reader that catches only the latter ends in a
traceback on a hostile line (or, in a worker, in silence). Every reader of outside JSON decodes
through `decoded`, so nesting too deep is one more malformed document, reported where it is.
(The snapshot reader, `gpuq.model.codec`, says how deep on its own.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import msgspec

__all__ = ["TOO_DEEP", "decoded"]

T = TypeVar("T")

#: the decode error's words
TOO_DEEP = "nested too deep"


def decoded(decode: Callable[[Any], T], data: bytes | str) -> T:
    """`decode(data)` (a msgspec decoder's `decode`, or `msgspec.json.decode`), with nesting past
    msgspec's depth limit raised as `msgspec.DecodeError`."""
    try:
        return decode(data)
    except RecursionError:
        raise msgspec.DecodeError(TOO_DEEP) from None
