"""`w`: the what-if form of the Preview view — GPUs, priority, class, tenant, urgent.

The form checks what it can alone (whole numbers, at least one GPU, something that sets the
priority: a priority, a class or urgent, as `gpuq preview --gpus` asks) and says what is wrong
beside the fields; the service checks the rest (the class exists, the priority is in range) when
the view previews it, and the view shows its answer. Dismissed with a `WhatIf`, `False` (back to
the selected job) or None (cancelled).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Input, Label, Select, Static

from gpuq.errors import BadInput
from gpuq.textsafe import visible
from gpuq.tui.panes.preview import WhatIf

__all__ = ["WhatIfScreen", "parse_whole"]


def parse_whole(text: str, what: str, *, minimum: int | None = None) -> int:
    """A whole number typed into a field (ASCII digits, an optional sign); BadInput naming `what`."""
    value = text.strip()
    digits = value[1:] if value[:1] in "+-" else value
    if not (digits.isascii() and digits.isdigit()) or len(digits) > 20:
        shown = repr(value) if len(value) <= 24 else f"{value[:20]!r}… ({len(value)} characters)"
        raise BadInput(f"{what}: {shown} is not a whole number")
    number = int(value)
    if minimum is not None and number < minimum:
        raise BadInput(f"{what}: {number} is less than {minimum}")
    return number


class WhatIfScreen(ModalScreen[WhatIf | bool | None]):
    """See the module docstring."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss_none", "Cancel")]
    DEFAULT_CSS = """
    WhatIfScreen { align: center middle; }
    WhatIfScreen > #whatif-box {
        width: 76; max-width: 100%; height: auto; max-height: 100%;
        border: thick $primary; background: $surface; padding: 0 1;
    }
    WhatIfScreen #whatif-fields { height: auto; max-height: 70vh; }
    WhatIfScreen .whatif-row { height: 1; margin-bottom: 1; }
    WhatIfScreen .whatif-row > Label { width: 10; }
    WhatIfScreen .whatif-row > Input, WhatIfScreen .whatif-row > Select { width: 1fr; }
    WhatIfScreen #whatif-error { color: $error; text-style: bold; height: auto; }
    WhatIfScreen #whatif-buttons { height: 2; padding-top: 1; dock: bottom; }
    WhatIfScreen #whatif-buttons > Button { margin-right: 2; }
    """

    def __init__(self, cluster: int, classes: Sequence[str], current: WhatIf | None = None) -> None:
        super().__init__()
        self.cluster = cluster
        self.class_names = list(classes)
        self.current = current

    def compose(self) -> ComposeResult:
        now = self.current
        with Vertical(id="whatif-box"):
            yield Static(Text("What-if preview: what would a request like this preempt now?", style="bold"))
            with VerticalScroll(id="whatif-fields"):
                with Horizontal(classes="whatif-row"):
                    yield Label("GPUs")
                    yield Input(str(now.gpus) if now else "", placeholder="GPUs requested, e.g. 8", id="whatif-gpus",
                                compact=True)  # fmt: skip
                with Horizontal(classes="whatif-row"):
                    yield Label("priority")
                    shown = "" if now is None or now.priority is None else str(now.priority)
                    yield Input(shown, placeholder="base priority (empty: the class's default)", id="whatif-priority",
                                compact=True)  # fmt: skip
                with Horizontal(classes="whatif-row"):
                    yield Label("class")
                    if self.class_names:
                        options = [(Text(visible(c)), c) for c in self.class_names]
                        chosen = now.job_class if now and now.job_class in self.class_names else Select.NULL
                        yield Select(options, prompt="(none)", value=chosen, id="whatif-class", compact=True)
                    else:
                        yield Input((now.job_class or "") if now else "", placeholder="class name", id="whatif-class",
                                    compact=True)  # fmt: skip
                with Horizontal(classes="whatif-row"):
                    yield Label("tenant")
                    yield Input((now.tenant or "") if now else "", placeholder="tenant (its urgent quota; optional)",
                                id="whatif-tenant", compact=True)  # fmt: skip
                yield Checkbox("urgent (the policy's urgent priority)", now.urgent if now else False,
                               id="whatif-urgent", compact=True)  # fmt: skip
                yield Static(id="whatif-error")
            with Horizontal(id="whatif-buttons"):
                yield Button("Preview", variant="primary", id="whatif-go", compact=True)
                yield Button("Selected job", id="whatif-job", compact=True)
                yield Button("Cancel", id="whatif-cancel", compact=True)

    def on_mount(self) -> None:
        self.query_one("#whatif-error").display = False
        self.query_one("#whatif-gpus", Input).focus()

    def _field(self, name: str) -> str:
        widget = self.query_one(f"#whatif-{name}")
        if isinstance(widget, Select):
            value = widget.value
            return value if isinstance(value, str) else ""
        assert isinstance(widget, Input)
        return widget.value

    def request(self) -> WhatIf:
        """The form as a `WhatIf`; BadInput saying what is wrong."""
        gpus_text = self._field("gpus")
        if not gpus_text.strip():
            raise BadInput("GPUs: give the number of GPUs requested (at least 1)")
        gpus = parse_whole(gpus_text, "GPUs", minimum=1)
        priority_text = self._field("priority").strip()
        priority = parse_whole(priority_text, "priority") if priority_text else None
        job_class = self._field("class").strip() or None
        tenant = self._field("tenant").strip() or None
        urgent = self.query_one("#whatif-urgent", Checkbox).value
        if priority is None and job_class is None and not urgent:
            raise BadInput("a what-if request needs a priority, a class (its default priority) or urgent")
        return WhatIf(gpus, priority, job_class, tenant, urgent, self.cluster)

    def _say(self, problem: str | None) -> None:
        error = self.query_one("#whatif-error", Static)
        error.update(Text(visible(problem or "")))
        error.display = problem is not None

    @on(Input.Submitted)
    @on(Button.Pressed, "#whatif-go")
    def _go(self) -> None:
        try:
            what_if = self.request()
        except BadInput as exc:
            self._say(str(exc))
            return
        self.dismiss(what_if)

    @on(Button.Pressed, "#whatif-job")
    def _job(self) -> None:
        self.dismiss(False)

    @on(Button.Pressed, "#whatif-cancel")
    def action_dismiss_none(self) -> None:
        self.dismiss(None)
