"""`gpuq snapshot`: write the cluster's state as `gpuq.snapshot/v1` JSON to stdout."""

from __future__ import annotations

import click

from gpuq.cli.options import App, global_options, pass_app
from gpuq.cli.render import write_bytes
from gpuq.textsafe import json_safe

__all__ = ["snapshot"]


@click.command("snapshot")
@global_options
@pass_app
def snapshot(app: App) -> None:
    """Write the cluster's state as gpuq.snapshot/v1 JSON (any -o is ignored: always JSON)."""
    import io

    from gpuq.model.codec import write_snapshot

    buffer = io.BytesIO()
    write_snapshot(app.snapshot(), buffer)
    write_bytes(json_safe(buffer.getvalue()))  # (hidden characters as \u escapes: the same document)
