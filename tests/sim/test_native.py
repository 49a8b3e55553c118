"""The compiled modules (setup.py, mypyc: the simulator and the victim search it shares with the
engine) are used only while they match their sources, all of them or none, and they behave
exactly as the sources do."""

from __future__ import annotations

import hashlib
import importlib.machinery
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gpuq import _native

SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]
#: every compiled module as (package, name)
MODULES = [(package, name) for package, names in _native.NATIVE_MODULES.items() for name in names]


def _fake_build(root: Path, *, record: bool = True, compiled: list[tuple[str, str]] = MODULES) -> None:
    """A package folder as setup.py leaves it: sources, (stand-in) extension files, the record."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "__init__.py").write_text("")
    for package, names in _native.NATIVE_MODULES.items():
        (root / package).mkdir(exist_ok=True)
        (root / package / "__init__.py").write_text("")
        for i, name in enumerate(names):
            (root / package / f"{name}.py").write_text(f"ORIGIN = 'source'\nORDER = {i}\n")
    for package, name in compiled:
        (root / package / f"{name}{SUFFIX}").write_bytes(b"not really machine code")
    if record:
        digests = {f"{p}/{n}": hashlib.sha256((root / p / f"{n}.py").read_bytes()).hexdigest() for p, n in MODULES}
        (root / _native.RECORD).write_text(json.dumps(digests))


def test_nothing_compiled_means_nothing_to_choose(tmp_path: Path) -> None:
    _fake_build(tmp_path, compiled=[], record=False)
    assert _native.compiled_is_current(tmp_path) is None


def test_a_build_matching_its_sources_is_current(tmp_path: Path) -> None:
    _fake_build(tmp_path)
    assert _native.compiled_is_current(tmp_path) is True


@pytest.mark.parametrize(
    "spoil",
    [
        pytest.param(lambda d: (d / "sim" / "queue.py").write_text("ORIGIN = 'edited'\n"), id="source edited since"),
        pytest.param(lambda d: (d / "policy" / "cover.py").write_text("ORIGIN = 'edited'\n"),
                     id="the shared search edited since"),
        pytest.param(lambda d: (d / _native.RECORD).unlink(), id="no record"),
        pytest.param(lambda d: (d / _native.RECORD).write_text("{not json"), id="record unreadable"),
        pytest.param(lambda d: (d / _native.RECORD).write_text("[]"), id="record not a mapping"),
        pytest.param(lambda d: (d / "sim" / f"simulator{SUFFIX}").unlink(), id="one module not compiled"),
        pytest.param(lambda d: (d / "sim" / "jobs.py").unlink(), id="source missing"),
    ],
)
def test_a_build_that_does_not_match_is_not_current(tmp_path: Path, spoil) -> None:  # type: ignore[no-untyped-def]
    _fake_build(tmp_path)
    spoil(tmp_path)
    assert _native.compiled_is_current(tmp_path) is False


def _select_in_child(root: Path, env_pure: bool) -> dict[str, object]:
    """Run `select` for each package of a stand-in build in a fresh interpreter, as each
    package's `__init__` does; report what got loaded."""
    script = textwrap.dedent(
        """
        import importlib, json, sys
        from pathlib import Path
        from gpuq import _native
        root = Path(sys.argv[1])
        sys.path.insert(0, str(root.parent))
        native, loaded, attrs = {}, {}, []
        for package, names in _native.NATIVE_MODULES.items():
            parent = importlib.import_module(f"{root.name}.{package}")
            native[package] = _native.select(package, root)
            for n in names:
                loaded[f"{package}/{n}"] = getattr(sys.modules.get(f"{root.name}.{package}.{n}"), "__file__", None)
                attrs.append(hasattr(parent, n))
        print(json.dumps({"native": native, "loaded": loaded, "attrs": attrs}))
        """
    )
    env = {"PATH": "/usr/bin:/bin"}
    if env_pure:
        env[_native.PURE_ENV] = "1"
    out = subprocess.run(  # noqa: S603 - fixed argument list
        [sys.executable, "-c", script, str(root)], capture_output=True, text=True, env=env, check=True
    )
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def _sources(root: Path) -> dict[str, str]:
    return {f"{p}/{n}": str(root / p / f"{n}.py") for p, n in MODULES}


