"""A Kubernetes label selector (``kubectl -l``), matched against an object's labels here.

The server applies the selector to pods; Kueue Workloads are listed whole (the Workload of every
selected pod is needed to know whether Kueue admitted it), and the selector chooses which
waiting Workloads are shown, by their own labels, as the server would. The grammar is the
apiserver's (k8s.io/apimachinery labels.Parse): terms joined by commas, each ``key``, ``!key``,
``key=value``, ``key==value``, ``key!=value``, ``key in (v1,v2)`` or ``key notin (v1,v2)``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from gpuq.errors import BadInput
from gpuq.textsafe import visible

__all__ = ["Matcher", "parse_selector"]

Matcher = Callable[[Mapping[str, str]], bool]

_SET = re.compile(r"^\s*(\S+?)\s+(in|notin)\s*\((.*)\)\s*$")
_COMPARE = re.compile(r"^\s*([^=!\s]+)\s*(==|=|!=)\s*(\S*)\s*$")
_EXISTS = re.compile(r"^\s*(!?)\s*([^=!\s()]+)\s*$")


def _terms(selector: str) -> list[str]:
    """The selector split at the commas outside parentheses."""
    terms, depth, start = [], 0, 0
    for at, char in enumerate(selector):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "," and depth == 0:
            terms.append(selector[start:at])
            start = at + 1
    terms.append(selector[start:])
    return terms


def _term(text: str, selector: str) -> Matcher:
    found = _SET.match(text)
    if found:
        key, how, values = found.group(1), found.group(2), {v.strip() for v in found.group(3).split(",")}
        if how == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    found = _COMPARE.match(text)
    if found:
        key, how, value = found.groups()
        if how == "!=":
            return lambda labels: labels.get(key) != value
        return lambda labels: labels.get(key) == value
    found = _EXISTS.match(text)
    if found:
        negated, key = found.group(1) == "!", found.group(2)
        return (lambda labels: key not in labels) if negated else (lambda labels: key in labels)
    raise BadInput(f"label selector {visible(selector)!r}: cannot read {visible(text.strip())!r}")


def parse_selector(selector: str) -> Matcher:
    """Whether an object's labels match `selector` (an empty selector matches everything)."""
    if not selector.strip():
        return lambda labels: True
    matchers = [_term(text, selector) for text in _terms(selector)]
    return lambda labels: all(match(labels) for match in matchers)
