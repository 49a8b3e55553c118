"""The console's commands by name: `:` commands typed at the prompt (k9s style) and the command
palette's entries (ctrl+p). Both only dispatch to the app's own actions."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import TYPE_CHECKING

from textual.app import SystemCommand

from gpuq.textsafe import visible
from gpuq.tui.panes import pane_classes

if TYPE_CHECKING:
    from gpuq.tui.app import GpuqConsole

__all__ = ["PROMPT_HINTS", "palette_commands", "run_command"]

#: the prompt's placeholder per mode: `/` filter, `:` command, `g` a recorded time
PROMPT_HINTS = {
    "/": "filter: part of an id, name, user, class, node or reason",
    ":": "view (queue, gpus, sla, preemptions, job, preview, audit, lab), lab TRACE, theme NAME, cluster NAME, q",
    "g": "jump to a recorded time: 2026-11-19T19:04:00Z, or 19:04[:00] on the first frame's day",
}


def run_command(app: GpuqConsole, text: str) -> None:
    """`:` commands: a view name, `lab TRACE`, `theme NAME`, `cluster NAME`, `q`."""
    word, _, rest = text.partition(" ")
    word, rest = word.lower(), rest.strip()
    views = {cls.view_id for cls in pane_classes()}
    if word in ("q", "quit", "q!"):
        app.exit()
    elif word in ("lab", "trace") and rest:  # `:lab TRACE`: the policy lab replays a trace
        from gpuq.tui.panes.lab import LabPane

        app.action_show_view("lab", lambda: app.query_one(LabPane).load(rest))
    elif word == "trace":
        app.notify("trace needs a path: :trace PATH (or :lab PATH)", severity="error")
    elif word in views:
        app.action_show_view(word)
    elif word == "theme" and rest:
        if rest in app.available_themes:
            app.theme = rest
        else:
            app.notify(f"no theme {visible(rest)!r} (themes: {', '.join(sorted(app.available_themes))})",
                       severity="error")  # fmt: skip
    elif word == "cluster" and rest:
        if not app.set_scope_by_name(rest):
            names = ", ".join(c.name for c in app.clusters)
            app.notify(f"no cluster {visible(rest)!r} (clusters: {visible(names)}, all)", severity="error")
    elif word:
        app.notify(f"unknown command {visible(word)!r}: a view ({', '.join(sorted(views))}), theme NAME, "
                   "cluster NAME or q", severity="error")  # fmt: skip


def palette_commands(app: GpuqConsole) -> Iterator[SystemCommand]:
    """gpuq's entries of the command palette: views, clusters, themes, refresh, actions."""
    for cls in pane_classes():
        yield SystemCommand(f"View: {cls.title}", f"Show the {cls.title} view",
                            partial(app.action_show_view, cls.view_id))  # fmt: skip
    if len(app.clusters) > 1:
        for cluster in app.clusters:
            name = cluster.name
            yield SystemCommand(f"Cluster: {visible(name)}", f"Show cluster {visible(name)} only",
                                partial(app.set_scope_by_name, name))  # fmt: skip
        yield SystemCommand("Cluster: all", "Every cluster in one view", partial(app.set_scope_by_name, "all"))
    for name in sorted(app.available_themes):
        yield SystemCommand(f"Theme: {name}", f"Colours of the {name} theme", partial(setattr, app, "theme", name))
    yield SystemCommand("Refresh now", "Read the cluster(s) again", app.action_refresh_now)
    if not app.settings.read_only:
        for kind in ("bump", "exempt", "preempt", "resume"):
            yield SystemCommand(f"Action: {kind}", f"{kind.capitalize()} the selected job",
                                partial(app.action_act, kind))  # fmt: skip
