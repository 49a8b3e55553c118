"""The preemption ledger's console additions (`gpuq.views.preemptions`): where each job stands
against the daily cap, the jobs near it, totals per tenant and class, one job's history."""

from __future__ import annotations

from datetime import datetime

from gpuq.config import PolicySource
from gpuq.model import DAY_S, JobState, PreemptionEvent, Snapshot
from gpuq.policy.config import Policy
from gpuq.service import Cluster
from gpuq.views.ledgercells import event_cells, event_tones, job_cells, job_tones, totals_line
from gpuq.views.preemptions import cap_state, job_preemptions, ledger_thrash, ledger_totals, ledger_view, near_cap
from tests.factories import at, make_job, make_snapshot
from tests.tui.backends import FlakyBackend
from tests.tui.conftest import SMALL

NOW = 1_800_000_000.0
H = 3600.0


def _snap() -> Snapshot:
    jobs = [
        # two preemptions in 24 h: one away from a cap of 3
        make_job("a", tenant="nlp", job_class="low", state=JobState.RUNNING, start_time=NOW - H,
                 preemption_times=[NOW - 2 * H, NOW - 5 * H]),
        # three: capped
        make_job("b", tenant="nlp", job_class="normal", state=JobState.PENDING,
                 preemption_times=[NOW - H, NOW - 2 * H, NOW - 3 * H]),
        # one in 24 h, three older: not near
        make_job("c", tenant="cv", job_class="low", state=JobState.RUNNING, start_time=NOW - H,
                 preemption_times=[NOW - H, NOW - DAY_S - 1, NOW - DAY_S - 2, NOW - 2 * DAY_S]),
        # capped but finished: the cap no longer matters to it
        make_job("d", tenant="cv", job_class="low", state=JobState.COMPLETED,
                 preemption_times=[NOW - H, NOW - 2 * H, NOW - 3 * H]),
        make_job("e", tenant="cv", state=JobState.RUNNING, start_time=NOW - H),
    ]  # fmt: skip
    events = [
        PreemptionEvent(at(NOW - H), "b", "e", 2, 7200.0, "requeue", "for e"),
        PreemptionEvent(at(NOW - 2 * H), "a", None, 1, 1800.0, "", ""),
        PreemptionEvent(at(NOW - 3 * H), "b", "e", 2, 3600.0, "requeue", "for e again"),
    ]
    return make_snapshot("lab", "demo", NOW, jobs=jobs, events=events)


def _cluster(cap: int) -> Cluster:
    return Cluster(FlakyBackend(SMALL), "flaky", PolicySource(Policy(max_preemptions_per_day=cap), "test"))


def test_cap_state_counts_the_last_24_hours_against_the_cap() -> None:
    s = _snap()
    a, b, c, d, e = s.jobs
    assert (cap_state(a, 3, NOW).left, cap_state(a, 3, NOW).near) == (1, True)
    assert cap_state(b, 3, NOW).capped and cap_state(b, 3, NOW).near
    assert (cap_state(c, 3, NOW).last_24h, cap_state(c, 3, NOW).left, cap_state(c, 3, NOW).near) == (1, 2, False)
    assert (cap_state(d, 3, NOW).left, cap_state(d, 3, NOW).near) == (None, False)  # left the queue
    assert (cap_state(e, 3, NOW).left, cap_state(e, 3, NOW).near) == (3, False)
    assert cap_state(b, 0, NOW).left is None and not cap_state(b, 0, NOW).near  # no cap
    assert cap_state(c, 3, NOW, within=2).near  # one in 24 h, two away


def test_near_cap_lists_queued_jobs_capped_first() -> None:
    s = _snap()
    assert [(j.id, st.left) for j, st in near_cap(_cluster(3), s)] == [("b", 0), ("a", 1)]
    assert [j.id for j, _ in near_cap(_cluster(4), s)] == ["b"]  # b has 3 of 4: one away
    assert near_cap(_cluster(0), s) == []


