"""`gpuq config path` and `gpuq config show`: which configuration file gpuq reads, and what it
resolves to with every default filled in.

`show -o json` → ``{"path", "exists", "backend", "cluster", "output", "color", "policy",
"console": {"refresh", "theme", "read_only", "keys"}, "backends": {NAME: {...}},
"clusters": {NAME: {"backend", "policy", "options"}}}``; `policy` is where each policy comes from
("defaults", a file, the demo backend's built-in policy). Command-line options other than
`--config` are not applied: this is the file's configuration.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
import msgspec

from gpuq import locations
from gpuq.cli.options import App, global_options, pass_app
from gpuq.cli.output import write_text
from gpuq.cli.render import emit_csv, emit_json, print_table
from gpuq.textsafe import visible
from gpuq.views.columns import CONFIG

if TYPE_CHECKING:
    from gpuq.config import Config

__all__ = ["config"]


def _path(app: App) -> Path:
    given = app.options.config
    return Path(given) if given is not None else locations.config_file()


@click.group("config", context_settings={"help_option_names": ["-h", "--help"]})
@global_options
def config() -> None:
    """Show where the configuration file is and what it resolves to."""


@config.command("path")
@global_options
@pass_app
def path(app: App) -> None:
    """Print the configuration file's path (--config, else $XDG_CONFIG_HOME/gpuq/config.toml)."""
    file = _path(app)
    write_text(visible(str(file)) + "\n")
    if file.is_file():
        click.echo("gpuq: the file exists", err=True)
    elif app.options.config is not None:
        click.echo("gpuq: no such file (commands given this --config fail)", err=True)
    else:
        click.echo("gpuq: no such file: gpuq runs on the defaults", err=True)


def _document(app: App) -> dict[str, Any]:
    from gpuq.service import policy_source

    cfg: Config = app.config
    file = _path(app)
    console = cfg.console
    return {
        "path": str(file),
        "exists": cfg.path is not None,
        "backend": cfg.backend,
        "cluster": cfg.cluster,
        "output": cfg.output,
        "color": cfg.color,
        "policy": policy_source(cfg).source,
        "console": {
            "refresh": console.refresh_s,
            "theme": console.theme,
            "read_only": console.read_only,
            "keys": dict(console.keys),
        },
        "backends": {name: dict(options) for name, options in cfg.backend_options.items()},
        "clusters": {
            name: {
                "backend": entry.backend or cfg.backend,
                "policy": policy_source(cfg, name).source,
                "options": dict(entry.options),
            }
            for name, entry in cfg.clusters.items()
        },
    }


def _text(value: Any) -> str:
    """A value as TOML writes it, near enough for reading (strings bare: the table shows them
    as data)."""
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and value.bit_length() > 128:
        return f"an integer of about {int(value.bit_length() * 0.30103)} digits"
    if isinstance(value, float):
        return f"{value:g}"
    return msgspec.json.encode(value, enc_hook=str).decode()


def _rows(doc: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    """One (dotted key, value) per setting, in the order of the README's example."""
    yield "path", doc["path"] + ("" if doc["exists"] else " (no such file: defaults)")
    for key in ("backend", "cluster", "output", "color", "policy"):
        yield key, doc[key]
    console = doc["console"]
    for key in ("refresh", "theme", "read_only"):
        yield f"console.{key}", console[key]
    for action, keys in console["keys"].items():
        yield f"console.keys.{action}", keys
    for name, options in doc["backends"].items():
        for key, value in options.items():
            yield f"backends.{name}.{key}", value
    for name, entry in doc["clusters"].items():
        yield f"clusters.{name}.backend", entry["backend"]
        yield f"clusters.{name}.policy", entry["policy"]
        for key, value in entry["options"].items():
            yield f"clusters.{name}.{key}", value


@config.command("show")
@global_options
@pass_app
def show(app: App) -> None:
    """Show the configuration with every default filled in (-o json: one document)."""
    doc = _document(app)
    if app.output == "json":
        emit_json(doc)
        return
    rows = list(_rows(doc))
    if app.output == "csv":
        emit_csv(("key", "value"), ((key, None if value is None else _text(value)) for key, value in rows))
        return
    table = [(key, _text(value) + ("s" if key == "console.refresh" else "")) for key, value in rows]
    print_table(app, CONFIG, table, title="configuration, every default filled in")
