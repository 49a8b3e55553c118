"""The console's status line and its stale-data banner, as text (what `GpuqConsole._paint_status`
shows): which clusters, the view, the cluster's time, the modes, the filter and the pane's own
status; which reads are failing since when; and what the data shown was built without."""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

from gpuq.textsafe import visible
from gpuq.timefmt import format_duration, format_time
from gpuq.views.unread import unread_notes

if TYPE_CHECKING:
    from gpuq.tui.app import GpuqConsole

__all__ = ["hidden_columns", "stale_banner", "status_line", "unread_banner"]


def hidden_columns(hidden: Collection[str]) -> str:
    """A pane's status about the columns its table(s) left out for want of width ("" if none)."""
    if not hidden:
        return ""
    return f" · {len(hidden)} column{'s' if len(hidden) != 1 else ''} hidden: a wider terminal shows them"


def status_line(console: GpuqConsole) -> str:
    names = []
    for i, cluster in enumerate(console.clusters):
        name = visible(cluster.label)
        names.append(f"[{name}]" if i == console.scope else name)
    if len(console.clusters) > 1:
        names.append("[all]" if console.scope == -1 else "all")
    snapshots = console.snapshots
    snap = snapshots[console.scope] if console.scope >= 0 else next((s for s in snapshots if s), None)
    at = f" · cluster time {format_time(float(int(snap.now)))}" if snap is not None else ""
    mode = " · READ-ONLY" if console.settings.read_only and console.replay is None else ""
    recorder = console.recorder
    if recorder is not None:
        mode += f" · REC {recorder.bytes_written / 1e6:.1f} MB" if recorder.stopped is None else " · REC stopped"
    pane = console.pane
    status = pane.status() if console.shows_data() else ""
    line = f"gpuq · {' '.join(names)} · {pane.title}{at}{mode}"
    if console.filter_text:
        line += f" · filter /{visible(console.filter_text)}"
    if status:
        line += f" · {status}"
    return line


def stale_banner(console: GpuqConsole, now: float) -> str | None:
    """What the banner says of the clusters in scope whose reads fail; None when none does."""
    parts = []
    for i, state in enumerate(console.refreshes):
        if not state.stale or console.scope not in (-1, i):
            continue
        assert state.failing_since is not None
        since = format_time(float(int(state.failing_since)))
        what = "no data yet" if console.snapshots[i] is None else f"stale since {since}"
        parts.append(f"{visible(console.clusters[i].label)}: {what}: {visible(state.error or '')} "
                     f"(retrying in {format_duration(state.retry_in(now))})")  # fmt: skip
    return " · ".join(parts) or None


def unread_banner(console: GpuqConsole) -> str | None:
    """What the clusters in scope were read without (`Snapshot.unread`), in the sentence the CLI's
    `note:` lines say (`gpuq.views.unread`): every view's figures stand on it, so one line above
    them all. None when nothing is missing."""
    parts: list[str] = []
    for i, snapshot in enumerate(console.snapshots):
        if snapshot is None or console.scope not in (-1, i):
            continue
        label = f"{visible(console.clusters[i].label)}: " if len(console.clusters) > 1 else ""
        parts.extend(f"{label}{visible(note)}" for note in unread_notes(snapshot))
    return "note: " + " · ".join(parts) if parts else None
