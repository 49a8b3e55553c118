"""The console: `make_app` builds it (for `gpuq tui`, plain `gpuq` on a terminal and the tests
alike, posting's single factory).

The app owns the clusters' refresh (`RefreshState` per cluster, reads in worker threads, never
on the UI thread), the last good snapshot of each, the scope (one cluster, or all of them: the
combined view), the selected job, and which pane is showing. Panes (gpuq/tui/panes/) compute
their view models in a worker too (`Pane.compute`) and only render on the UI thread.
"""

from __future__ import annotations

import dataclasses
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar

from textual import events, on, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import BindingType
from textual.containers import Vertical
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.widgets import ContentSwitcher, Input, Static

from gpuq.errors import BadInput, GpuqError
from gpuq.model import Snapshot
from gpuq.service import Cluster
from gpuq.textsafe import visible
from gpuq.tui.collector import computing, settle_collector, untrack
from gpuq.tui.commands import PROMPT_HINTS, palette_commands, run_command
from gpuq.tui.gate import InputGate
from gpuq.tui.keymap import bindings
from gpuq.tui.messages import Computed, Refreshed, RefreshFailed
from gpuq.tui.panes import pane_class
from gpuq.tui.panes.base import ClusterItem, Pane, PaneContext, Selection
from gpuq.tui.refresh import RefreshState
from gpuq.tui.replay_controls import ReplayControls
from gpuq.tui.replaying import ReplayClock, scrubber_line
from gpuq.tui.statusline import stale_banner, status_line, unread_banner
from gpuq.tui.themes import THEME_FALLBACKS
from gpuq.tui.widgets.bar import Bar
from gpuq.tui.widgets.footer import ConsoleFooter
from gpuq.tui.widgets.table import ViewTable

if TYPE_CHECKING:
    from gpuq.service import Recorder, Replay
    from gpuq.tui.options import ConsoleSetup

__all__ = ["ConsoleSettings", "GpuqConsole", "make_app"]

Clock = Callable[[], float]
#: how long a compute waits for its first screen to be painted before it goes on sorting, and
#: then for the driver's output thread to send that frame to the terminal (it needs the
#: interpreter, which a pass of the sort holds throughout: a key read in C runs no bytecode)
EARLY_WAIT_S = 0.5
EARLY_WRITE_S = 0.02


@dataclass(frozen=True, slots=True)
class ConsoleSettings:
    refresh_s: float = 2.0
    theme: str = "dark"
    read_only: bool = False
    #: why actions are off, when they are (shown instead of the action)
    read_only_reason: str = "the console was started read-only (--read-only, or read_only = true in the config)"
    #: action id -> keys, from `[console.keys]` (checked by `keymap.check_keys`)
    keys: Mapping[str, str] = field(default_factory=dict)
    #: the view shown first
    first_view: str = "queue"


