"""The refresh schedule (interval, floor, backoff, stale) and the key registry's checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuq.errors import BadInput
from gpuq.tui.keymap import ACTIONS, bindings, check_keys, keys_of
from gpuq.tui.refresh import MAX_BACKOFF_S, MIN_INTERVAL_S, RefreshState


def test_interval_has_a_floor_and_reads_do_not_overlap() -> None:
    state = RefreshState(0.2)
    assert state.interval_s == MIN_INTERVAL_S
    assert state.due(100.0)
    state.start(100.0)
    assert not state.due(500.0)  # still running: never two reads of one cluster at once
    state.succeeded(100.4)
    assert not state.due(100.9) and state.due(101.0)


def test_backoff_doubles_up_to_its_ceiling_and_a_success_resets_it() -> None:
    state = RefreshState(2.0)
    now = 0.0
    waits = []
    for _ in range(8):
        state.start(now)
        state.failed(now + 0.1, "down")
        waits.append(state.wait_s)
        now += state.wait_s
    assert waits == [4.0, 8.0, 16.0, 32.0, MAX_BACKOFF_S, MAX_BACKOFF_S, MAX_BACKOFF_S, MAX_BACKOFF_S]
    assert state.stale and state.failing_since == 0.1 and state.error == "down"
    assert state.retry_in(now - 10) == pytest.approx(10.0)
    state.start(now)
    state.succeeded(now + 1)
    assert not state.stale and state.failures == 0 and state.wait_s == 2.0


def test_every_action_has_a_unique_id_and_no_key_is_bound_twice_in_a_scope() -> None:
    ids = [a.id for a in ACTIONS]
    assert len(ids) == len(set(ids))
    # the replay keys are bound app-wide (they say what they need when not replaying)
    for scopes in (("app", "replay"), ("table",)):
        keys = [k for a in ACTIONS if a.scope in scopes for k in a.keys.split(",")]
        assert len(keys) == len(set(keys)), scopes
    assert {b.id for b in bindings("table")} == {a.id for a in ACTIONS if a.scope == "table"}


def test_config_rebinds_are_checked() -> None:
    assert check_keys({"bump": "B", "queue": "1, f1"}) == {"bump": "B", "queue": "1,f1"}
    assert keys_of("queue", {"queue": "1,f1"}) == "1,f1" and keys_of("sla") == "3"
    with pytest.raises(BadInput, match=r"^config.toml:4: console.keys.bumpp: unknown action \(one of .*bump"):
        check_keys({"bumpp": "B"}, {"bumpp": "config.toml:4"}.__getitem__)
    with pytest.raises(BadInput, match=r"console.keys.bump: 'ctrl r' is not a key name"):
        check_keys({"bump": "ctrl r"})
    with pytest.raises(BadInput, match="is not a key name"):
        check_keys({"bump": ""})


def test_the_readme_lists_every_action_with_its_default_keys() -> None:
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    rows = {}
    for line in readme.splitlines():
        cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[1] in {a.id for a in ACTIONS}:
            rows[cells[1]] = cells[0]
    assert list(rows) == [a.id for a in ACTIONS]
    names = {"question_mark": "?", "colon": ":", "slash": "/", "escape": "esc", "right_square_bracket": "]",
             "left_square_bracket": "[", "full_stop": ".", "comma": ",", "greater_than_sign": ">",
             "less_than_sign": "<", "plus": "+", "minus": "-"}  # fmt: skip
    for action in ACTIONS:
        assert rows[action.id] == ",".join(names.get(k, k) for k in action.keys.split(",")), action.id


def test_thousands_of_key_entries_ask_the_line_of_the_bad_one_only(tmp_path: Path) -> None:
    """Finding a key's line scans the config: asked for each of 10,000 entries it took minutes
    before the first error. The console asks it of the entry in error alone."""
    from gpuq import config as config_module
    from gpuq.config import load_config
    from gpuq.tui.options import console_setup

    path = tmp_path / "config.toml"
    path.write_text("[console.keys]\n" + "".join(f'k{i} = "b"\n' for i in range(10_000)))
    loaded = load_config(path)
    asked: list[str] = []
    real = config_module.find_key_line

    def counting(text: str, dotted: str) -> int | None:
        asked.append(dotted)
        return real(text, dotted)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(config_module, "find_key_line", counting)
        with pytest.raises(BadInput, match=rf"^{path}:2: console\.keys\.k0: unknown action"):
            console_setup(loaded)
    assert asked == ["console.keys.k0"]