def test_totals_per_tenant_and_class() -> None:
    totals = ledger_totals(ledger_view(_snap()).jobs)
    assert [(t.name, t.last_24h, t.total, t.jobs) for t in totals.tenants] == [("nlp", 5, 5, 2), ("cv", 4, 7, 2)]
    assert [(t.name, t.last_24h, t.total) for t in totals.classes] == [("low", 6, 9), ("normal", 3, 3)]
    tenants, classes = totals_line(totals.tenants, totals.classes, room=1)
    assert tenants == "tenants (24h/total): nlp 5/5 · +1 more"
    assert classes == "classes (24h/total): low 6/9 · +1 more"


def test_one_jobs_history_as_victim_and_as_preemptor() -> None:
    s = _snap()
    victim, _ = job_preemptions(s, "b")
    # newest first; the time at -2 h has no event: its preemptor is unknown
    assert [(e.time, e.preemptor) for e in victim] == [(at(NOW - H), "e"), (at(NOW - 2 * H), None),
                                                       (at(NOW - 3 * H), "e")]  # fmt: skip
    _, caused = job_preemptions(s, "e")
    assert [e.victim for e in caused] == ["b", "b"]
    victim, _ = job_preemptions(s, "c")  # times without events: when is known, by whom and the loss not
    assert [(e.time, e.preemptor, e.gpu_seconds_lost) for e in victim[:2]] == [
        (at(NOW - H), None, None),
        (at(NOW - DAY_S - 1), None, None),
    ]
    assert len(victim) == 4 and job_preemptions(s, "e")[0] == []
    victim, _ = job_preemptions(s, "a")  # one event, one time without: both, once each
    assert [(e.time, e.preemptor is None, e.gpu_seconds_lost) for e in victim] == [
        (at(NOW - 2 * H), True, 1800.0),
        (at(NOW - 5 * H), True, None),
    ]


def test_cells_and_tones_of_the_ledger() -> None:
    s = _snap()
    rows = {r.job.id: r for r in ledger_view(s).jobs}
    a, b, d = rows["a"], rows["b"], rows["d"]
    assert job_cells(b, cap_state(b.job, 3, NOW), "lab")[:9] == ("lab", "b", "u", "nlp", "normal", "pending", "3",
                                                                 "3", "0")  # fmt: skip
    assert job_tones(b, cap_state(b.job, 3, NOW))[1] == "breach"
    assert job_tones(a, cap_state(a.job, 3, NOW))[1] == "risk"
    finished = cap_state(d.job, 3, NOW)
    assert job_cells(d, finished)[8] == "-" and set(job_tones(d, finished)[1:]) == {"muted"}
    unknown = ledger_view(s).events[1]
    cells = event_cells(unknown, NOW)
    assert cells[1:] == ("2027-01-15T06:00:00Z", "2h00m ago", "a", "-", "1", "0.50", "-", "")
    assert datetime.fromisoformat(cells[1].replace("Z", "+00:00")).timestamp() == NOW - 2 * H
    assert event_tones(True)[1:4] == ("new", "new", "new") and set(event_tones(False)) == {None}


def test_the_ledger_s_thrash_guard_against_the_cluster_s_policy() -> None:
    # the ledger records b preempted by e twice, two hours apart (and a once)
    s = _snap()
    assert not ledger_thrash(_cluster(3), s).flagged
    tight = ledger_thrash(_cluster(1), s)  # a cap of 1: b's two events in 2 hours are over it
    assert tight.flagged and tight.over_cap == 1 and [j.job for j in tight.jobs] == ["b"]
    assert tight.lost_share is None  # a ledger does not know the work done
    churn = make_snapshot("lab", "demo", NOW, jobs=list(s.jobs), events=[
        PreemptionEvent(at(NOW - k * 600.0), "a" if k % 2 else "e", "e" if k % 2 else "a", 1, 0.0, "requeue", "")
        for k in range(1, 7)
    ])  # fmt: skip
    turns = ledger_thrash(_cluster(0), churn)  # no cap of its own: judged against the defaults' 3 a day
    assert turns.limits.per_day == 3 and turns.pairs_taking_turns == 1 and turns.too_soon == 2
    assert "pair(s) taking turns (a/e 6×)" in turns.summary()