class GpuqConsole(ReplayControls, App[None]):
    """See the module docstring."""

    CSS_PATH = "gpuq.tcss"
    TITLE = "gpuq"
    BINDINGS: ClassVar[list[BindingType]] = [*bindings("app"), *bindings("replay")]

    def __init__(self, clusters: Sequence[Cluster], settings: ConsoleSettings | None = None, *,
                 clock: Clock = time.time, themes: Mapping[str, Any] | None = None,
                 recorder: Recorder | None = None, replay: Replay | None = None,
                 owns_process: bool = False) -> None:  # fmt: skip
        """`owns_process`: this console is what the process runs, for hours (`gpuq tui`; not a
        test run that makes hundreds): the cyclic collector is set for it (`settle_collector`) as
        it mounts, and again once its first frame is out (freezing the widgets that frame made)."""
        super().__init__()
        self.owns_process = owns_process
        if not clusters:
            raise GpuqError("no cluster to show")
        self.clusters = list(clusters)
        self.settings = settings or ConsoleSettings()
        self.clock = clock
        self.refreshes = [RefreshState(self.settings.refresh_s) for _ in self.clusters]
        self.snapshots: list[Snapshot | None] = [None] * len(self.clusters)
        #: -1: every cluster (the combined view)
        self.scope = 0
        self.selected: Selection | None = None
        self.filter_text = ""
        self.view_id = self.settings.first_view
        self._history: list[str] = []
        #: views whose panes are mounting, and the view to show (with what to do then) once its pane is
        self._mounting: set[str] = set()
        self._waiting: tuple[str, Callable[[], object] | None] | None = None
        self._token = 0
        self._computing = False
        self._again = False
        #: the views that have shown a finished model (until then a compute may show the first
        #: rows early: `PaneContext.early`)
        self._shown_views: set[str] = set()
        #: the views that have shown a model, early or finished: until then the view's place says
        #: what is being done ("reading …", "computing …"), not what an empty table would say
        self._painted_views: set[str] = set()
        #: workers step aside for a moment after each key or click (gpuq/tui/gate.py)
        self.gate = InputGate()
        #: `--record DIR`: every successful read is kept (in the reading worker)
        self.recorder = recorder
        #: `--replay DIR`: snapshots come from a recording, moved by the scrubber
        self.replay = replay
        self.replay_clock = ReplayClock(replay.times(self.clusters[0].name)) if replay is not None else None
        self._played_at = 0.0
        self._prompt_mode = ""
        self._started = False
        for theme in (themes or {}).values():
            self.register_theme(theme)
        if themes and self.settings.theme in themes:
            self.theme = self.settings.theme
        if self.settings.keys:
            self.set_keymap(dict(self.settings.keys))

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = False) -> None:  # fmt: skip
        """Every notification is plain text: what it says often comes from outside (an error
        naming a job, a cluster, a reason), and Textual would read `[...]` in it as markup."""
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=False)

    def get_theme_variable_defaults(self) -> dict[str, str]:
        colours = self.current_theme.to_color_system().generate()
        return {name: colours.get(base, colours["foreground"]) for name, base in THEME_FALLBACKS.items()}

    # -- layout

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.InputEvent):  # (a key or the mouse: workers step aside)
            self.gate.note_input()
        await super().on_event(event)

    def compose(self) -> ComposeResult:
        yield Bar(id="status")
        yield Bar(id="banner")
        yield Bar(id="unread")
        with ContentSwitcher(initial=f"pane-{self.view_id}", id="panes"):
            # (the other views mount on first use, `_switch`: composing and styling all eight held
            # up the first frame of a large cluster by ~0.4 s)
            yield pane_class(self.view_id)()
        with Vertical(id="prompt-box"):
            yield Input(id="prompt")
        if self.replay is not None:
            yield Bar(id="scrubber")
        yield ConsoleFooter()

    @property
    def pane(self) -> Pane:
        return self.query_one(f"#pane-{self.view_id}", Pane)

    def on_unmount(self) -> None:
        """Quit: stop and join what the clusters run in the background (`Cluster.close`, issue 32)."""
        for cluster in self.clusters:
            cluster.close()

    def on_mount(self) -> None:
        self._started = True
        if self._driver is not None:
            self.gate.watch(self._driver)
        if self.owns_process:  # now, for the first read and compute; again once the first frame is out
            settle_collector()
            self.call_after_refresh(settle_collector)
        self.query_one("#banner").display = False
        self.query_one("#prompt-box").display = False
        self.set_interval(0.25, self._tick)
        self._tick()
        self._focus_pane()
        if self.context() is None:
            self._paint_empty()  # ("reading …" until the first read is in)
        self._paint_status()

    # -- refreshing

    def _tick(self) -> None:
        now = self.clock()
        if self.replay is not None:
            self._play(now)
        for index, state in enumerate(self.refreshes):
            if self.replay is not None and self.snapshots[index] is not None:
                continue  # a recording changes only when the scrubber moves
            if (self.scope in (-1, index) or self.snapshots[index] is None) and state.due(now):
                state.start(now)
                self._read(index)
        self._paint_status()

    def action_refresh_now(self) -> None:
        for index, state in enumerate(self.refreshes):
            if not state.running and self.scope in (-1, index):
                state.start(self.clock())
                self._read(index)

    # (every worker has a description: without one Textual describes it by the repr() of its
    # arguments, on the UI thread, and a context's repr spells out every job of a snapshot)
    @work(thread=True, exit_on_error=False, description="read a cluster")
    def _read(self, index: int) -> None:
        started = time.perf_counter()
        try:
            with computing(self.gate.pause, manage=self.owns_process):
                snapshot = self.clusters[index].refresh(ledger=True)
                untrack(snapshot.jobs, self.gate.pause)
        except GpuqError as exc:
            self.post_message(RefreshFailed(index, str(exc)))
        except Exception as exc:  # noqa: BLE001 - a backend bug must not take the console down
            self.post_message(RefreshFailed(index, f"{type(exc).__name__}: {exc}"))
        else:
            self.post_message(Refreshed(index, snapshot, time.perf_counter() - started))
            self._record(snapshot)

    def _record(self, snapshot: Snapshot) -> None:
        """Keep the read in the recording (worker thread); a failure stops recording, said once."""
        recorder = self.recorder
        if recorder is None or recorder.stopped is not None:
            return
        try:
            recorder.add(snapshot)
        except GpuqError as exc:
            self.call_from_thread(self.notify, visible(f"recording stopped: {exc}"), severity="error", timeout=30)

    @on(Refreshed)
    def _refreshed(self, message: Refreshed) -> None:
        self.refreshes[message.index].succeeded(self.clock())
        self.snapshots[message.index] = message.snapshot
        if self.scope in (-1, message.index):
            self.recompute()
        self._paint_status()

    @on(RefreshFailed)
    def _failed(self, message: RefreshFailed) -> None:
        self.refreshes[message.index].failed(self.clock(), message.error)
        if self.scope in (-1, message.index) and self.snapshots[message.index] is None:
            self.recompute()  # the pane shows why there is nothing
        self._paint_status()

    # -- computing what the pane shows

    def context(self) -> PaneContext | None:
        indexes = range(len(self.clusters)) if self.scope == -1 else (self.scope,)
        items = tuple(
            ClusterItem(i, self.clusters[i], snap) for i in indexes if (snap := self.snapshots[i]) is not None
        )
        if not items:
            return None
        return PaneContext(items, self.selected, self.filter_text, self.scope == -1, self.gate.pause)

    def recompute(self) -> None:
        """Compute the visible pane's model again (in a worker; one at a time, the latest wins)."""
        if not self._started or not self.is_running:  # (a read that came back as the console closed)
            return
        if self._computing:
            self._again = True
            return
        ctx = self.context()
        pane = self.pane
        if ctx is None:
            self._paint_empty()
            return
        if pane.needs_selection and self.selected is None:
            self._paint_empty("select a job in the queue first (1, then the arrows)")
            return
        self._paint_empty(None if pane.view_id in self._painted_views else f"computing the {pane.title} view …")
        self._token += 1
        self._computing = True
        if pane.view_id not in self._shown_views:
            ctx = dataclasses.replace(ctx, early=partial(self._post_early, pane.view_id, self._token))
        self._compute(pane, [ctx], pane.params(), self._token)

    def _post_early(self, view_id: str, token: int, model: Any) -> None:
        """`PaneContext.early` (worker thread): returns once that model is painted (at most
        `EARLY_WAIT_S`), so the rest of the compute does not keep its frame waiting."""
        painted = threading.Event()
        self.post_message(Computed(view_id, token, model, 0.0, early=painted))
        if painted.wait(EARLY_WAIT_S):
            time.sleep(EARLY_WRITE_S)

    # (`box`: the worker takes its context out, so that the finished Worker, which lives on until
    # the cyclic collector frees it and its task, does not keep the snapshots alive until then)
    @work(thread=True, exit_on_error=False, group="compute", description="compute the visible view")
    def _compute(self, pane: Pane, box: list[PaneContext], params: Any, token: int) -> None:
        started = time.perf_counter()
        ctx = box.pop()
        try:
            with computing(ctx.pause, manage=self.owns_process):
                model = pane.compute(ctx, params)
        except GpuqError as exc:
            self.post_message(Computed(pane.view_id, token, None, 0.0, str(exc)))
            return
        except Exception as exc:  # noqa: BLE001 - shown, not raised: the console stays up
            self.post_message(Computed(pane.view_id, token, None, 0.0, f"{type(exc).__name__}: {exc}"))
            return
        self.post_message(Computed(pane.view_id, token, model, time.perf_counter() - started))

    @work(thread=True, exclusive=True, exit_on_error=False, group="numpy", description="import numpy")
    def _import_numpy(self) -> None:
        """Once the first view is on screen: the sorts of later computes step aside with numpy's
        argsort (gpuq/views/queue.py), and the import is kept out of the first frame's way."""
        import numpy  # noqa: F401

    def shows_data(self) -> bool:
        """Whether the visible view shows a model of the data in scope (else its place says why not)."""
        return self.view_id in self._painted_views and self.context() is not None

    def _show(self, view_id: str, model: Any) -> None:
        self._painted_views.add(view_id)
        self._paint_empty(None)
        self.pane.show(model)

    @on(Computed)
    def _computed(self, message: Computed) -> None:
        current = message.token == self._token and message.view_id == self.view_id
        if message.early is not None:  # (the compute goes on: its finished model follows)
            if current and self._started and self.is_running:
                self._show(message.view_id, message.model)
                self._paint_status()
                self.call_after_refresh(message.early.set)
            else:
                message.early.set()
            return
        self._computing = False
        if not self._started or not self.is_running:  # a result that outlived the console
            return
        if current:
            if message.error is not None:
                self.notify(visible(message.error), title=f"{self.pane.title} view", severity="error")
                if message.view_id not in self._painted_views:
                    self._paint_empty(f"the {self.pane.title} view could not be computed: {message.error}")
            else:
                self._shown_views.add(message.view_id)
                self._show(message.view_id, message.model)
                self._sync_selection()
                if "numpy" not in sys.modules:
                    self.call_after_refresh(self._import_numpy)
        if self._again:
            self._again = False
            self.recompute()
        self._paint_status()

    # -- what the operator sees around the pane

    def _scope_name(self) -> str:
        if self.scope == -1:
            return "all clusters"
        return self.clusters[self.scope].label

    def _paint_status(self) -> None:
        if not self._started or not self.is_running:  # (shutting down: the widgets are going)
            return
        self.query_one("#status", Bar).show(status_line(self))
        if self.replay_clock is not None:
            width = self.size.width or 80
            self.query_one("#scrubber", Bar).show(scrubber_line(self.replay_clock, width))
        self.query_one("#banner", Bar).show_or_hide(stale_banner(self, self.clock()))
        self.query_one("#unread", Bar).show_or_hide(unread_banner(self))

    def _paint_empty(self, why: str | None = "") -> None:
        """The pane's place when there is nothing to show yet: why, never a traceback."""
        empty = self.query("#empty")
        if why is None:
            self.query_one("#panes").display = True
            if empty:
                empty.remove()
                if not isinstance(self.focused, Input):  # (a hidden table lost the focus; the prompt keeps it)
                    self._focus_pane()
            return
        if not why:
            errors = [s.error for i, s in enumerate(self.refreshes) if s.error and self.scope in (-1, i)]
            why = (f"cannot read {self._scope_name()}: {errors[0]}" if errors
                   else f"reading {self._scope_name()} …")  # fmt: skip
        self.query_one("#panes").display = False
        if empty:
            empty.first(Static).update(_plain(visible(why)))
        else:
            self.mount(Static(_plain(visible(why)), id="empty"), before=self.query_one("#prompt-box"))

    # -- navigation

    def action_show_view(self, view_id: str, then: Callable[[], object] | None = None) -> None:
        """Show a view, then (`then`) do something with its pane."""
        if view_id != self.view_id:
            self._history.append(self.view_id)
        self._switch(view_id, then)

    def _switch(self, view_id: str, then: Callable[[], object] | None = None) -> None:
        """Show `view_id`'s pane and run `then`. A pane never shown is mounted first, and shown once
        it has composed its widgets (until then it can be neither focused nor computed for); the
        latest view asked for meanwhile is the one shown."""
        switcher = self.query_one("#panes", ContentSwitcher)
        pane_id = f"pane-{view_id}"
        if view_id in self._mounting or not any(child.id == pane_id for child in switcher.children):
            self._waiting = (view_id, then)
            if view_id not in self._mounting:
                self._mounting.add(view_id)
                pane = pane_class(view_id)()
                pane.display = False  # (the switcher shows it)
                self.call_next(self._mounted, switcher.mount(pane), view_id)
            return
        if view_id != self.view_id:
            self._sync_selection()
            self.view_id = view_id
            switcher.current = pane_id
            self._focus_pane()
            self.recompute()
            self._paint_status()
        if then is not None:
            then()

    async def _mounted(self, mounting: Awaitable[object], view_id: str) -> None:
        await mounting
        self._mounting.discard(view_id)
        if self._waiting is not None and self._waiting[0] == view_id:
            then, self._waiting = self._waiting[1], None
            self._switch(view_id, then)

    def action_go_back(self) -> None:
        if self.query_one("#prompt-box").display:
            self._close_prompt()
            return
        if self.filter_text:
            self.filter_text = ""
            self.recompute()
        elif self._history:
            self._switch(self._history.pop())
        self._paint_status()

    def _focus_pane(self) -> None:
        tables = self.pane.query(ViewTable)
        if tables:
            tables.first().focus()
        else:
            self.pane.focus()

    def _sync_selection(self) -> None:
        chosen = self.pane.selection()
        if chosen is not None:
            self.selected = chosen

    @on(ViewTable.Moved)
    def _moved(self, event: ViewTable.Moved) -> None:
        if not self.is_running:  # (a table's message delivered as the console closes: its panes are gone)
            return
        self._sync_selection()
        self._paint_status()

    @on(ViewTable.Hid)
    def _hid(self, event: ViewTable.Hid) -> None:
        self._paint_status()

    @on(ViewTable.Opened)
    def _opened(self, event: ViewTable.Opened) -> None:
        if not self.is_running:  # (as in `_moved`)
            return
        self._sync_selection()
        if self.selected is not None and self.view_id != "job":
            self.action_show_view("job")

    def action_open_selected(self) -> None:
        self._sync_selection()
        if self.selected is not None:
            self.action_show_view("job")

    def action_next_cluster(self) -> None:
        self._set_scope(1)

    def action_previous_cluster(self) -> None:
        self._set_scope(-1)

    def _set_scope(self, step: int) -> None:
        if len(self.clusters) == 1:
            self.notify("one cluster is configured: nothing to switch to", timeout=3)
            return
        order = [*range(len(self.clusters)), -1]
        self.scope = order[(order.index(self.scope) + step) % len(order)]
        self.recompute()
        self._paint_status()

    def set_scope_by_name(self, name: str) -> bool:
        if name in ("all", "*"):
            self.scope = -1 if len(self.clusters) > 1 else 0
        else:
            found = [i for i, c in enumerate(self.clusters) if c.name == name]
            if not found:
                return False
            self.scope = found[0]
        self.recompute()
        self._paint_status()
        return True

    # -- the prompt: `/` filter and `:` commands

    def action_filter(self) -> None:
        self._open_prompt("/", self.filter_text)

    def action_command(self) -> None:
        self._open_prompt(":", "")

    def _open_prompt(self, mode: str, value: str) -> None:
        self._prompt_mode = mode
        box, prompt = self.query_one("#prompt-box"), self.query_one("#prompt", Input)
        prompt.placeholder = PROMPT_HINTS[mode]
        prompt.value = value
        box.display = True
        prompt.focus()

    def _close_prompt(self) -> None:
        self.query_one("#prompt-box").display = False
        self._focus_pane()

    @on(Input.Submitted, "#prompt")
    def _submitted(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        mode = self._prompt_mode
        self._close_prompt()
        if mode == "/":
            self.filter_text = text
            self.recompute()
        elif mode == "g":
            self._jump_to(text)
        else:
            self.run_command(text)
        self._paint_status()

    def run_command(self, text: str) -> None:
        """A `:` command (gpuq/tui/commands.py)."""
        run_command(self, text)

    # -- the command palette (ctrl+p): views, clusters, themes, actions, refresh

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield from palette_commands(self)

    # -- help and actions

    def action_help(self) -> None:
        from gpuq.tui.screens.help import HelpScreen

        self.push_screen(HelpScreen(self.settings.keys))

    def action_act(self, kind: str) -> None:
        if self.settings.read_only:
            self.notify(f"{kind} is disabled: {self.settings.read_only_reason}", severity="warning")
            return
        self._sync_selection()
        if self.selected is None:
            self.notify(f"select a job to {kind} first (the queue: 1, then the arrows)", severity="warning")
            return
        from gpuq.tui.screens.action import ActionScreen

        cluster = self.clusters[self.selected.index]
        self.push_screen(ActionScreen(kind, cluster, self.selected.job_id), callback=self._acted)

    def _acted(self, result: object) -> None:
        self.action_refresh_now()

    def action_what_if(self) -> None:
        """`w`: the Preview view asks for a what-if request."""
        from gpuq.tui.panes.preview import PreviewPane

        self.action_show_view("preview", lambda: self.query_one(PreviewPane).ask_what_if())


def _plain(text: str) -> Any:
    """A Static's content as text, never markup (cluster names, errors and filters are outside text)."""
    from rich.text import Text

    return Text(text)


def make_app(setup: ConsoleSetup, *, owns_process: bool = False) -> GpuqConsole:
    """The console, with the built-in and user themes loaded: the one factory for `gpuq tui` and
    the tests (`owns_process`: see `GpuqConsole`)."""
    from gpuq.tui.themes import load_themes, why_missing

    themes, warnings = load_themes()
    if setup.settings.theme not in themes:
        broken = why_missing(setup.settings.theme)
        why = f": {broken}" if broken else ""
        raise BadInput(f"no theme {setup.settings.theme!r}{why} (themes: {', '.join(sorted(themes))})")
    app = GpuqConsole(setup.clusters, setup.settings, clock=setup.clock, themes=themes, recorder=setup.recorder,
                      replay=setup.replay, owns_process=owns_process)  # fmt: skip
    for note in setup.replay.notes if setup.replay is not None else ():
        warnings.append(note)
    for warning in warnings:
        app.call_later(app.notify, visible(warning), severity="warning")
    return app

