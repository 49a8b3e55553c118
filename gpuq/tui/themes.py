"""The console's themes as data: TOML files turned into Textual `Theme`s (posting's themes.py).

Built-in themes are the `themes/*.toml` files at the top of the source tree (a wheel carries them
as `gpuq/tui/builtin_themes/`, copied by setup.py); the operator's own go in
`$XDG_CONFIG_HOME/gpuq/themes/*.toml` and one with a built-in's name replaces it. A file:

```toml
name = "dark"             # what --theme, [console] theme and the palette name it by
dark = true               # a dark background (default true)
[colors]                  # Textual's colours: primary is required, the others optional
primary = "#0178D4"       # secondary accent warning error success foreground background surface panel
[variables]               # gpuq's own colours (THEME_VARIABLES), every one required
gpuq-pending = "#E5C07B"  # used as $gpuq-pending in the console's CSS
```

Every colour is anything `textual.color.Color.parse` reads (`#RRGGBB`, `rgb(…)`, a name); a bad
file is a `BadInput` naming the file, the line and the key. Textual adds a theme's `variables` to
its CSS variables, so `$gpuq-pending` resolves to the running theme's value. An app whose CSS
uses them must know them before its CSS is parsed: `get_theme_variable_defaults()` returning
`themes[DEFAULT_THEME].variables` does that (and covers Textual's own themes chosen in the palette).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from textual.color import Color, ColorParseError
from textual.theme import Theme

import gpuq
from gpuq import locations
from gpuq.config import TomlDocument, load_toml
from gpuq.errors import BadInput

__all__ = [
    "BUILTIN_THEMES",
    "COLOR_KEYS",
    "DEFAULT_THEME",
    "THEME_FALLBACKS",
    "THEME_VARIABLES",
    "builtin_dir",
    "load_theme_file",
    "load_themes",
    "theme_dirs",
    "why_missing",
]

DEFAULT_THEME = "dark"
#: the built-in themes, in the order the palette lists them
BUILTIN_THEMES = ("dark", "light", "high-contrast", "colorblind")

#: gpuq's colour variables (job states, SLA verdicts, GPU states, stale data, eight tenant colours),
#: each with the built-in theme colour it falls back to in a theme without them (Textual's own)
THEME_FALLBACKS: dict[str, str] = {
    "gpuq-pending": "warning", "gpuq-running": "success", "gpuq-suspended": "accent",
    "gpuq-finished": "foreground-muted", "gpuq-sla-ok": "success", "gpuq-sla-risk": "warning",
    "gpuq-sla-breach": "error", "gpuq-gpu-idle": "foreground-muted", "gpuq-gpu-down": "error",
    "gpuq-stale": "warning", "gpuq-tenant-0": "primary", "gpuq-tenant-1": "secondary", "gpuq-tenant-2": "accent",
    "gpuq-tenant-3": "success", "gpuq-tenant-4": "warning", "gpuq-tenant-5": "error",
    "gpuq-tenant-6": "primary-lighten-2", "gpuq-tenant-7": "secondary-lighten-2",
}  # fmt: skip
THEME_VARIABLES: tuple[str, ...] = tuple(THEME_FALLBACKS)
#: Textual's theme colours a file may set under [colors] (`boost` is a translucent overlay, not a colour)
COLOR_KEYS = ("primary", "secondary", "accent", "warning", "error", "success",
              "foreground", "background", "surface", "panel")  # fmt: skip
_TOP_KEYS = ("name", "dark", "colors", "variables")
#: a name the command line and the command palette can take as it is
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def builtin_dir() -> Path:
    """Where the built-in theme files are: the wheel's copy, else the source tree's `themes/`."""
    packaged = Path(__file__).resolve().parent / "builtin_themes"
    if packaged.is_dir():
        return packaged
    return Path(gpuq.__file__).resolve().parent.parent / "themes"


def theme_dirs() -> list[Path]:
    """The folders themes are read from, the operator's first (it wins on a shared name)."""
    return [locations.themes_dir(), builtin_dir()]


def _unknown(doc: TomlDocument, table: dict[str, Any], allowed: tuple[str, ...], prefix: str) -> None:
    for key in table:
        if key not in allowed:
            raise doc.error(prefix + key, f"unknown key (allowed: {', '.join(allowed)})")


