"""What a view lacks because the backend could not read it (`Snapshot.unread`), in the words a
front end shows beside the data: ``nodes: forbidden — GPU totals from pods only (…)``."""

from __future__ import annotations

from typing import Any

from gpuq.model import Snapshot

__all__ = ["unread_document", "unread_notes"]


def unread_notes(snapshot: Snapshot) -> tuple[str, ...]:
    """One sentence per kind of data the snapshot was built without (none: nothing is missing)."""
    return tuple(f"{u.resource}: {u.reason} — {u.effect}" for u in snapshot.unread)


def unread_document(snapshot: Snapshot) -> list[dict[str, Any]]:
    """The same for JSON: ``[{"resource", "reason", "effect", "note"}]`` (empty: nothing missing)."""
    return [{"resource": u.resource, "reason": u.reason, "effect": u.effect, "note": note}
            for u, note in zip(snapshot.unread, unread_notes(snapshot), strict=True)]  # fmt: skip
