"""What every view of the console is: a `Pane` that computes off the UI thread and then shows.

A refresh, a filter or a sort never computes on the UI thread: the app asks the visible pane
for its parameters (`params`, on the UI thread: cheap), runs `compute` in a worker thread over
the last snapshots (pure: the service and the views, never a widget), and hands the result to
`show` on the UI thread. A result computed for older parameters is dropped (`token`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from textual.widget import Widget

from gpuq.model import Snapshot
from gpuq.service import Cluster
from gpuq.views.pacing import no_pause

__all__ = ["ClusterItem", "Pane", "PaneContext", "Selection"]


@dataclass(frozen=True, slots=True)
class ClusterItem:
    """One cluster the pane shows: its index among the console's clusters, handle and snapshot."""

    index: int
    cluster: Cluster
    snapshot: Snapshot


@dataclass(frozen=True, slots=True)
class Selection:
    """The job the operator has selected: on which cluster (index) and which id."""

    index: int
    job_id: str


@dataclass(frozen=True, slots=True)
class PaneContext:
    """What a pane computes from: the clusters in scope (one, or all in the combined view) with
    their last good snapshots, the selected job and the `/` filter."""

    items: tuple[ClusterItem, ...]
    selection: Selection | None
    filter: str
    #: every configured cluster is shown (the combined view)
    combined: bool
    #: called by `compute` between bounded steps: sleeps a moment after a key or click, so the
    #: UI thread answers it at once (gpuq/tui/gate.py)
    pause: Callable[[], None] = no_pause
    #: where given (the pane has shown nothing yet), `compute` may hand it a provisional model
    #: ahead of the finished one: the first screen of a large queue before all of it is sorted
    early: Callable[[Any], None] | None = None

    def item(self, index: int) -> ClusterItem | None:
        return next((i for i in self.items if i.index == index), None)

    @property
    def snapshots(self) -> Sequence[Snapshot]:
        return [i.snapshot for i in self.items]


class Pane(Widget):
    """A view of the console (see the module docstring)."""

    #: the name in `:name`, the view keys and the palette
    view_id: ClassVar[str] = ""
    title: ClassVar[str] = ""
    #: shows one job (job detail, preview): needs a selection
    needs_selection: ClassVar[bool] = False

    DEFAULT_CSS = """
    Pane { height: 1fr; }
    """

    def params(self) -> Any:
        """The pane's own parameters for the next compute (UI thread)."""
        return None

    def compute(self, ctx: PaneContext, params: Any) -> Any:
        """The view model to show (worker thread: no widget access)."""
        raise NotImplementedError

    def show(self, model: Any) -> None:
        """Render the model (UI thread)."""
        raise NotImplementedError

    def selection(self) -> Selection | None:
        """The job under this pane's cursor, if it lists jobs."""
        return None

    def status(self) -> str:
        """A line for the status bar (what is shown, what is hidden)."""
        return ""
