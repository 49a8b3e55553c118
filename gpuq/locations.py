"""Where gpuq keeps its files: the XDG config, state and cache directories.

`$XDG_CONFIG_HOME/gpuq/config.toml` holds the operator's configuration; `$XDG_STATE_HOME/gpuq/`
holds the audit log and the demo cluster's state; `$XDG_CACHE_HOME/gpuq/` holds what a backend
may re-read at any time (deleting it is always safe). Nothing is created until something is written.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = [
    "audit_log_path",
    "cache_dir",
    "config_dir",
    "config_file",
    "ensure_dir",
    "state_dir",
    "themes_dir",
]

APP = "gpuq"


def _xdg(var: str, fallback: str) -> Path:
    # The XDG spec says relative values are invalid and must be ignored.
    value = os.environ.get(var, "")
    if value and os.path.isabs(value):
        return Path(value)
    return Path.home() / fallback


def config_dir() -> Path:
    """`$XDG_CONFIG_HOME/gpuq` (default `~/.config/gpuq`)."""
    return _xdg("XDG_CONFIG_HOME", ".config") / APP


def state_dir() -> Path:
    """`$XDG_STATE_HOME/gpuq` (default `~/.local/state/gpuq`)."""
    return _xdg("XDG_STATE_HOME", ".local/state") / APP


def cache_dir() -> Path:
    """`$XDG_CACHE_HOME/gpuq` (default `~/.cache/gpuq`)."""
    return _xdg("XDG_CACHE_HOME", ".cache") / APP


def config_file() -> Path:
    """The default configuration file, `config.toml` in `config_dir()`."""
    return config_dir() / "config.toml"


def themes_dir() -> Path:
    """The operator's console themes, `themes/*.toml` in `config_dir()` (gpuq.tui.themes)."""
    return config_dir() / "themes"


def audit_log_path() -> Path:
    """The append-only audit log, `audit.jsonl` in `state_dir()`."""
    return state_dir() / "audit.jsonl"


def ensure_dir(path: Path) -> Path:
    """Create `path` (and parents) private to the operator if missing; return it."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path
