"""`?`: every key binding of the console, from the action registry (with the config's rebinds)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from gpuq.tui.keymap import ACTIONS, keys_of

__all__ = ["HelpScreen", "help_table"]

_SCOPES = {
    "app": "anywhere", "table": "in a table", "replay": "replaying a recording", "lab": "in the policy lab",
    "queue": "in the Queue view",
}  # fmt: skip


def help_table(overrides: Mapping[str, str]) -> Table:
    table = Table(box=None, show_header=True, header_style="bold", pad_edge=False, expand=False)
    for name in ("KEYS", "ACTION ID", "WHAT IT DOES", "WHERE"):
        table.add_column(name, no_wrap=name != "WHAT IT DOES")
    for action in ACTIONS:
        table.add_row(Text(keys_of(action.id, overrides)), Text(action.id), Text(action.description),
                      Text(_SCOPES[action.scope]))  # fmt: skip
    return table


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,question_mark", "dismiss", "Close")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 90%; height: 90%; border: thick $primary; background: $surface; padding: 0 1; }
    """

    def __init__(self, overrides: Mapping[str, str]) -> None:
        super().__init__()
        self.overrides = overrides

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(Text("Keys (rebind any action by its id under [console.keys] in the config; "
                              "escape closes)", style="bold"))  # fmt: skip
            yield Static(help_table(self.overrides))