def _table(doc: TomlDocument, key: str) -> dict[str, Any]:
    value = doc.data.get(key, {})
    if not isinstance(value, dict):
        raise doc.error(key, f"expected a table [{key}], got {_shown(value)}")
    return value


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:36] + "…"


def _colour(doc: TomlDocument, dotted: str, value: Any) -> str:
    if not isinstance(value, str):
        raise doc.error(dotted, f'expected a colour such as "#1E90FF", got {_shown(value)}')
    try:
        Color.parse(value)
    except ColorParseError:
        raise doc.error(dotted, f'not a colour: {_shown(value)} (use "#RRGGBB", rgb(…) or a colour name)') from None
    return value


def load_theme_file(path: str | Path) -> Theme:
    """One theme file as a Textual `Theme`; `BadInput` names the file, the line and the key."""
    doc = load_toml(path, "theme file")
    _unknown(doc, doc.data, _TOP_KEYS, "")
    name = doc.data.get("name")
    if name is None:
        raise doc.error("name", 'missing: every theme needs a name (name = "my-theme")')
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise doc.error("name", f"expected a name of letters, digits, '-', '_' and '.', got {_shown(name)}")
    dark = doc.data.get("dark", True)
    if not isinstance(dark, bool):
        raise doc.error("dark", f"expected true or false, got {_shown(dark)}")

    colors = _table(doc, "colors")
    _unknown(doc, colors, COLOR_KEYS, "colors.")
    if "primary" not in colors:
        raise doc.error("colors", "missing colors.primary: Textual derives the other colours from it")
    chosen = {key: _colour(doc, f"colors.{key}", value) for key, value in colors.items()}

    variables = _table(doc, "variables")
    _unknown(doc, variables, THEME_VARIABLES, "variables.")
    missing = [v for v in THEME_VARIABLES if v not in variables]
    if missing:
        raise doc.error("variables", f"missing: {', '.join(missing)}")
    values = {key: _colour(doc, f"variables.{key}", value) for key, value in variables.items()}
    get = chosen.get
    return Theme(name=name, primary=chosen["primary"], secondary=get("secondary"), accent=get("accent"),
                 warning=get("warning"), error=get("error"), success=get("success"), foreground=get("foreground"),
                 background=get("background"), surface=get("surface"), panel=get("panel"), dark=dark,
                 variables=values)  # fmt: skip


def _theme_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*.toml") if not p.name.startswith("."))


def why_missing(name: str) -> str | None:
    """Why a theme chosen by `name` is not there, when the user's `name.toml` is and was skipped
    for an error (`load_themes`): that file's own error (file:line: key: problem), to fix it."""
    path = locations.themes_dir() / f"{name}.toml"
    if not path.is_file():
        return None
    try:
        load_theme_file(path)  # (load_toml says an unreadable file as BadInput too)
    except BadInput as exc:
        return str(exc)
    return None


def load_themes() -> tuple[dict[str, Theme], list[str]]:
    """Every theme by name, the built-ins first; and a warning per user theme file skipped.

    A broken built-in is a broken installation (`BadInput`); a broken user file is only skipped,
    so one typo never keeps the console from starting.
    """
    themes: dict[str, Theme] = {}
    for file in _theme_files(builtin_dir()):
        theme = load_theme_file(file)
        themes[theme.name] = theme
    absent = [name for name in BUILTIN_THEMES if name not in themes]
    if absent:
        raise BadInput(f"{builtin_dir()}: built-in themes missing: {', '.join(absent)} (reinstall gpuq)")
    themes = {name: themes[name] for name in (*BUILTIN_THEMES, *sorted(set(themes) - set(BUILTIN_THEMES)))}

    warnings: list[str] = []
    user_dir = locations.themes_dir()
    try:
        files = _theme_files(user_dir) if user_dir.is_dir() else []
    except OSError as exc:
        return themes, [f"{user_dir}: cannot list themes ({exc.strerror}); using the built-in ones"]
    seen: dict[str, Path] = {}
    for file in files:
        try:
            theme = load_theme_file(file)
        except BadInput as exc:
            warnings.append(f"{exc} (theme skipped)")
            continue
        if theme.name in seen:
            warnings.append(f"{file}: name: {theme.name!r} is also the name in {seen[theme.name]}; this file wins")
        seen[theme.name] = file
        themes[theme.name] = theme
    return themes, warnings
