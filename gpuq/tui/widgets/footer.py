"""Textual's Footer, with keys that are not data-bound to it.

Each time the bindings change (at start-up, on every view switch) the Footer recomposes with new
`FooterKey`s, each data-bound to the Footer's `compact`:

- the binding registers a watcher on the Footer that is pruned only when `compact` changes, which
  in the console it never does, so every key shown since start-up stayed alive with its styles
  and caches (about 16 widgets per view switch);
- as each key mounts, the binding turns its own `compact` (True by default) to the Footer's
  (False): its class is added, then removed, and each time its styles are worked out again, two
  full style passes per key, UI work that a large console's first rows wait behind (figures in
  benchmarks/README.md).

`ConsoleFooter` takes the keys Textual's Footer composes and gives each one bound to the Footer
its `compact` before it mounts, with no binding: `compact` never changes in the console.
"""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

__all__ = ["ConsoleFooter", "watcher_count"]


def _watchers(node: Any) -> dict[str, list[tuple[Any, Any]]]:
    found = getattr(node, "__watchers", None)  # (where textual.reactive keeps them)
    return found if isinstance(found, dict) else {}


def watcher_count(node: Any) -> int:
    """How many watchers other nodes have on `node`'s reactives (what the tests watch grow)."""
    return sum(len(found) for found in _watchers(node).values())


class ConsoleFooter(Footer):
    def compose(self) -> ComposeResult:
        compact = self.compact
        for widget in super().compose():
            # (what `data_bind` left for its mount; the command palette's key has none)
            if isinstance(widget, FooterKey) and widget._reactive_connect:
                widget._reactive_connect = None
                widget.set_reactive(FooterKey.compact, compact)
            yield widget
