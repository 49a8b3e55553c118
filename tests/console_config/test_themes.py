"""Console themes as data: the built-in files, the operator's own, and every error in a file."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from textual.app import App, ComposeResult
from textual.color import Color
from textual.theme import Theme
from textual.widgets import Static

from gpuq.errors import BadInput
from gpuq.tui import themes
from gpuq.tui.themes import BUILTIN_THEMES, THEME_VARIABLES, builtin_dir, load_theme_file, load_themes, theme_dirs

ROOT = Path(__file__).resolve().parents[2]
OKABE_ITO = {"#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7", "#000000"}


def _variables(**changes: str | None) -> str:
    values = {name: '"#123456"' for name in THEME_VARIABLES}
    for key, value in changes.items():
        name = key.replace("_", "-")
        if value is None:
            values.pop(name)
        else:
            values[name] = value
    return "".join(f"{k} = {v}\n" for k, v in values.items())


def _theme_text(name: str = "mine", primary: str = '"#FF0000"', **variables: str | None) -> str:
    return (f'name = "{name}"\ndark = true\n\n[colors]\nprimary = {primary}\n\n[variables]\n'
            + _variables(**{k: (None if v is None else f'"{v}"') for k, v in variables.items()}))  # fmt: skip


def _user_theme(xdg: dict[str, Path], file: str, text: str) -> Path:
    path = xdg["config"] / "gpuq" / "themes" / file
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_variable_names() -> None:
    assert len(THEME_VARIABLES) == len(set(THEME_VARIABLES)) == 18
    assert {"gpuq-pending", "gpuq-sla-breach", "gpuq-gpu-down", "gpuq-stale", "gpuq-tenant-0", "gpuq-tenant-7"} <= set(
        THEME_VARIABLES
    )


@pytest.mark.parametrize("name", BUILTIN_THEMES)
def test_every_builtin_loads_and_defines_every_variable(name: str) -> None:
    file = ROOT / "themes" / f"{name}.toml"
    theme = load_theme_file(file)
    assert theme.name == name == file.stem
    assert set(theme.variables) == set(THEME_VARIABLES)
    for value in (*theme.variables.values(), theme.primary, theme.background, theme.foreground):
        assert value is not None
        Color.parse(value)
    assert theme.background is not None and theme.foreground is not None  # every built-in sets both
    theme.to_color_system().generate()  # Textual can derive its colours from it


def test_light_is_light_and_the_others_dark() -> None:
    loaded, warnings = load_themes()
    assert warnings == []
    assert list(loaded) == list(BUILTIN_THEMES)
    assert [loaded[n].dark for n in BUILTIN_THEMES] == [True, False, True, True]


def test_colorblind_theme_uses_the_okabe_ito_palette() -> None:
    theme = load_theme_file(ROOT / "themes" / "colorblind.toml")
    allowed = OKABE_ITO | {"#FFFFFF", "#999999"}  # on a dark background black turns white, grey for what is done
    assert {v.upper() for v in theme.variables.values()} <= allowed
    assert theme.variables["gpuq-sla-ok"] != theme.variables["gpuq-sla-breach"]
    assert len({theme.variables[f"gpuq-tenant-{n}"] for n in range(8)}) == 8


def test_states_and_verdicts_differ_in_every_builtin() -> None:
    for theme in load_themes()[0].values():
        v = theme.variables
        states = [v["gpuq-pending"], v["gpuq-running"], v["gpuq-suspended"], v["gpuq-finished"]]
        assert len(set(states)) == 4, theme.name
        assert len({v["gpuq-sla-ok"], v["gpuq-sla-risk"], v["gpuq-sla-breach"]}) == 3, theme.name
        assert len({v[f"gpuq-tenant-{n}"] for n in range(8)}) == 8, theme.name


def test_theme_dirs_user_first_then_the_source_tree(xdg: dict[str, Path]) -> None:
    assert theme_dirs() == [xdg["config"] / "gpuq" / "themes", ROOT / "themes"]
    assert builtin_dir() == ROOT / "themes"  # no packaged copy in a source tree


def test_a_user_theme_overrides_a_builtin_and_adds_its_own(xdg: dict[str, Path]) -> None:
    _user_theme(xdg, "my-dark.toml", _theme_text("dark", gpuq_pending="#ABCDEF"))
    _user_theme(xdg, "solar.toml", _theme_text("solar"))
    loaded, warnings = load_themes()
    assert warnings == []
    assert list(loaded) == [*BUILTIN_THEMES, "solar"]
    assert loaded["dark"].variables["gpuq-pending"] == "#ABCDEF"
    assert loaded["dark"].primary == "#FF0000"
    assert loaded["light"].variables["gpuq-pending"] == "#9A6700"  # the others untouched


def test_a_broken_user_theme_is_skipped_with_a_warning(xdg: dict[str, Path]) -> None:
    bad = _user_theme(xdg, "bad.toml", _theme_text("light", primary='"not-a-colour"'))
    _user_theme(xdg, "good.toml", _theme_text("good"))
    _user_theme(xdg, "syntax.toml", "name = \n")
    loaded, warnings = load_themes()
    assert "good" in loaded
    assert loaded["light"].primary == "#005FB8"  # the broken override did not replace the built-in
    assert len(warnings) == 2
    assert warnings[0].startswith(f"{bad}:5: colors.primary: not a colour: 'not-a-colour'")
    assert warnings[0].endswith("(theme skipped)")
    assert "syntax.toml:1:" in warnings[1] and "invalid TOML" in warnings[1]


def test_two_user_files_of_one_name_warn(xdg: dict[str, Path]) -> None:
    _user_theme(xdg, "a.toml", _theme_text("twin", gpuq_stale="#111111"))
    _user_theme(xdg, "b.toml", _theme_text("twin", gpuq_stale="#222222"))
    loaded, warnings = load_themes()
    assert loaded["twin"].variables["gpuq-stale"] == "#222222"  # files are read in name order
    assert len(warnings) == 1 and "'twin' is also the name in" in warnings[0]


def test_a_user_themes_folder_that_is_a_file_is_ignored(xdg: dict[str, Path]) -> None:
    folder = xdg["config"] / "gpuq" / "themes"
    folder.parent.mkdir(parents=True)
    folder.write_text("")
    assert list(load_themes()[0]) == list(BUILTIN_THEMES)


def test_missing_builtins_are_an_installation_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "dark.toml").write_text((ROOT / "themes" / "dark.toml").read_text())
    monkeypatch.setattr(themes, "builtin_dir", lambda: tmp_path)
    with pytest.raises(BadInput, match="built-in themes missing: light, high-contrast, colorblind"):
        load_themes()


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (_theme_text().replace('name = "mine"\n', ""), ": name: missing: every theme needs a name"),
        (_theme_text("has space"), ":1: name: expected a name of letters"),
        ('name = 3\n[colors]\nprimary = "#FFFFFF"\n', ":1: name: expected a name"),
        (_theme_text().replace("dark = true", 'dark = "yes"'), ":2: dark: expected true or false, got 'yes'"),
        (_theme_text().replace('primary = "#FF0000"', 'secondary = "#FF0000"'),
         ":4: colors: missing colors.primary"),
        (_theme_text(primary='"#12345G"'), ":5: colors.primary: not a colour: '#12345G'"),
        (_theme_text(primary="12"), ":5: colors.primary: expected a colour such as \"#1E90FF\", got 12"),
        (_theme_text().replace("[colors]\n", "[colors]\nboost = \"#FFFFFF\"\n"), ":5: colors.boost: unknown key"),
        (_theme_text(gpuq_running="bleu"), ":9: variables.gpuq-running: not a colour: 'bleu'"),
        (_theme_text(gpuq_pending=None, gpuq_tenant_7=None),
         ":7: variables: missing: gpuq-pending, gpuq-tenant-7"),
        (_theme_text() + 'gpuq-pendng = "#FFFFFF"\n', ":26: variables.gpuq-pendng: unknown key (allowed: gpuq-pending"),
        ('author = "me"\n' + _theme_text(), ":1: author: unknown key (allowed: name, dark, colors, variables)"),
        ('name = "x"\ncolors = "red"\n', ":2: colors: expected a table [colors], got 'red'"),
        ('name = "x"\n[colors\n', ":2: invalid TOML: Expected ']'"),
    ],
    ids=lambda value: value if value.startswith(":") else "",
)  # fmt: skip
def test_bad_theme_files_name_file_line_and_key(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "t.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(BadInput) as caught:
        load_theme_file(path)
    assert str(caught.value).startswith(f"{path}{problem}")


def test_colours_textual_reads_are_accepted(tmp_path: Path) -> None:
    path = tmp_path / "t.toml"
    path.write_text(_theme_text(primary='"rgb(10, 20, 30)"', gpuq_stale="orange", gpuq_gpu_idle="#abc"))
    theme = load_theme_file(path)
    assert theme.primary == "rgb(10, 20, 30)"
    assert Color.parse(theme.variables["gpuq-stale"]) == Color.parse("orange")
    assert theme.secondary is None  # optional colours Textual derives itself


# -- the variables reach the console's CSS


class _Themed(App[None]):
    CSS = "#pending { color: $gpuq-pending; } #breach { background: $gpuq-sla-breach; }"

    def __init__(self, loaded: dict[str, Theme], theme: str, *, fallback: bool = False) -> None:
        self._loaded, self._fallback = loaded, fallback
        super().__init__()
        for item in loaded.values():
            self.register_theme(item)
        self.theme = theme

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return dict(self._loaded["dark"].variables) if self._fallback else {}

    def compose(self) -> ComposeResult:
        yield Static("P", id="pending")
        yield Static("B", id="breach")


def _colours(app: _Themed, steps: list[str]) -> list[tuple[Color, Color]]:
    seen: list[tuple[Color, Color]] = []

    async def run() -> None:
        async with app.run_test() as pilot:
            for step in steps:
                app.theme = step
                await pilot.pause()
                seen.append((app.query_one("#pending").styles.color, app.query_one("#breach").styles.background))

    asyncio.run(run())
    return seen


def test_theme_variables_are_css_variables_and_follow_a_theme_switch() -> None:
    loaded, _ = load_themes()
    seen = _colours(_Themed(loaded, "light"), ["light", "colorblind", "high-contrast", "dark"])
    expected = [(Color.parse(loaded[n].variables["gpuq-pending"]), Color.parse(loaded[n].variables["gpuq-sla-breach"]))
                for n in ("light", "colorblind", "high-contrast", "dark")]  # fmt: skip
    assert seen == expected
    assert len({pending for pending, _ in seen}) == 4


def test_a_textual_theme_falls_back_to_the_default_themes_variables() -> None:
    """Textual's own themes (its palette offers them) have no gpuq colours: the defaults apply."""
    loaded, _ = load_themes()
    seen = _colours(_Themed(loaded, "colorblind", fallback=True), ["textual-light"])
    assert seen == [(Color.parse(loaded["dark"].variables["gpuq-pending"]),
                     Color.parse(loaded["dark"].variables["gpuq-sla-breach"]))]  # fmt: skip


# -- packaging


def test_a_build_carries_the_themes_into_the_package(tmp_path: Path) -> None:
    """setup.py's build_py copies themes/*.toml to gpuq/tui/builtin_themes/, where an installed
    gpuq (no source tree next to it) finds them."""
    build = tmp_path / "lib"
    env = {**os.environ, "GPUQ_PURE_PYTHON": "1"}
    subprocess.run([sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(build)],  # noqa: S603
                   cwd=ROOT, env=env, check=True, capture_output=True)  # fmt: skip
    packaged = build / "gpuq" / "tui" / "builtin_themes"
    assert sorted(p.name for p in packaged.glob("*.toml")) == sorted(f"{n}.toml" for n in BUILTIN_THEMES)
    probe = "import gpuq.tui.themes as t; print(t.builtin_dir()); print(*t.load_themes()[0])"
    out = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, check=True, capture_output=True, text=True,  # noqa: S603
                         env={**env, "PYTHONPATH": str(build), "XDG_CONFIG_HOME": str(tmp_path)})  # fmt: skip
    where, names = out.stdout.splitlines()
    assert where == str(packaged)
    assert names.split() == list(BUILTIN_THEMES)
