"""The text read path (squeue --Format, scontrol -d -o, sinfo --Format, sacct -P) on real output,
cross-checked against the JSON of the same moment."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest

from gpuq.backends.slurm.config import parse_assoc_mgr_qos_names, parse_partitions, parse_qos, parse_show_config
from gpuq.backends.slurm.jobs import AdminNote, format_admin_comment, parse_admin_comment
from gpuq.backends.slurm.jsonread import load_json, parse_jobs_json
from gpuq.backends.slurm.merge import merge_history
from gpuq.backends.slurm.sacct import parse_sacct_parsable
from gpuq.backends.slurm.text import (
    apply_details,
    parse_scontrol_detail,
    parse_scontrol_jobs,
    parse_sinfo_nodes,
    parse_squeue_format,
)
from gpuq.backends.slurm.values import expand_hostlist, expand_indexes, text_moment, text_time
from gpuq.model import Job, JobState
from tests.slurm.samples import VERSIONS, live, read

_COMPARED = ("state", "gpus", "allocation", "qos", "partition", "account", "user", "priority", "exempt_until")


def _view(job: Job) -> tuple[object, ...]:
    return tuple(dict(v) if k == "allocation" else v for k, v in ((k, getattr(job, k)) for k in _COMPARED))


def _live_text_jobs() -> dict[str, Job]:
    details = parse_scontrol_detail(live("scontrol-show-job-d-o.txt"))
    return {j.id: j for j in parse_squeue_format(live("squeue-format.txt"), "qos", details).jobs}


def test_live_text_path_matches_json_of_the_same_moment() -> None:
    text = _live_text_jobs()
    data, _ = load_json(live("squeue.json"), "squeue --json")
    js = {j.id: j for j in parse_jobs_json(data, "qos").jobs}
    active = {i for i, j in js.items() if j.state is not JobState.CANCELLED}
    assert set(text) == active
    for jid in text:
        assert _view(text[jid]) == _view(js[jid]), jid


def test_live_text_path_details() -> None:
    jobs = _live_text_jobs()
    # Array tasks and het components get the ids operators type.
    assert {"65_0", "65_1", "65_2", "65_3", "66+0", "66+1"} <= set(jobs)
    assert dict(jobs["66+1"].allocation) == {"gpu2": (jobs["66+1"].allocation["gpu2"][0],)}
    # A name with the CLI's own separator character and a comment with spaces survive.
    big = jobs["64"]
    assert big.name == "train big|run"
    assert big.comment == "user note"
    assert big.exempt_until == datetime(2026, 11, 29, 23, 0, tzinfo=UTC)
    # Suspended jobs hold GPUs; pending ones hold none and have no start time.
    assert jobs["68"].state is JobState.SUSPENDED
    assert jobs["68"].gpus == 1
    assert jobs["68"].allocation
    assert jobs["69"].state is JobState.PENDING
    assert not jobs["69"].allocation
    assert jobs["69"].start_time is None
    assert jobs["73"].gpus == 3
    assert len(jobs["73"].allocation["gpu1"]) == 3
    # Every GPU index is held by at most one job.
    held = [(n, i) for j in jobs.values() if j.holds_gpus for n, idx in j.allocation.items() for i in idx]
    assert len(held) == len(set(held)) == 8


@pytest.mark.parametrize("version", VERSIONS)
def test_scontrol_text_matches_json(version: str) -> None:
    name = "scontrol-show-job-d-oneliner.txt" if version == "22.05" else "scontrol-show-job-d.txt"
    text = {j.id: j for j in parse_scontrol_jobs(read(version, name), "qos").jobs}
    data, _ = load_json(read(version, "squeue.json"), "squeue --json")
    js = {j.id: j for j in parse_jobs_json(data, "qos").jobs}
    assert set(text) == set(js)
    for jid in text:
        assert _view(text[jid]) == _view(js[jid]), jid
    if version == "22.05":  # the multi-line and one-line forms agree too
        multi = {j.id: _view(j) for j in parse_scontrol_jobs(read(version, "scontrol-show-job-d.txt"), "qos").jobs}
        assert multi == {i: _view(j) for i, j in text.items()}


def test_squeue_format_truncated_line_is_an_error() -> None:
    lines = live("squeue-format.txt").splitlines()
    broken = "\n".join([*lines[:2], lines[2][: len(lines[2]) // 3]])
    with pytest.raises(ValueError, match="line 3: .*truncated"):
        parse_squeue_format(broken, "qos")
    with pytest.raises(ValueError, match="unknown job state"):
        parse_squeue_format(lines[0].replace("PENDING", "WEIRD"), "qos")


def test_sinfo_format_nodes() -> None:
    nodes = parse_sinfo_nodes(live("sinfo-format.txt"))
    assert [(n.name, n.gpus, n.gpu_model, n.state.value) for n in nodes] == [
        ("gpu1", 4, "h100", "allocated"),
        ("gpu2", 4, "h100", "allocated"),
    ]
    drained = "\x1f".join(["gpu3", "drained", "gpu:a100:8", "gpu:a100:0(IDX:N/A)", ""])
    assert parse_sinfo_nodes(drained)[0].state.value == "drain"
    down = "\x1f".join(["gpu4", "down*", "gpu:8", "gpu:0", ""])
    assert parse_sinfo_nodes(down)[0].state.value == "down"
    idle = "\x1f".join(["gpu5", "idle", "gpu:8", "gpu:0(IDX:N/A)", ""])
    assert (parse_sinfo_nodes(idle)[0].state.value, parse_sinfo_nodes(idle)[0].gpus) == ("idle", 8)


def test_sacct_parsable_runs_and_merge() -> None:
    records = parse_sacct_parsable(live("sacct-parsable.txt"))
    by_id: dict[str, list[object]] = {}
    for r in records:
        by_id.setdefault(r.id, []).append(r)
    # -D keeps every run: job 8 was preempted, requeued, then cancelled while pending.
    assert [r.raw_state for r in by_id["8"]] == ["PREEMPTED", "CANCELLED by 0"]  # type: ignore[attr-defined]
    # A '|' inside JobName is folded back.
    assert {r.name for r in records if r.id == "64"} == {"train big|run"}
    jobs, events = merge_history(list(_live_text_jobs().values()), records, "qos")
    merged = {j.id: j for j in jobs}
    preempted = next(r for r in records if r.id == "64")
    # squeue reset job 64's submit time on requeue; sacct's original wins.
    assert merged["64"].submit_time.timestamp() == preempted.submit
    assert merged["64"].submit_time.timestamp() < text_time("2026-11-29T19:20:59")  # type: ignore[operator]
    assert [t.timestamp() for t in merged["64"].preemption_times] == [preempted.end]
    assert merged["65_1"].preemption_times  # an admin requeue counts too (REQUEUED)
    # Finished jobs come from sacct (for SLA percentiles); the ledger has one event per lost run.
    assert merged["8"].state is JobState.CANCELLED
    assert merged["8"].preemption_times
    assert merged["8"].submit_time.timestamp() == min(r.submit for r in by_id["8"])
    # Its SLA wait runs from the first eligibility to the first start; the run cancelled while
    # pending (Start=End, no allocation) is not a start.
    assert merged["8"].start_time == text_moment("2026-11-29T19:17:51")
    assert merged["8"].eligible_time == text_moment("2026-11-29T19:17:51")
    assert by_id["8"][1].start is None
    # A live job keeps squeue's EligibleTime: the start of its current wait.
    assert merged["64"].eligible_time == _live_text_jobs()["64"].eligible_time  # type: ignore[attr-defined]
    assert {e.victim for e in events} >= {"8", "9", "17", "18", "48", "64", "65_0", "65_1"}
    e48 = next(e for e in events if e.victim == "48")
    assert e48.gpus == 2
    assert e48.gpu_seconds_lost == 2 * 7.0


def test_config_parsers() -> None:
    qos = parse_qos(live("sacctmgr-show-qos.txt"))
    assert qos["urgent"].preempt == {"low", "lowgrace", "normal"}
    assert qos["lowgrace"].exempt_time_s == 600.0
    assert qos["low"].exempt_time_s is None
    assert qos["urgent"].priority == 1000
    assert qos["normal"].preempt_mode == "REQUEUE"
    parts = parse_partitions(live("scontrol-show-partition-o.txt"))
    assert parts["gpu"].default
    assert parts["gpu"].nodes == ("gpu1", "gpu2")
    assert parts["gpu"].priority_tier == 1
    show = parse_show_config(live("scontrol-show-config.txt"))
    assert (show["PreemptType"], show["PreemptMode"], show["ClusterName"]) == ("preempt/qos", "REQUEUE", "gpuqlab")
    # The shared sample has the default column order Name|Priority|GraceTime|Preempt|PreemptExemptTime|PreemptMode.
    rows = [line.split("|") for line in read("22.05", "sacctmgr-show-qos.txt").splitlines()[1:]]
    sample = parse_qos("\n".join("|".join([r[0], r[1], r[3], r[4], r[5], r[2]]) for r in rows))
    assert sample["urgent"].preempt == {"low", "lowgrace", "normal"}


def test_assoc_mgr_qos_names() -> None:
    # Captured on the lab (qos mode) at the same moment as the two sacct files below.
    names = parse_assoc_mgr_qos_names(live("scontrol-show-assoc_mgr-qos.txt"))
    assert names == {"1": "normal", "2": "low", "3": "lowgrace", "4": "exempt", "5": "urgent"}
    assert set(names.values()) == set(parse_qos(live("sacctmgr-show-qos.txt")))
    assert parse_assoc_mgr_qos_names(live("scontrol-show-assoc_mgr-qos-partition-mode.txt")) == names
    # Its QOS records say nothing of who preempts whom: that stays sacctmgr's (see the README).
    assert "Preempt=" not in live("scontrol-show-assoc_mgr-qos.txt")
    assert "PreemptExemptTime" not in live("scontrol-show-assoc_mgr-qos.txt")
    assert parse_assoc_mgr_qos_names("Current Association Manager state\n\nNo QOS currently cached in Slurm.\n") == {}
    # The one-line form (-o) puts the record's other keys on the same line.
    one_line = "QOS=normal(1) UsageRaw=1174.848345 GrpJobs=N(0) PreemptMode=REQUEUE Priority=100"
    assert parse_assoc_mgr_qos_names(one_line) == {"1": "normal"}
    with pytest.raises(ValueError, match="unexpected QOS record head"):
        parse_assoc_mgr_qos_names("QOS=broken")


def test_sacct_qos_ids_map_to_the_names_sacct_prints() -> None:
    # Same window, same moment: -o ...,QOSRAW,... and -o ...,QOS,... (commands.txt).
    names = parse_assoc_mgr_qos_names(live("scontrol-show-assoc_mgr-qos.txt"))
    by_id = parse_sacct_parsable(live("sacct-parsable-qosraw.txt"), names)
    by_name = parse_sacct_parsable(live("sacct-parsable-qosnames.txt"))
    assert by_id == by_name
    assert {r.qos for r in by_id} == {"normal", "low", "lowgrace", "urgent"}
    assert any(r.preempted for r in by_id) and len(by_id) > 100
    # A QOS slurmctld no longer knows (deleted) is reported, and left unnamed.
    unknown: set[str] = set()
    partial = parse_sacct_parsable(
        live("sacct-parsable-qosraw.txt"), {k: v for k, v in names.items() if k != "5"}, unknown
    )
    assert unknown == {"5"}
    assert {r.id for r in partial if r.qos is None} == {r.id for r in by_name if r.qos == "urgent"}


def test_details_read_beside_squeue_only_fill_the_same_run() -> None:
    details = parse_scontrol_detail(live("scontrol-show-job-d-o.txt"), starts=True)
    assert all(d.start is None for d in parse_scontrol_detail(live("scontrol-show-job-d-o.txt")).values())
    after = apply_details(parse_squeue_format(live("squeue-format.txt"), "qos"), dict(details))
    beside = apply_details(parse_squeue_format(live("squeue-format.txt"), "qos"), dict(details), same_run=True)
    assert beside.jobs == after.jobs and not beside.needs_detail
    assert any(j.allocation and None not in next(iter(j.allocation.values())) for j in beside.jobs)
    # A job requeued and started again between the two reads: its old run's indexes are not used.
    holder = next(j for j in after.jobs if j.allocation and j.start_time is not None)
    raw = after.raw_ids[holder.id]
    restarted = dict(details)
    restarted[raw] = dataclasses.replace(details[raw], start=holder.start_time.timestamp() + 30)
    stale = apply_details(parse_squeue_format(live("squeue-format.txt"), "qos"), restarted, same_run=True)
    assert stale.needs_detail == [raw]
    (again,) = [j for j in stale.jobs if j.id == holder.id]
    assert None in next(iter(again.allocation.values()))  # placeholder indexes, left for a re-read


def test_admin_comment_round_trip() -> None:
    note = parse_admin_comment("site said hi;gpuq:exempt-until=2026-11-29T23:00:00Z;gpuq:prev-qos=low")
    assert note == AdminNote(datetime(2026, 11, 29, 23, tzinfo=UTC).timestamp(), "low", "site said hi")
    assert parse_admin_comment(format_admin_comment(note)) == note
    cleared = format_admin_comment(AdminNote(None, None, note.other))
    assert cleared == "site said hi"
    assert parse_admin_comment(cleared).exempt_until is None
    assert parse_admin_comment("gpuq:exempt-until=garbage").exempt_until is None


def test_hostlists_and_indexes() -> None:
    assert expand_hostlist("gpu[1-3,7],login1") == ("gpu1", "gpu2", "gpu3", "gpu7", "login1")
    assert expand_hostlist("node[001-003]") == ("node001", "node002", "node003")
    assert expand_hostlist("") == ()
    assert expand_indexes("0-2,5") == (0, 1, 2, 5)


def test_extended_squeue_format_carries_admin_comment_and_restarts() -> None:
    text = live("squeue-format-extended.txt")
    read = parse_squeue_format(text, "qos")
    jobs = {j.id: j for j in read.jobs}
    assert read.restarts == {"9680_1": 1}
    assert jobs["9681"].exempt_until == datetime(2026, 11, 30, 1, tzinfo=UTC)
    assert jobs["9679"].name == "big|one"
    assert jobs["9679"].comment == "a note"
    # Without the detail read the GPU-holding jobs have placeholders and are listed for it.
    assert sorted(read.needs_detail) == ["9679", "9680", "9682"]
    assert dict(jobs["9679"].allocation) == {"gpu1": (None, None)}
    details = parse_scontrol_detail(live("scontrol-show-job-d-o-extended.txt"))
    filled = {j.id: j for j in apply_details(read, details).jobs}
    one_pass = {j.id: j for j in parse_squeue_format(text, "qos", details).jobs}
    assert filled == one_pass
    assert not read.needs_detail
    held = [i for j in filled.values() for idx in j.allocation.values() for i in idx]
    assert None not in held
    assert len(held) == 4
