"""`HostGpusView`: this host's own GPUs (NVML) under the GPU grid, one line per GPU at any width.

Per GPU its index, load, memory and temperature, then the processes on it with the job each runs
in; where the processes do not fit they are cut between two of them with `…+N` (never inside a
pid or a job id), as the tables cut lists. The GPU model is said once in the title when every GPU
is the same one, else in a NAME column. Outside text (commands, errors) is shown through
`visible`, as data.
"""

from __future__ import annotations

from typing import ClassVar

from rich.console import Group
from rich.style import Style
from rich.text import Text
from textual.widget import Widget

from gpuq.textsafe import cell_width, visible
from gpuq.tui.widgets.fitting import fit_items
from gpuq.tui.widgets.tones import component_style
from gpuq.views.hostgpus import HostGpuRow, HostGpuView

__all__ = ["HostGpusView"]

SEP = ", "
GAP = "  "


class HostGpusView(Widget):
    """See the module docstring."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"hostgpus--title", "hostgpus--muted", "hostgpus--busy",
                                             "hostgpus--error"}  # fmt: skip
    DEFAULT_CSS = """
    HostGpusView { height: auto; padding: 0 1; }
    HostGpusView > .hostgpus--title { color: $primary; text-style: bold; }
    HostGpusView > .hostgpus--muted { color: $foreground-muted; }
    HostGpusView > .hostgpus--busy { color: $gpuq-running; }
    HostGpusView > .hostgpus--error { color: $gpuq-sla-breach; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.view: HostGpuView | None = None
        #: why there is nothing to show (no NVML, a replay), in place of the GPUs
        self.note = ""
        self.host_node: str | None = None

    def show(self, view: HostGpuView | None, note: str = "", host_node: str | None = None) -> None:
        self.view, self.note, self.host_node = view, note, host_node
        self.refresh(layout=True)

    def _style(self, name: str) -> Style:
        return component_style(self, f"hostgpus--{name}")

    def render(self) -> Group:
        view = self.view
        if view is None or not view.available:
            return Group(Text(visible(self.note or (view.note if view else "") or ""), self._style("muted")))
        width = max(1, self.content_region.width or self.size.width or 80)
        names = {r.gpu.name for r in view.rows}
        title = Text()
        title.append(f"this host {visible(view.host)}", self._style("title"))
        model = f"{len(view.rows)} × {visible(names.pop())}" if len(names) == 1 else f"{len(view.rows)} GPUs"
        title.append(f": {model}, {view.busy} with processes")
        if self.host_node is not None:
            title.append(f" · node {visible(self.host_node)} in the grid (underlined)")
        elif view.unchecked:
            title.append(" · " + visible(view.unchecked), self._style("muted"))
        lines: list[Text] = [title]
        if view.rows:
            lines.extend(self._table(view.rows, width, named=len({r.gpu.name for r in view.rows}) > 1))
        return Group(*lines)

    def _table(self, rows: tuple[HostGpuRow, ...], width: int, *, named: bool) -> list[Text]:
        heads = ["GPU", *(["NAME"] if named else []), "UTIL", "MEMORY", "TEMP"]
        cells = [[str(r.gpu.index), *([visible(r.gpu.name)] if named else []), r.utilisation, r.memory,
                  r.temperature] for r in rows]  # fmt: skip
        widths = [max(cell_width(h), *(cell_width(c[i]) for c in cells)) for i, h in enumerate(heads)]
        left = {0, 1} if named else {0}

        def line(values: list[str]) -> str:
            out = [v.ljust(w) if i in left else v.rjust(w) for i, (v, w) in enumerate(zip(values, widths, strict=True))]
            return GAP.join(out) + GAP

        header = Text(line(heads) + "PROCESSES", self._style("title"), no_wrap=True, overflow="crop")
        out = [header]
        room = max(1, width - cell_width(line(heads)))
        for r, values in zip(rows, cells, strict=True):
            text = Text(no_wrap=True, overflow="crop")
            text.append(line(values), self._style("busy") if r.gpu.processes else Style())
            error = f"error: {visible(r.gpu.error)}" if r.gpu.error else ""
            items = [*([error] if error else []), *(visible(p.label) for p in r.processes)]
            shown = fit_items(items, room, SEP) if items else "-"
            if error and shown.startswith(error):
                text.append(error, self._style("error"))
                shown = shown[len(error) :]
            text.append(shown, self._style("muted") if not items else Style())
            out.append(text)
        return out