def test_select_loads_every_module_from_source_when_the_build_is_stale(tmp_path: Path) -> None:
    root = tmp_path / "stalepkg"
    _fake_build(root)
    (root / "policy" / "cover.py").write_text("ORIGIN = 'source'\nORDER = 0\n# a fix made after compiling\n")
    got = _select_in_child(root, env_pure=False)
    assert got["native"] == dict.fromkeys(_native.NATIVE_MODULES, False)
    # all of them, in every package, not just the edited one: compiled modules call each other's
    # machine code directly
    assert got["loaded"] == _sources(root)
    assert got["attrs"] == [True] * len(MODULES)


def test_select_keeps_a_current_build_and_honours_the_pure_python_switch(tmp_path: Path) -> None:
    root = tmp_path / "freshpkg"
    _fake_build(root)
    kept = _select_in_child(root, env_pure=False)
    assert kept["native"] == dict.fromkeys(_native.NATIVE_MODULES, True)
    assert kept["loaded"] == dict.fromkeys(_sources(root))  # left to the import system
    forced = _select_in_child(root, env_pure=True)
    assert forced["native"] == dict.fromkeys(_native.NATIVE_MODULES, False)
    assert forced["loaded"] == _sources(root)


_RUN = """
import hashlib, json, sys
import gpuq.policy, gpuq.sim
import gpuq.policy.cover
from gpuq.policy.config import Mode, Policy
from gpuq.sim import ClusterSpec, Simulator, WorkloadStream
from gpuq.sim.state import dump
policy = Policy(delta=5.0, mode=Mode.REQUEUE, min_runtime_s=300.0, max_preemptions_per_day=3,
                default_checkpoint_interval_s=900.0, default_aging_rate=10.0)
sim = Simulator(policy=policy, stream=WorkloadStream(7, ClusterSpec(), load=1.3), start=0.0,
                max_pending=200, trace=True)
sim.check_fast_path = True
sim.run_until(2 * 86400.0)
state = json.dumps(dump(sim), sort_keys=True)
print(json.dumps({"native": gpuq.sim.NATIVE, "module": gpuq.sim.simulator.__file__,
                  "cover": [gpuq.policy.NATIVE, gpuq.policy.cover.__file__],
                  "events": sim.events_processed, "preemptions": sim.preemptions, "plans": sim.plans,
                  "trace": hashlib.sha256(repr(sim.trace).encode()).hexdigest(),
                  "state": hashlib.sha256(state.encode()).hexdigest()}))
"""


def test_the_installed_build_and_the_sources_simulate_identically() -> None:
    """Two simulated days with preemptions, protections, aging and the engine cross-check, once
    with whatever build is installed (compiled where setup.py could) and once from the sources."""

    def run(pure: bool) -> dict[str, object]:
        env = {"PATH": "/usr/bin:/bin", **({_native.PURE_ENV: "1"} if pure else {})}
        out = subprocess.run(  # noqa: S603 - fixed argument list
            [sys.executable, "-c", _RUN], capture_output=True, text=True, env=env, check=True
        )
        return json.loads(out.stdout)  # type: ignore[no-any-return]

    installed, source = run(pure=False), run(pure=True)
    assert source["native"] is False and str(source["module"]).endswith("simulator.py")
    assert installed["native"] == (not str(installed["module"]).endswith(".py"))
    # the search the simulator shares with the engine comes from where the simulator does
    assert source["cover"] == [False, str(Path(_native.__file__).parent / "policy" / "cover.py")]
    assert installed["cover"][0] == installed["native"]
    assert str(installed["cover"][1]).endswith(".py") != installed["native"]
    assert source["preemptions"] > 0  # the run exercised what matters
    for key in ("events", "preemptions", "plans", "trace", "state"):
        assert installed[key] == source[key], key
