"""Issue 9, items 3 and 4: every number from outside is checked, and impossible clusters are
caught. Each refusal is a `BadInput` whose message names the place (the file and the JSON path,
or the file, the line and the key) — never a traceback, never a silently accepted value."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gpuq.config import load_config, load_policy_file
from gpuq.errors import BadInput
from gpuq.model.codec import decode_snapshot, encode_snapshot
from gpuq.timefmt import parse_duration, parse_time

SMALL = Path(__file__).resolve().parents[1] / "fixtures" / "snapshots" / "small.json"


def small() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(SMALL.read_text())
    return data


def job(d: dict[str, Any], job_id: str) -> dict[str, Any]:
    return next(j for j in d["jobs"] if j["id"] == job_id)


def refused(text: str | bytes) -> str:
    with pytest.raises(BadInput) as err:
        decode_snapshot(text, "snap.json")
    message = str(err.value)
    assert "\n" not in message and message.startswith("snap.json: ")
    return message


# ---------------------------------------------------------------------------- snapshots: numbers


def _text_with(path: str, literal: str) -> str:
    """small.json with the value at `path` (``jobs.0.priority``) replaced by a JSON literal."""
    d = small()
    *parents, last = path.split(".")
    node: Any = d
    for step in parents:
        node = node[int(step)] if step.isdigit() else node[step]
    node[int(last) if last.isdigit() else last] = "@@"
    return json.dumps(d).replace('"@@"', literal)


@pytest.mark.parametrize(
    ("path", "literal", "message"),
    [
        ("classes.0.target_p95_s", "NaN", "not valid JSON (line 1, column"),
        ("classes.0.target_p95_s", "Infinity", "not valid JSON (line 1, column"),
        ("classes.0.target_p95_s", "-Infinity", "not valid JSON (line 1, column"),
        ("classes.0.target_p95_s", "1e400", "classes[0].target_p95_s: number out of range"),
        ("classes.0.target_p95_s", "1e308", "classes[0].target_p95_s: must be <= 253402300799"),
        ("jobs.0.priority", "9" * 4400, "jobs[0].priority: number out of range"),
        ("jobs.0.priority", "9" * 30, "jobs[0].priority: must be <= 9007199254740992"),
        ("classes.1.priority", "-" + "9" * 20, "classes[1].priority: must be >= -9007199254740992"),
        ("nodes.0.gpus", "99999999999", "nodes[0].gpus: must be <= 1024"),
        ("jobs.3.gpus", "200000000", "jobs[3].gpus: must be <= 102400000"),
        ("jobs.0.allocation.gpu-01.3", "99999999", "jobs[0].allocation.gpu-01[3]: must be <= 1023"),
        ("jobs.0.checkpoint_interval_s", "1e300", "jobs[0].checkpoint_interval_s: must be <= 253402300799"),
        ("jobs.0.name", '"\\ud800"', "not valid JSON (line 1, column"),
        ("jobs.0.user", '"x\\udc00"', "not valid JSON (line 1, column"),
        ("jobs.0.id", '""', "jobs[0].id: expected `str` of length >= 1"),
        ("jobs.0.id", json.dumps("1" * 600), "jobs[0].id: expected `str` of length <= 512"),
    ],
)
def test_numbers_and_text_past_what_can_exist_are_refused_naming_the_path(
    path: str, literal: str, message: str
) -> None:
    assert message in refused(_text_with(path, literal))


def test_nesting_past_the_decoders_limit_names_the_line_and_column() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    message = refused(json.dumps(small()).replace('"classes": [', f'"x": {deep}, "classes": [', 1))
    assert "not valid JSON (line 1, column" in message and "nested deeper than 64 levels" in message


@pytest.mark.parametrize(
    ("path", "time", "where"),
    [
        ("taken_at", "9999-12-31T23:59:59-14:00", "taken_at"),  # year 10000 in UTC
        ("taken_at", "0001-01-01T00:00:00+14:00", "taken_at"),  # year 0 in UTC
        ("jobs.1.submit_time", "1969-12-31T23:59:59Z", "jobs[1].submit_time"),
        ("jobs.0.last_checkpoint_time", "1970-01-01T00:30:00+01:00", "jobs[0].last_checkpoint_time"),
        ("jobs.2.exempt_until", "9999-12-31T20:00:00-05:00", "jobs[2].exempt_until"),
        ("jobs.1.preemption_times.0", "1900-01-01T00:00:00Z", "jobs[1].preemption_times[0]"),
        ("preemption_events.0.time", "9999-12-31T23:59:59-00:01", "preemption_events[0].time"),
    ],
)
def test_times_outside_1970_to_9999_are_refused_at_load(path: str, time: str, where: str) -> None:
    message = refused(_text_with(path, json.dumps(time)))
    assert f"snap.json: {where}: outside 1970-01-01T00:00:00Z .. 9999-12-31T23:59:59Z" == message


def test_the_edges_of_the_time_range_load_and_are_written_back_as_read() -> None:
    text = _text_with("jobs.2.exempt_until", '"9999-12-31T23:59:59Z"')
    text = text.replace('"2026-11-29T09:00:00Z"', '"1970-01-01T00:00:00Z"', 1)
    snap = decode_snapshot(text, "snap.json")
    assert decode_snapshot(encode_snapshot(snap)) == snap


# ---------------------------------------------------------------------------- snapshots: placement


Mutation = Callable[[dict[str, Any]], None]


def _set(job_id: str, **fields: Any) -> Mutation:
    return lambda d: job(d, job_id).update(fields)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (
            _set("101", allocation={"gpu-99": [0, 1, 2, 3]}),
            "jobs[0].allocation.gpu-99: job 101 holds GPUs on gpu-99, a node the snapshot does not have",
        ),
        (
            _set("102", allocation={"gpu-02": [0, 4]}),
            "jobs[1].allocation.gpu-02: job 102 holds GPU 4 on gpu-02, which has 4 (0-3)",
        ),
        (
            _set("102", allocation={"gpu-01": [0, 1]}),
            "jobs[1].allocation.gpu-01: GPUs 0,1 on gpu-01 are held by job 101 (running) and by job 102 (running)",
        ),
        (_set("102", allocation={"gpu-02": [1, 1]}), "jobs[1].allocation.gpu-02: job 102 lists GPU 1 on gpu-02 twice"),
        (_set("201", allocation={"gpu-03": [0, 1]}), "jobs[4].allocation: job 201 is pending but holds GPUs on gpu-03"),
        (_set("101", gpus=8), "jobs[0].gpus: job 101 has gpus 8 but its allocation holds 4"),
        (_set("103", allocation={}), "jobs[2].allocation: job 103 is running with gpus 1 but holds none"),
        (
            lambda d: (
                [job(d, i).update(allocation={"gpu-01": [None, None, None]}) for i in ("101", "102")]
                and [job(d, i).update(gpus=3) for i in ("101", "102")]
            ),
            "nodes[0].gpus: 6 GPUs allocated on gpu-01, which has 4 (jobs 101, 102)",
        ),
    ],
)
def test_impossible_placements_are_refused_naming_the_job_and_the_node(mutate: Mutation, message: str) -> None:
    d = small()
    mutate(d)
    assert refused(json.dumps(d)) == f"snap.json: {message}"


def test_a_marked_conflict_loads_and_is_left_out_of_previews() -> None:
    """A live backend's snapshot marks a placement Slurm shows for a moment (`Job.conflict`);
    written to a file, it loads again, and the marked jobs are never preview victims."""
    import dataclasses

    from msgspec.structs import replace

    from gpuq.model import JobState, PreviewRequest
    from gpuq.model.placement import mark_conflicts, placement_conflicts
    from gpuq.policy.config import DEFAULT_POLICY
    from gpuq.policy.engine import plan_preemption

    d = small()
    job(d, "102").update(state="completing", allocation={"gpu-01": [0, 1]})  # not yet gone
    assert "GPUs 0,1 on gpu-01 are held by job 101 (running) and by job 102 (completing)" in refused(json.dumps(d))

    sound = decode_snapshot(SMALL.read_bytes())
    jobs = tuple(
        replace(j, state=JobState.COMPLETING, allocation={"gpu-01": (0, 1)}) if j.id == "102" else j for j in sound.jobs
    )
    live = mark_conflicts(dataclasses.replace(sound, jobs=jobs))  # what a live backend hands on
    marked = {j.id: j.conflict for j in live.jobs if j.conflict}
    assert set(marked) == {"101", "102"} and "held by job 101 (running) and by job 102 (completing)" in (
        marked["101"] or ""
    )
    again = decode_snapshot(encode_snapshot(live), "written.json")  # the marks travel with the file
    assert {j.id for j in again.jobs if j.conflict} == {"101", "102"} and placement_conflicts(again)
    assert all(j.id != "101" for on in again.running_on().values() for j in on)
    assert all(j.id != "101" for on in sound.running_on().values() for j in on) is False
    request = PreviewRequest(gpus=4, priority=10**6)
    assert [v.job_id for v in plan_preemption(sound, DEFAULT_POLICY, request, sound.now).victims] == ["101"]
    plan = plan_preemption(again, DEFAULT_POLICY, request, again.now)  # 101 frees nothing while 102 holds on
    assert plan.victims == () and plan.freed_gpus == 0 and plan.blocked
    assert mark_conflicts(sound) is sound  # nothing to mark: the same snapshot


def test_placement_check_passes_every_sound_fixture() -> None:
    from gpuq.model.placement import placement_conflicts

    for name in ("small.json", "unindexed.json"):
        snap = decode_snapshot((SMALL.parent / name).read_bytes(), name)
        assert placement_conflicts(snap) == ()


# ---------------------------------------------------------------------------- policy and config TOML


def _policy(tmp_path: Path, text: str) -> str:
    path = tmp_path / "policy.toml"
    path.write_text(text)
    with pytest.raises(BadInput) as err:
        load_policy_file(path)
    message = str(err.value)
    assert "\n" not in message
    return message.replace(str(path), "policy.toml")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "[preemption]\nurgent_priority = 0.5\n",
            "policy.toml:2: preemption.urgent_priority: expected a whole number from 1 to 2^53, got 0.5",
        ),
        (
            "[preemption]\nurgent_priority = 0\n",
            "policy.toml:2: preemption.urgent_priority: must be a whole number from 1 to 2^53, got 0",
        ),
        (
            '[preemption]\nmode = "requeue"\nmin_runtime = inf\n',
            "policy.toml:3: preemption.min_runtime: inf is too long: at most 3650d00h",
        ),
        (
            '[classes.batch]\nmax_wait = "1h"\ntarget_p95 = nan\n',
            "policy.toml:3: classes.batch.target_p95: not a duration: nan",
        ),
        ("[preemption]\ndelta = inf\n", "policy.toml:2: preemption.delta: must be a number from 0 to 2^53, got inf"),
        ("[preemption]\ndelta = -inf\n", "policy.toml:2: preemption.delta: must be a number from 0 to 2^53, got -inf"),
        ("[preemption]\ndelta = nan\n", "policy.toml:2: preemption.delta: must be a number from 0 to 2^53, got nan"),
        ("[preemption]\ndelta = 1e400\n", "policy.toml:2: preemption.delta: must be a number from 0 to 2^53, got inf"),
        (
            "[preemption]\ndelta = 0x" + "f" * 4000 + "\n",
            "policy.toml:2: preemption.delta: must be a number from 0 to 2^53, got an integer of about 4816 digits",
        ),
        (
            "[preemption]\ndelta = " + "9" * 4400 + "\n",
            "policy.toml:2: preemption.delta: invalid TOML: an integer of more than 4300 digits",
        ),
        (
            "[preemption]\ngrace_period = 0x" + "f" * 400 + "\n",
            "policy.toml:2: preemption.grace_period: about 2^1600 is too long: at most 3650d00h",
        ),
        (
            '[preemption]\ngrace_period = "99999999h"\n',
            "policy.toml:2: preemption.grace_period: 99999999h is too long: at most 3650d00h",
        ),
        (
            "[preemption]\nmax_preemptions_per_day = 1e300\n",
            "policy.toml:2: preemption.max_preemptions_per_day: expected a whole number from 0 to 1,000,000, "
            "got 1e+300",
        ),
        (
            "[victim_cost]\nlost_work_weight = 1e300\n",
            "policy.toml:2: victim_cost.lost_work_weight: must be a number from 0 to 1,000,000,000, got 1e+300",
        ),
        ("[aging]\ndefault_rate = nan\n", "policy.toml:2: aging.default_rate: must be a number from 0 to 2^53"),
        ("[classes.batch]\naging_rate = inf\n", "policy.toml:2: classes.batch.aging_rate: must be a number from 0"),
        (
            "[urgent_quota]\nnlp = 1.5\n",
            "policy.toml:2: urgent_quota.nlp: expected a whole number from 0 to 100,000,000, got 1.5",
        ),
        ("[urgent_quota]\ndelta = -1\n", "policy.toml:2: urgent_quota.delta: must be a whole number from 0 to 100"),
        ("[preemption]\nmode = []\n", "policy.toml:2: preemption.mode: [] is not one of cancel, requeue"),
        (
            "[preemption]\ndelta = " + "[" * 3000 + "]" * 3000 + "\n",
            "policy.toml:2: preemption.delta: invalid TOML: nested deeper than 32 levels",
        ),
        ('[preemption]\nmode = "\\ud800"\n', "policy.toml:2: preemption.mode: invalid TOML"),
    ],
)
def test_policy_numbers_are_refused_with_the_allowed_range(tmp_path: Path, text: str, message: str) -> None:
    assert _policy(tmp_path, text).startswith(message)


def test_policy_numbers_in_range_still_load(tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text(
        '[preemption]\nurgent_priority = 9007199254740992\ndelta = 2.5\nmin_runtime = "3650d"\n'
        "max_preemptions_per_day = 1000000\n[urgent_quota]\ndefault = 8\n"
    )
    policy = load_policy_file(path).policy
    assert policy.urgent_priority == 2**53 and policy.delta == 2.5 and policy.min_runtime_s == 3650 * 86400
    assert policy.max_preemptions_per_day == 1_000_000 and policy.urgent_quota_default == 8


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "[backends.demo]\nspeed = inf\n",
            "config.toml:2: backends.demo.speed: expected a finite number, got inf (allowed: > 0 and <= 3600)",
        ),
        ("[backends.demo]\nspeed = 1e300\n", "config.toml:2: backends.demo.speed: must be > 0 and <= 3600"),
        (
            "[backends.demo]\nspeed = 99999999999999999999999\n",
            "config.toml:2: backends.demo.speed: must be > 0 and <= 3600",
        ),
        (
            "[backends.demo]\nseed = 0x" + "f" * 100 + "\n",
            "config.toml:2: backends.demo.seed: must be >= 0 and <= 9223372036854775807",
        ),
        ("[backends.slurm]\ntimeout_s = 1e300\n", "config.toml:2: backends.slurm.timeout_s: must be > 0 and <= 3600"),
        (
            "[backends.slurm]\nhistory_s = 1e12\n",
            "config.toml:2: backends.slurm.history_s: must be >= 0 and <= 315360000",
        ),
        (
            '[clusters.prod]\nbackend = "demo"\nspeed = nan\n',
            "config.toml:3: clusters.prod.speed: expected a finite number, got nan",
        ),
    ],
)
def test_backend_options_are_refused_with_the_allowed_range(tmp_path: Path, text: str, message: str) -> None:
    from gpuq.backends.registry import BackendOption, create_backend

    path = tmp_path / "config.toml"
    path.write_text(text)
    config = load_config(path)
    section, name = (
        ("backends", text.split(".", 1)[1].split("]")[0]) if text.startswith("[backends") else ("clusters", "prod")
    )
    table = config.backend_options[name] if section == "backends" else config.clusters[name].options
    backend = name if section == "backends" else "demo"
    ((key, value),) = ((k, v) for k, v in table.items() if k != "backend")
    dotted = f"{section}.{name}.{key}"
    option = BackendOption(value, f"{config.where(dotted)}: {dotted}")
    with pytest.raises(BadInput) as err:
        create_backend(backend, {key: option})
    assert str(err.value).replace(str(path), "config.toml").startswith(message)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('backend = "demo"\ncolor = ' + "9" * 5000 + "\n", "config.toml:2: color: invalid TOML: an integer of more"),
        ("backend = " + "{a=" * 2000 + "1" + "}" * 2000 + "\n", "config.toml:1: backend: invalid TOML: nested deeper"),
        ('output = "\\udc00"\n', "config.toml:1: output: invalid TOML"),
    ],
)
def test_config_files_past_the_toml_parser_name_the_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(text)
    with pytest.raises(BadInput) as err:
        load_config(path)
    assert str(err.value).replace(str(path), "config.toml").startswith(message)


# ---------------------------------------------------------------------------- durations and times


@pytest.mark.parametrize(
    ("value", "maximum", "message"),
    [
        ("99999999h", 366 * 86400.0, "99999999h is too long: at most 366d00h"),
        ("9" * 400 + "s", 3650 * 86400.0, "… (401 characters) is too long: at most 3650d00h"),
        (float("inf"), 86400.0, "inf is too long: at most 24h00m"),
        (float("nan"), 86400.0, "not a duration: nan"),
        (10**400, 86400.0, "about 2^1329 is too long: at most 24h00m"),
        ("1e400s", 86400.0, "not a duration: '1e400s'"),
    ],
)
def test_durations_are_bounded_before_any_arithmetic(value: object, maximum: float, message: str) -> None:
    with pytest.raises(ValueError) as err:
        parse_duration(value, maximum=maximum)
    assert message in str(err.value)


def test_the_longest_duration_is_the_span_of_gpuq_times() -> None:
    from gpuq.model import MAX_DURATION_S
    from gpuq.timefmt import LONGEST_S

    assert LONGEST_S == MAX_DURATION_S == parse_time("9999-12-31T23:59:59Z")
    assert parse_duration("2932896d") == 2932896 * 86400.0


@pytest.mark.parametrize("text", ["9999-12-31T23:59:59-14:00", "1969-12-31T23:59:59Z", "0001-01-01T00:00:00+00:00"])
def test_parse_time_refuses_instants_outside_1970_to_9999(text: str) -> None:
    with pytest.raises(ValueError, match="outside 1970-01-01T00:00:00Z .. 9999-12-31T23:59:59Z"):
        parse_time(text)


def test_a_demo_state_saved_with_a_speed_past_the_bound_is_reported(tmp_path: Path) -> None:
    """A state file from before the bound (or edited) with ``speed`` 1e300 would jump the
    simulated clock two days at every call: it is reported, not run."""
    from gpuq.backends.demo import DemoBackend

    backend = DemoBackend(state_dir=tmp_path, seed=3, clock=lambda: 1_800_000_000.0)
    backend.snapshot()
    state = json.loads(backend.state_path.read_text())
    state["speed"] = 1e300
    backend.state_path.write_text(json.dumps(state))
    with pytest.raises(BadInput) as err:
        DemoBackend(state_dir=tmp_path, clock=lambda: 1_800_000_060.0).snapshot()
    assert str(err.value).startswith(f"{backend.state_path}: cannot use the demo cluster's saved state")
    assert "speed 1e+300 is not > 0 and <= 3600" in str(err.value)
