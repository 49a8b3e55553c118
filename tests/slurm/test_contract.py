"""The Slurm backend on the backend contract: what it can do and what it takes, as data, and the
registry's checks of the options an operator sets (config file or command line)."""

from __future__ import annotations

import inspect

import pytest

from gpuq.backends.base import ACTIONS, OptionSpec
from gpuq.backends.registry import BackendOption, backend_class, create_backend
from gpuq.backends.slurm import SlurmBackend
from gpuq.errors import BadInput
from tests.slurm.samples import captured_clock


def test_capabilities_are_data() -> None:
    caps = SlurmBackend(persist=False).capabilities
    assert caps.actions == frozenset(ACTIONS) == {"bump", "exempt", "preempt", "resume"}
    # Priority=0 is a hold; scontrol refuses 4294967294 (NO_VAL) and up.
    assert caps.priority_range == (1, 4294967293)
    assert caps.native_preview is True
    assert caps.read_only_reason == ""
    # The flags of the old contract are gone.
    for old in ("can_bump", "can_exempt", "can_preempt", "knows_gpu_indexes", "has_history", "has_native_preview"):
        assert not hasattr(SlurmBackend, old), old
    for old in ("bump", "exempt", "preempt"):
        assert not hasattr(SlurmBackend, old), old


def test_every_constructor_setting_is_an_option_and_the_clock_an_internal() -> None:
    assert backend_class("slurm") is SlurmBackend
    params = set(inspect.signature(SlurmBackend).parameters)
    assert set(SlurmBackend.options) == params - {"clock"}
    assert SlurmBackend.internals == frozenset({"clock"})
    for key, spec in SlurmBackend.options.items():
        assert isinstance(spec, OptionSpec) and spec.help, key
    kinds = {key: spec.kind for key, spec in SlurmBackend.options.items()}
    assert kinds["timeout_s"] is float and kinds["detail_one_by_one_max"] is int and kinds["persist"] is bool
    assert kinds["cache_dir"] is str and kinds["cluster"] is str


def test_an_option_of_the_wrong_type_names_where_it_was_set() -> None:
    origin = "config.toml:3: backends.slurm.timeout_s"
    with pytest.raises(BadInput, match=r"^config\.toml:3: backends\.slurm\.timeout_s: expected a number, got 'soon'$"):
        create_backend("slurm", {"timeout_s": BackendOption("soon", origin)})
    with pytest.raises(BadInput, match=r"config\.toml:5: backends\.slurm\.persist: expected true or false, got 1"):
        create_backend("slurm", {"persist": BackendOption(1, "config.toml:5: backends.slurm.persist")})
    with pytest.raises(BadInput, match=r"--detail-max: expected a whole number, got 2\.5"):
        create_backend("slurm", {"detail_one_by_one_max": BackendOption(2.5, "--detail-max")})


@pytest.mark.parametrize(
    ("key", "value", "text"),
    [
        ("timeout_s", 0, r"must be > 0"),
        ("history_s", -1.0, r"must be >= 0"),
        ("detail_one_by_one_max", -1, r"must be >= 0"),
        ("config_max_age_s", float("nan"), r"expected a finite number"),
    ],
)
def test_an_option_out_of_range_names_where_it_was_set(key: str, value: object, text: str) -> None:
    origin = f"config.toml:9: clusters.prod.{key}"
    with pytest.raises(BadInput, match=rf"^config\.toml:9: clusters\.prod\.{key}: {text}"):
        create_backend("slurm", {key: BackendOption(value, origin)})


def test_the_clock_is_not_an_option_nor_is_an_unknown_key() -> None:
    origin = "config.toml:4: backends.slurm.clock"
    with pytest.raises(BadInput, match=r"^config\.toml:4: backends\.slurm\.clock: .* does not take 'clock'"):
        create_backend("slurm", {"clock": BackendOption(captured_clock, origin)})
    with pytest.raises(BadInput, match=r"--urgent: backend 'slurm' does not take 'urgent' \(it takes: cache_dir, "):
        create_backend("slurm", {"urgent": BackendOption("urgent", "--urgent")})


def test_options_and_internals_reach_the_backend() -> None:
    backend = create_backend(
        "slurm",
        {
            "timeout_s": BackendOption(5, "config.toml:3: backends.slurm.timeout_s"),  # a whole number is a number
            "persist": BackendOption(False, "config.toml:4: backends.slurm.persist"),
            "urgent_qos": BackendOption("urgent", "config.toml:5: backends.slurm.urgent_qos"),
            "cache_dir": BackendOption("/nonexistent/gpuq", "config.toml:6: backends.slurm.cache_dir"),
        },
        # The service passes what it has; the backend gets only what it lists as internals.
        {"clock": captured_clock, "policy": object(), "state_dir": "/nonexistent"},
    )
    assert isinstance(backend, SlurmBackend)
    assert backend.runner.timeout_s == 5.0 and isinstance(backend.runner.timeout_s, float)
    assert backend.disk.cache is None  # persist = false
    assert backend.urgent_qos == "urgent"
    assert backend.clock is captured_clock
