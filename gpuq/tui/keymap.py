"""The console's named actions and their default keys: key bindings as data (harlequin's keymaps).

Every binding the console has is one `KeyAction` here: an id (what `[console.keys]` in the config
names), the default keys, what it does, and where it applies. The app, its panes and `?` (help)
all read this table; the config rebinds an action by id (`bump = "B"`, `queue = "1,f1"`), and an
unknown id or a key Textual cannot name is a usage error naming the config line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from textual.binding import Binding

from gpuq.errors import BadInput

__all__ = ["ACTIONS", "KeyAction", "bindings", "check_keys", "keys_of"]


@dataclass(frozen=True, slots=True)
class KeyAction:
    id: str
    #: comma-separated Textual key names (`1`, `ctrl+r`, `question_mark`, `escape`)
    keys: str
    #: the Textual action string it runs (`app.show_view('queue')`, `bump`)
    action: str
    description: str
    #: "app" (anywhere), "table" (a table has the focus), "replay" (replaying a recording),
    #: "lab" (the policy lab is shown)
    scope: str = "app"
    #: shown in the footer
    show: bool = False


_A = KeyAction
ACTIONS: tuple[KeyAction, ...] = (
    _A("queue", "1", "show_view('queue')", "Queue view", show=True),
    _A("gpus", "2", "show_view('gpus')", "GPUs view", show=True),
    _A("sla", "3", "show_view('sla')", "SLA view", show=True),
    _A("preemptions", "4", "show_view('preemptions')", "Preemptions view", show=True),
    _A("job", "5", "show_view('job')", "Job detail of the selected job"),
    _A("preview", "6", "show_view('preview')", "Preview: what the selected job would preempt"),
    _A("what_if", "w", "what_if", "What-if preview: what a request (GPUs, priority, class) would preempt"),
    _A("audit", "7", "show_view('audit')", "Audit log view"),
    _A("lab", "8", "show_view('lab')", "Policy lab: the preemption strategies side by side (:lab TRACE)"),
    _A("help", "question_mark", "help", "List every key", show=True),
    _A("command", "colon", "command", "Command line (:queue, :gpus, :theme dark, :cluster NAME, :q)"),
    _A("filter", "slash", "filter", "Filter the rows shown", show=True),
    _A("back", "escape", "go_back", "Back to the previous view (or clear the filter)"),
    _A("palette", "ctrl+p", "command_palette", "Command palette"),
    _A("refresh", "ctrl+r", "refresh_now", "Refresh now"),
    _A("next_cluster", "right_square_bracket", "next_cluster", "Next cluster (or all clusters)"),
    _A("previous_cluster", "left_square_bracket", "previous_cluster", "Previous cluster"),
    _A("quit", "q", "quit", "Quit", show=True),
    _A("open", "enter", "open_selected", "Open the selected job's detail", scope="table"),
    _A("select", "space", "toggle_selection", "Select or unselect the row", scope="table"),
    _A("sort", "s", "sort_next", "Sort by the next column", scope="table"),
    _A("sort_reverse", "S", "sort_reverse", "Reverse the sort", scope="table"),
    _A("group", "o", "toggle_group", "Queue: the pods of one Job/JobSet/PyTorchJob under one line (or not)",
       scope="queue"),
    _A("bump", "b", "act('bump')", "Bump the selected job's priority", show=True),
    _A("exempt", "e", "act('exempt')", "Exempt the selected job from preemption"),
    _A("preempt", "x", "act('preempt')", "Preempt the selected job"),
    _A("resume", "r", "act('resume')", "Resume the selected (suspended) job"),
    _A("replay_play", "p", "replay_play", "Replay: play or pause", scope="replay"),
    _A("replay_forward", "full_stop", "replay_step(1)", "Replay: one frame forward", scope="replay"),
    _A("replay_back", "comma", "replay_step(-1)", "Replay: one frame back", scope="replay"),
    _A("replay_forward_far", "greater_than_sign", "replay_step(30)", "Replay: 30 frames forward", scope="replay"),
    _A("replay_back_far", "less_than_sign", "replay_step(-30)", "Replay: 30 frames back", scope="replay"),
    _A("replay_faster", "plus", "replay_speed(2.0)", "Replay: play twice as fast", scope="replay"),
    _A("replay_slower", "minus", "replay_speed(0.5)", "Replay: play half as fast", scope="replay"),
    _A("replay_jump", "g", "replay_jump", "Replay: jump to a time", scope="replay"),
    _A("lab_delta_down", "d", "lab_step('delta', -1)", "Lab: lower Δ", scope="lab"),
    _A("lab_delta_up", "D", "lab_step('delta', 1)", "Lab: raise Δ", scope="lab"),
    _A("lab_grace_down", "a", "lab_step('grace', -1)", "Lab: shorter grace period", scope="lab"),
    _A("lab_grace_up", "A", "lab_step('grace', 1)", "Lab: longer grace period", scope="lab"),
    _A("lab_checkpoint_down", "c", "lab_step('checkpoint', -1)", "Lab: checkpoint more often", scope="lab"),
    _A("lab_checkpoint_up", "C", "lab_step('checkpoint', 1)", "Lab: checkpoint less often", scope="lab"),
    _A("lab_sla_down", "l", "lab_step('sla', -1)", "Lab: tighter SLA limit (every class's target and max wait)",
       scope="lab"),
    _A("lab_sla_up", "L", "lab_step('sla', 1)", "Lab: looser SLA limit", scope="lab"),
    _A("lab_next_job", "n", "lab_job(1)", "Lab: the timeline's next job (most preempted first)", scope="lab"),
    _A("lab_previous_job", "N", "lab_job(-1)", "Lab: the timeline's previous job", scope="lab"),
)  # fmt: skip

_BY_ID = {a.id: a for a in ACTIONS}
#: a Textual key name: a printable character, or words joined by `_`, with `+` modifiers
_KEY = re.compile(r"^(?:(?:ctrl|shift|alt|meta|super|hyper)\+)*(?:[a-z][a-z0-9_]*|[^\s,+])$")


def check_keys(overrides: Mapping[str, str], where: Callable[[str], str] | None = None) -> dict[str, str]:
    """The config's `[console.keys]`, checked: each id names an action and each key is one
    Textual can name. ``where``: id -> `file:line` to name in an error, asked only for the entry
    in error (finding a key's line scans the file: asked of every entry, thousands of them took
    minutes). Returns id -> keys."""
    checked: dict[str, str] = {}
    for action_id, spec in overrides.items():
        if action_id not in _BY_ID:
            known = ", ".join(sorted(_BY_ID))
            raise BadInput(f"{_at(where, action_id)}console.keys.{action_id}: unknown action (one of {known})")
        keys = [k.strip() for k in spec.split(",")]
        bad = [k for k in keys if not _KEY.match(k)]
        if not keys or bad:
            raise BadInput(
                f"{_at(where, action_id)}console.keys.{action_id}: {', '.join(map(repr, bad)) or repr(spec)} "
                "is not a key name "
                "(a character such as B, or a name such as f5, ctrl+r, escape, question_mark)"
            )
        checked[action_id] = ",".join(keys)
    return checked


def _at(where: Callable[[str], str] | None, action_id: str) -> str:
    return f"{where(action_id)}: " if where is not None else ""


def keys_of(action_id: str, overrides: Mapping[str, str] | None = None) -> str:
    """The keys an action is bound to, after the config's overrides."""
    return (overrides or {}).get(action_id) or _BY_ID[action_id].keys


def bindings(scope: str, ids: Iterable[str] | None = None) -> list[Binding]:
    """Textual bindings (with ids, so `App.set_keymap` rebinds them) for one scope."""
    wanted = None if ids is None else set(ids)
    return [
        Binding(a.keys, a.action, a.description, show=a.show, id=a.id)
        for a in ACTIONS
        if a.scope == scope and (wanted is None or a.id in wanted)
    ]
