"""Textual's Footer, without its leak: it keeps every key it ever showed.

Each time the bindings change (every view switch) the Footer recomposes with new `FooterKey`s,
each data-bound to the Footer's `compact`. The binding registers a watcher on the Footer that is
pruned only when `compact` changes, which in the console it never does, so every key shown
since start-up stays alive with its styles and caches (about 16 widgets per view switch).
`ConsoleFooter` drops the watchers of keys no longer mounted after each recompose.
"""

from __future__ import annotations

from typing import Any

from textual.widgets import Footer

__all__ = ["ConsoleFooter", "watcher_count"]


def _watchers(node: Any) -> dict[str, list[tuple[Any, Any]]]:
    found = getattr(node, "__watchers", None)  # (where textual.reactive keeps them)
    return found if isinstance(found, dict) else {}


def watcher_count(node: Any) -> int:
    """How many watchers other nodes have on `node`'s reactives (what the tests watch grow)."""
    return sum(len(found) for found in _watchers(node).values())


class ConsoleFooter(Footer):
    async def recompose(self) -> None:
        await super().recompose()
        for found in _watchers(self).values():
            found[:] = [(node, callback) for node, callback in found if node is self or node.is_attached]
